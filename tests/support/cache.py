"""Expensive fixtures built once per test run, shared by the xdist workers (asv's
``locked_cache_dir`` is the model).

:func:`locked_cache_dir` builds a dir once under an exclusive ``fcntl.flock``: the
first process to ask builds it while holding the lock; the others wait on the lock
and then find it done. The dir is keyed by a hash of the build's
inputs, so two builds with other inputs never share one.

Where: :data:`ROOT`, set by tests/conftest.py to the run's shared temp dir (the
parent of the xdist workers' own basetemps; the basetemp itself without xdist), so
the cache lives as long as the run's temp dirs and no longer. Unset (a helper used
outside pytest), nothing is cached.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

ROOT: Path | None = None
CACHE_DIR = "zl-fixture-cache"


def input_key(*parts: str | bytes) -> str:
    """A short hash of the build's inputs."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def locked_cache_dir(name: str, key: str, build: Callable[[Path], None]) -> Path | None:
    """``<ROOT>/zl-fixture-cache/<name>-<key>``, built by ``build(dir)`` once per run
    under a file lock; None when no ROOT is set (the caller builds for itself).

    The build writes into the dir itself (what it records may name its own paths), and
    the dir counts as built once ``build`` returned (a ``.complete`` stamp): a build
    that raised or was killed is wiped and redone by the next caller."""
    if ROOT is None:
        return None
    base = ROOT / CACHE_DIR
    base.mkdir(parents=True, exist_ok=True)
    done = base / f"{name}-{key}"
    stamp = done / ".complete"
    with open(base / f"{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not stamp.is_file():
                shutil.rmtree(done, ignore_errors=True)
                done.mkdir()
                build(done)
                stamp.write_text("")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return done
