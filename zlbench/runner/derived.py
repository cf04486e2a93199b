"""A new baseline version derived from an older one (``zlbench baseline attribute``,
``zlbench baseline compact``): the same records, configs and numbers with one
transformation applied, and a manifest that says so (``derived_from``, a summary entry
of its own). The older version is verified first and never changed (baselines are
immutable); the new dir is written whole under a temporary name beside ``out`` and
renamed into place, so a failure leaves neither it nor the temporary dir; one that a
SIGKILL left is removed by the next writer of that name.

:func:`stage_beside` (the end of this module) is that temporary name for every writer
of a new dir beside its ``--out``: these, ``baseline refresh``/``bootstrap``, a batch
merge.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.models import BaselineManifest, dump_yaml_model, load_yaml_model
from zlbench.models.paths import resolve_inside
from zlbench.protocol.layout import MANIFEST_YAML

# (the copy of the older version, its manifest) -> (summary key, what the step did)
Transform = Callable[[Path, BaselineManifest], tuple[str, Any]]


def derive_version(
    src: Path,
    out: Path,
    name: str,
    transform: Transform,
    ignore: Callable[[str, list[str]], set[str]] | None = None,
) -> BaselineManifest:
    """Write ``out`` from baseline ``src``: a copy (``ignore`` as :func:`shutil.copytree`'s)
    that ``transform`` changes in place, its manifest named ``name``, derived from
    ``src``'s, with what ``transform`` returned under its summary key and every file
    hashed again. The copy is writable by its owner, as a refresh writes a version,
    whatever ``src``'s modes (a packed baseline's unpacked copy is read-only). Returns
    the new manifest."""
    if out.exists() or out.is_symlink():
        raise ZlbenchError(f"{out} already exists: baselines are immutable, pick the next version")
    manifest = load_yaml_model(resolve_inside(src, MANIFEST_YAML), BaselineManifest)
    baselines.check_intact(src, manifest)
    tmp = stage_beside(out)  # stale stages of killed writers of this name swept
    try:
        shutil.copytree(src, tmp, symlinks=True, ignore=ignore)
        owner_writable(tmp)
        key, summary = transform(tmp, manifest)
        new = manifest.model_copy(deep=True)
        new.name = name
        new.created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
        # a step of a chain under one name (attribute, then compact, into vN): the
        # version it came from is the chain's start, not itself
        same = manifest.name == name and manifest.derived_from
        new.derived_from = manifest.derived_from if same else manifest.name
        new.summary[key] = summary
        new.files = baselines.content_hashes(tmp)
        dump_yaml_model(tmp / MANIFEST_YAML, new)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return new


def owner_writable(root: Path) -> None:
    """Every dir and file under ``root`` (itself included, symlinks left alone) writable
    by its owner."""
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        mode = p.stat().st_mode
        if not mode & stat.S_IWUSR:
            p.chmod(mode | stat.S_IWUSR)


def shown_path(path: Path) -> str:
    """A dir as a committed manifest names it: as given when relative, else its last two
    parts (no machine's absolute path in a baseline)."""
    return path.as_posix() if not path.is_absolute() else "/".join(path.parts[-2:])


# --------------------------------------------------------------------------- stages

# A new dir built beside its final name and renamed into place at the very end (a
# baseline's refresh, compact, attribute, bootstrap; a batch merge):
# ``.<name>.<kind>-<pid>``. A writer that fails or is stopped removes its own; one
# killed with SIGKILL leaves it, dot-named and git-ignored (.gitignore), and the next
# writer of that name beside it removes the stages of processes that are gone.
STAGE_KINDS = ("tmp", "bootstrap")
_STAGE = re.compile(r"^\.(?P<name>.+)\.(?:tmp|bootstrap)-(?P<pid>[0-9]+)$")


def stage_beside(out: Path, kind: str = "tmp") -> Path:
    """This process's stage for ``out``: ``out.parent/.<out.name>.<kind>-<pid>``, absent
    (an earlier one of this pid is removed). The stale stages of ``out.name`` beside
    it are swept first (:func:`sweep_stale_stages`). The parent is created."""
    if kind not in STAGE_KINDS:
        raise ValueError(f"stage kind {kind!r} is not one of {STAGE_KINDS}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_stages(out.parent, out.name)
    stage = out.parent / f".{out.name}.{kind}-{os.getpid()}"
    _remove_path(stage)
    return stage


def sweep_stale_stages(parent: Path, name: str) -> list[Path]:
    """Remove the stages of ``name`` in ``parent`` (every kind) whose process is gone
    (killed with SIGKILL); those of live processes, this one included, are left.
    Best effort; returns the ones removed."""
    gone: list[Path] = []
    try:
        found = list(Path(parent).iterdir())
    except OSError:
        return gone
    for p in found:
        m = _STAGE.match(p.name)
        if m and m["name"] == name and not pid_alive(int(m["pid"])):
            _remove_path(p)
            gone.append(p)
    return gone


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OverflowError:  # no pid is that large
        return False
    return True


def _remove_path(p: Path) -> None:
    """Remove ``p`` whatever it is (a symlink itself, never what it points at)."""
    with contextlib.suppress(OSError):
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            p.unlink()
        else:
            shutil.rmtree(p, ignore_errors=True)


__all__ = [
    "STAGE_KINDS",
    "Transform",
    "derive_version",
    "pid_alive",
    "shown_path",
    "stage_beside",
    "sweep_stale_stages",
]
