"""Claiming an output dir so that two runs never share one, and writing a set of
output files into it as one (docs/architecture.md "Directories", docs/ci.md "What
the judge trusts").

:func:`claim_new_dir` always makes a new dir (``path``, else ``path-2``, ...);
:func:`claim_batch_dir` also takes ``path`` itself when it is empty or resumed.
:func:`hold_dir` locks a dir for one writer at a time; :func:`write_file_set`
puts a set of files (a gate's reports) into a dir all together or not at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from zlbench.errors import ZlbenchError

# Created with O_EXCL in a claimed batch dir: whoever creates it owns the dir.
CLAIM_MARK = ".zlbench-claim"
_HELD: dict[str, tuple[int, int]] = {}  # realpath -> (fd, depth) of the dirs this process holds


def claim_new_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` with a bare mkdir; if taken, ``path-2``, ``path-3``, ...

    Atomic: two claimers of one name never get the same dir.
    Parents are created. Gives up with a ZlbenchError after 999 names.
    """
    path = Path(path)
    _mkdir_parents(path)
    for cand in _names(path):
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
        except OSError as e:
            raise ZlbenchError(f"{cand}: cannot create the output dir: {e.strerror}") from None
    raise ZlbenchError(f"cannot claim an output dir next to {path}")


def claim_batch_dir(path: Path, resume: bool) -> Path:
    """The batch dir: ``path`` itself when absent, empty or resumed; else ``path-2``...

    Atomic: a dir is taken (new or empty) only by the one process that creates its
    claim mark (``.zlbench-claim``, O_EXCL), so two batches racing for one empty dir
    never share it: the loser moves on to the next name."""
    path = Path(path)
    if resume and path.is_dir():
        return path
    _mkdir_parents(path)
    for cand in _names(path):
        try:
            cand.mkdir()
        except FileExistsError:
            if not cand.is_dir() or any(cand.iterdir()):
                continue
        except OSError as e:
            raise ZlbenchError(f"{cand}: cannot create the output dir: {e.strerror}") from None
        if _mark(cand):
            return cand
    raise ZlbenchError(f"cannot claim an output dir next to {path}")


def _names(path: Path) -> Iterator[Path]:
    for n in range(1, 1000):
        yield path if n == 1 else path.with_name(f"{path.name}-{n}")


def _mkdir_parents(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ZlbenchError(f"{path.parent}: cannot create the output dir: {e.strerror}") from None


def _mark(path: Path) -> bool:
    try:
        fd = os.open(path / CLAIM_MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except (FileExistsError, NotADirectoryError):
        return False
    except OSError as e:
        raise ZlbenchError(f"{path}: cannot claim the output dir: {e.strerror}") from None
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()}\n")
    return True


# --------------------------------------------------------------------------- writing


@contextlib.contextmanager
def hold_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Create dir ``path`` when missing and hold an exclusive lock on it (flock on the
    dir itself: released when the process ends, even by kill -9). Another process
    holding it is one ZlbenchError line: two writers never mix their files in one
    dir. Re-entrant within a process."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ZlbenchError(f"--out {path}: exists and is not a directory") from None
    except OSError as e:
        raise ZlbenchError(f"--out {path}: cannot create: {e.strerror}") from None
    key = os.path.realpath(path)
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
    else:
        _HELD[key] = (_lock(path), 1)
    try:
        yield path
    finally:
        fd, depth = _HELD.pop(key)
        if depth > 1:
            _HELD[key] = (fd, depth - 1)
        else:
            os.close(fd)


def _lock(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise ZlbenchError(f"--out {path}: cannot open: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ZlbenchError(
            f"--out {path}: another zlbench process is writing there; "
            "give each run its own output dir"
        ) from None
    return fd


# The temp dir of a file set being written: ``.zlbench-out.<pid>.<random>``.
TMP_PREFIX = ".zlbench-out."


def write_file_set(out: str | os.PathLike, files: Mapping[str, str], last: str) -> None:
    """Write ``files`` (name -> text) into dir ``out`` as one set: each is written and
    fsynced in a temp dir inside ``out`` (same file system), then the old set is
    removed (``last`` first) and the new one renamed into place (``last`` last).
    Any I/O failure is one ZlbenchError line and leaves no file of the set in ``out``
    (so never a report without its ``last``, e.g. verdict.json). The temp dirs that
    writers killed mid-write left behind are removed first (:func:`remove_stale_sets`)."""
    out = Path(out)
    names = [n for n in files if n != last] + [last]
    with hold_dir(out):
        remove_stale_sets(out)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}.", dir=out))
        except OSError as e:
            raise ZlbenchError(f"{out}: cannot write the reports: {e.strerror}") from None
        try:
            _fill(tmp, files)
            _swap_in(tmp, out, names)
        except OSError as e:
            _remove(out, names)
            raise ZlbenchError(f"{out}: cannot write the reports: {e.strerror or e}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def remove_stale_sets(out: Path) -> int:
    """Remove the temp dirs of file sets whose writer died mid-write (kill -9): called
    while holding ``out`` (:func:`hold_dir`), and every writer holds it while its temp
    dir exists, so a temp dir of another process is a dead writer's (one of this
    process is left alone: another thread may be writing it). Best effort; the number
    removed."""
    mine = f"{TMP_PREFIX}{os.getpid()}."
    removed = 0
    try:
        found = [p for p in out.iterdir() if p.name.startswith(TMP_PREFIX)]
    except OSError:
        return 0
    for p in found:
        if p.name.startswith(mine):
            continue
        with contextlib.suppress(OSError):
            if p.is_symlink() or not p.is_dir():
                p.unlink()
            else:
                shutil.rmtree(p)
            removed += 1
    return removed


def _fill(tmp: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        with open(tmp / name, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


def _swap_in(tmp: Path, out: Path, names: list[str]) -> None:
    _remove(out, reversed(names), strict=True)  # ``last`` first: no stale verdict
    for name in names:
        os.replace(tmp / name, out / name)
    with contextlib.suppress(OSError):  # the renames reach the disk (best effort)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(out: Path, names, strict: bool = False) -> None:
    for name in names:
        try:
            os.unlink(out / name)
        except FileNotFoundError:
            pass
        except OSError:
            if strict:
                raise
