"""Claiming an output dir so that two runs never share one (docs/design.md).

:func:`claim_new_dir` always makes a new dir (``path``, else ``path-2``, ...);
:func:`claim_batch_dir` also takes ``path`` itself when it is empty or resumed.
"""

from __future__ import annotations

import os
from pathlib import Path

from zlbench.errors import ZlbenchError


def claim_new_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` with a bare mkdir; if taken, ``path-2``, ``path-3``, ...

    Atomic: two claimers of one name never get the same dir.
    Parents are created. Gives up with a ZlbenchError after 999 names.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        cand = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
    raise ZlbenchError(f"cannot claim an output dir next to {path}")


def claim_batch_dir(path: Path, resume: bool) -> Path:
    """The batch dir: ``path`` itself when absent, empty or resumed; else ``path-2``...

    A new name is claimed by :func:`claim_new_dir` (a bare mkdir), so two
    batches never share a dir."""
    path = Path(path)
    if path.is_dir() and (resume or not any(path.iterdir())):
        return path
    return claim_new_dir(path)
