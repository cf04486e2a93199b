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
from collections.abc import Collection, Iterable
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


# ``gate --kernel-cache DIR``: a triton cache dir per compiler that outlives the gate
# (docs/replay.md, "The kernel cache"): the screen's, the replay's builds' and the op
# path's compiled kernels, kept for the next gate of the same compiler (a part of a
# gate over device calls, the next PR on the same base). Triton keys each entry by
# its own build's digest, so two compilers never share one; a dir per fingerprint
# keeps them apart for this module too, and lets a build say which kernels it put there.
KERNEL_MARKS = "zlbench-built"  # in a kernel cache dir: one empty file per kernel id


def kernel_cache_dir(root: str | os.PathLike, fingerprint: str) -> Path:
    """The dir of ``root`` (``--kernel-cache``) for the compiler of ``fingerprint``
    (``triton 3.6.0 sha256:2a89b8423277702a`` -> ``triton-3.6.0-sha256-2a89b8423277702a``)."""
    slug = "".join(c if c.isalnum() or c in "._" else "-" for c in fingerprint.strip())
    return Path(root) / (slug.strip("-.") or "unknown")


def mark_built(cache: str | os.PathLike, ids: Iterable[str]) -> None:
    """Note that the kernels ``ids`` (compile request ids) were built into ``cache``."""
    marks = Path(cache) / KERNEL_MARKS
    marks.mkdir(parents=True, exist_ok=True)
    for i in ids:
        if i and "/" not in i and not i.startswith("."):
            (marks / i).touch()


def built_ids(cache: str | os.PathLike) -> set[str]:
    """The kernel ids :func:`mark_built` noted in ``cache``."""
    marks = Path(cache) / KERNEL_MARKS
    return {p.name for p in marks.iterdir()} if marks.is_dir() else set()


def holds_built(cache: str | os.PathLike | None, ids: Collection[str]) -> bool:
    """Whether ``cache`` holds the kernels ``ids`` compiled (a build of them there is cache
    hits): every one noted by :func:`mark_built` where the dir notes any, else (a gate's
    own cache, which only its screen filled) any compiled kernel at all."""
    if cache is None:
        return False
    noted = built_ids(cache)
    if noted:
        return set(ids) <= noted
    return cached_kernels(cache) > 0
