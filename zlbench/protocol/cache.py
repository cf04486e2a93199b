"""The shared triton cache of a batch: when its precompile is done, and how many
compiled kernels a triton cache dir holds.

``zlbench batch --precompile-jobs N`` compiles the replay root's recorded kernels
into one triton cache dir while the benchmark processes start (docs/screening.md,
"Precompile"). The runner names a marker file in ``$ZLBENCH_SHARED_CACHE_READY``
and writes it when the precompile has ended (done or failed); each benchmark
process, once started and collected, waits for it before its first op
(:func:`wait_ready`), so every kernel the precompile could build is a cache hit,
and the processes' start-up (~20 s on the H200) still overlaps the compiling.

Stdlib only: imported by the plugins, named by the runner.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

SHARED_CACHE_READY_VAR = "ZLBENCH_SHARED_CACHE_READY"
READY_MARKER = ".zlbench-precompiled"  # in the shared cache dir
# the precompile's timeout per worker; the whole precompile may take longer (its
# workers are collected one after the other), then the process compiles for itself
READY_TIMEOUT_S = 1800.0


def cached_kernels(cache: str | os.PathLike) -> int:
    """How many compiled kernels the triton cache dir ``cache`` holds (triton's file
    cache: one ``<key>/__grp__<name>.json`` group per compiled kernel)."""
    return sum(1 for _ in Path(cache).glob("*/__grp__*"))


def wait_ready(path: str | None, timeout_s: float = READY_TIMEOUT_S, poll_s: float = 0.05) -> float:
    """Wait until the file ``path`` exists (None: no wait) or ``timeout_s`` passed;
    the seconds waited. A precompile that never ends only costs the timeout: the
    process then compiles what it launches, as without precompile."""
    if not path:
        return 0.0
    t0, marker = time.monotonic(), Path(path)
    while not marker.exists() and time.monotonic() - t0 < timeout_s:
        if not marker.parent.is_dir():  # the batch is gone and took its cache along
            break
        time.sleep(poll_s)
    return time.monotonic() - t0


def ready_path_from_env() -> str | None:
    return os.environ.get(SHARED_CACHE_READY_VAR) or None


__all__ = [
    "READY_MARKER",
    "READY_TIMEOUT_S",
    "SHARED_CACHE_READY_VAR",
    "ready_path_from_env",
    "wait_ready",
]
