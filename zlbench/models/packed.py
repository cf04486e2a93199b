"""Packed trees: a shipped directory (a whole-inventory baseline, a large results dir)
kept in git as a lock file of digests plus immutable, digest-named archives, and
unpacked into a read-only cache on first use (docs/baselines.md "Packed versions").

A tree ``baselines/v7`` is packed as ``baselines/v7.lock`` (JSON, one file a line)::

    {"format": "zlbench-packed-tree 1", "tree": "v7",
     "archives": ["<sha256>.tar.xz", ...],
     "files": [
      ["main/abs/result.json", "<sha256>", <size>],
      ...]}

and the archives it names, ``<sha256>.tar.xz`` (xz of a tar), each named by the sha256 of
its own bytes. An archive's members are blobs named by the sha256 of their text, regular
files only; a tree's files are the blobs its lock names, taken from any of its archives.
A later version lists the earlier version's archives and packs only its new blobs, so it
adds what is new to a clone (v7 on v6: 0.84 MB). Archives are found in the archive
source: a dir (by default ``archive/`` at the lock's repository root) or an
``https://`` URL prefix (one setting, ``ZLBENCH_ARCHIVE_SOURCE``).

:func:`resolve_tree` returns a path that holds the tree: the dir itself when it exists
(a checkout that has it unpacked, or an unpacked baseline), else the cache's copy,
built on first use under a lock: every archive checked against its name, every blob
against its own, every file against the lock, then the tree's files and dirs made
read-only and the tree renamed into place whole, so a reader never sees half a tree.

Imports only errors.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from zlbench.errors import ZlbenchError
from zlbench.models.base import read_regular

LOCK_SUFFIX = ".lock"
FORMAT = "zlbench-packed-tree 1"
ARCHIVE_SUFFIX = ".tar.xz"
ARCHIVE_DIR = "archive"  # the default archive source, at the repository root
MAX_BLOB_BYTES = 256 * 2**20
MAX_TREE_FILES = 100_000
_HEX64 = re.compile(r"[0-9a-f]{64}")
_PRESET = 9
_COMPLETE = ".unpacked"  # the marker of a whole copy
_LOCK_COPY = "tree.lock"  # the lock the copy was built from, beside it

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TreeLock:
    """A packed tree's lock: its name, its archives and every file's digest and size."""

    tree: str
    archives: tuple[str, ...]
    files: tuple[tuple[str, str, int], ...]  # (relative path, sha256, size), sorted

    def render(self) -> str:
        lines = [
            "{" + f'"format": {json.dumps(FORMAT)}, "tree": {json.dumps(self.tree)},',
            f' "archives": {json.dumps(list(self.archives))},',
            ' "files": [',
        ]
        body = [f"  {json.dumps([rel, sha, size])}" for rel, sha, size in self.files]
        return "\n".join(lines + [",\n".join(body), "]}", ""])


def lock_path(tree: str | os.PathLike) -> Path:
    """``baselines/v7`` -> ``baselines/v7.lock``."""
    p = Path(tree)
    return p.with_name(p.name + LOCK_SUFFIX)


def _safe_rel(rel: object, where: str) -> str:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        raise ZlbenchError(f"{where}: file path {rel!r} is not a relative path")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or parts[0] == _COMPLETE:
        raise ZlbenchError(f"{where}: file path {rel!r} leaves the tree")
    return rel


def parse_lock(text: str, where: str) -> TreeLock:
    """A lock file's text -> TreeLock; one ZlbenchError line for anything malformed."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ZlbenchError(f"{where}: not a packed-tree lock (bad JSON: {e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else None
        raise ZlbenchError(f"{where}: lock format {got!r} is not {FORMAT!r}")
    tree, archives, files = data.get("tree"), data.get("archives"), data.get("files")
    if (
        not isinstance(tree, str)
        or not re.fullmatch(r"[A-Za-z0-9._-]+", tree)
        or tree
        in (
            ".",
            "..",
        )
    ):
        raise ZlbenchError(f"{where}: field 'tree' {tree!r} is not a dir name")
    if not isinstance(archives, list) or not archives:
        raise ZlbenchError(f"{where}: field 'archives' lists no archive")
    for a in archives:
        if not (isinstance(a, str) and a.endswith(ARCHIVE_SUFFIX) and _HEX64.fullmatch(a[:-7])):
            raise ZlbenchError(f"{where}: archive {a!r} is not a <sha256>{ARCHIVE_SUFFIX} name")
    if not isinstance(files, list) or not files or len(files) > MAX_TREE_FILES:
        raise ZlbenchError(f"{where}: field 'files' is empty or too long")
    out, seen = [], set()
    for f in files:
        if not (isinstance(f, list) and len(f) == 3):
            raise ZlbenchError(f"{where}: file entry {f!r} is not [path, sha256, size]")
        rel, sha, size = _safe_rel(f[0], where), f[1], f[2]
        if not (isinstance(sha, str) and _HEX64.fullmatch(sha)):
            raise ZlbenchError(f"{where}: {rel}: sha256 {sha!r} is not 64 hex digits")
        if type(size) is not int or not 0 <= size <= MAX_BLOB_BYTES:
            raise ZlbenchError(f"{where}: {rel}: size {size!r} out of range")
        if rel in seen:
            raise ZlbenchError(f"{where}: {rel}: listed twice")
        seen.add(rel)
        out.append((rel, sha, size))
    _refuse_file_under_file(seen, where)
    return TreeLock(tree, tuple(archives), tuple(sorted(out)))


def _refuse_file_under_file(rels: set[str], where: str) -> None:
    for rel in rels:
        for parent in PurePosixPath(rel).parents:
            if str(parent) in rels:
                raise ZlbenchError(f"{where}: {parent} is a file and a dir")


def read_lock(path: str | os.PathLike) -> TreeLock:
    path = Path(path)
    try:
        return parse_lock(read_regular(path).decode("utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as e:
        raise ZlbenchError(f"{path}: lock unreadable: {e}") from None


# --------------------------------------------------------------------------- sources


def default_source(lock: Path) -> Path | None:
    """The ``archive/`` dir of the repository the lock sits in: the nearest ancestor of
    the lock's dir that has one."""
    for d in lock.resolve().parents:
        if (d / ARCHIVE_DIR).is_dir():
            return d / ARCHIVE_DIR
    return None


def _fetch(name: str, source: str | Path, cache: Path) -> bytes:
    """An archive's bytes from ``source`` (a dir or an https URL prefix), checked
    against its name. A downloaded archive is kept in the cache once it checks."""
    if isinstance(source, str) and source.startswith("https://"):
        kept = cache / "archives" / name
        if kept.is_file():
            data = _read_archive_file(kept, "archive unreadable")
        else:
            import urllib.request  # only for a remote source (not at every start)

            url = source.rstrip("/") + "/" + name
            try:
                with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (https only)
                    data = r.read(2 * MAX_BLOB_BYTES + 1)
            except OSError as e:
                raise ZlbenchError(f"{url}: archive could not be fetched: {e}") from None
            _check_archive(data, name, url)
            kept.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(kept, data)
            return data
    else:
        if isinstance(source, str) and "://" in source:
            raise ZlbenchError(f"archive source {source!r}: only a dir or an https:// URL")
        path = Path(source) / name
        if not path.exists() and not path.is_symlink():
            raise ZlbenchError(
                f"{path}: archive missing (the archive source is set by "
                "ZLBENCH_ARCHIVE_SOURCE; docs/baselines.md 'Packed versions')"
            )
        data = _read_archive_file(path, "archive unreadable")  # a FIFO: refused, unread
    _check_archive(data, name, str(source))
    return data


def _read_archive_file(path: Path, unreadable: str) -> bytes:
    """A regular file's bytes (a FIFO or device refused unread); any failure one line."""
    try:
        return read_regular(path)
    except OSError as e:
        raise ZlbenchError(f"{path}: {unreadable}: {e.strerror}") from None


def _check_archive(data: bytes, name: str, where: str) -> None:
    if hashlib.sha256(data).hexdigest() + ARCHIVE_SUFFIX != name:
        raise ZlbenchError(f"{where}/{name}: archive corrupt: sha256 is not its name")


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def iter_blobs(data: bytes, where: str) -> Iterable[tuple[str, bytes]]:
    """(sha256, text) of each member of an archive's bytes, each checked: regular files
    named by 64 hex digits, at most MAX_BLOB_BYTES, text matching the name."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
            for m in tar:
                if not m.isreg() or not _HEX64.fullmatch(m.name):
                    raise ZlbenchError(f"{where}: archive member {m.name!r} is not a blob")
                if m.size > MAX_BLOB_BYTES:
                    raise ZlbenchError(f"{where}: archive member {m.name[:12]} too large")
                f = tar.extractfile(m)
                text = f.read() if f else b""
                if hashlib.sha256(text).hexdigest() != m.name:
                    raise ZlbenchError(f"{where}: archive corrupt: blob {m.name[:12]} mismatch")
                yield m.name, text
    except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
        raise ZlbenchError(f"{where}: archive corrupt: {e}") from None


# --------------------------------------------------------------------------- unpack


def cache_dir(env: dict[str, str]) -> Path:
    """ZLBENCH_CACHE_DIR, else $XDG_CACHE_HOME/zlbench, else ~/.cache/zlbench (the
    caller passes the environment: cli/settings.py reads every variable)."""
    if env.get("ZLBENCH_CACHE_DIR"):
        return Path(env["ZLBENCH_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or "~").expanduser() / ".cache")
    return Path(base) / "zlbench"


def resolve_tree(
    path: str | os.PathLike,
    *,
    cache: Path,
    source: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """A dir that holds tree ``path``: ``path`` itself when it is a dir or has no lock
    beside it (the caller then reports what is missing as before), else the cache's
    read-only copy of the packed tree, unpacked on first use."""
    p = Path(path)
    lock = lock_path(p)
    if p.is_dir() or not lock.is_file() or p.name != lock.name[: -len(LOCK_SUFFIX)]:
        return p
    raw = _read_archive_file(lock, "lock unreadable")
    parsed = read_lock(lock)
    if parsed.tree != p.name:
        raise ZlbenchError(f"{lock}: field 'tree' {parsed.tree!r} is not {p.name!r}")
    src = source or default_source(lock)
    if src is None:
        raise ZlbenchError(
            f"{lock}: no archive source (no {ARCHIVE_DIR}/ dir above it; set "
            "ZLBENCH_ARCHIVE_SOURCE to a dir or an https:// URL)"
        )
    key = hashlib.sha256(raw).hexdigest()[:20]
    label = f"{lock.parent.resolve().name}/{parsed.tree}"
    return materialize(
        parsed, key=key, cache=cache, source=src, where=str(lock), label=label, progress=progress
    )


def materialize(
    lock: TreeLock,
    *,
    key: str,
    cache: Path,
    source: str | Path,
    where: str,
    label: str = "",
    progress: Progress | None = None,
) -> Path:
    """The cache's read-only copy of ``lock``'s tree (``<cache>/trees/<key>/<tree>``),
    built on first use under a file lock (concurrent readers wait for one build).
    ``label`` (``baselines/v7``) is how reports name it (:func:`packed_label`)."""
    home = cache / "trees" / key
    dest = home / lock.tree
    if (home / _COMPLETE).is_file() and dest.is_dir():
        return dest
    home.mkdir(parents=True, exist_ok=True)
    with open(home.with_name(key + ".flock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not ((home / _COMPLETE).is_file() and dest.is_dir()):
            _unpack(lock, source, cache, home, where, progress)
            (home / _LOCK_COPY).write_text(lock.render(), encoding="utf-8")
            (home / _COMPLETE).write_text((label or lock.tree) + "\n", encoding="utf-8")
    return dest


def unpacked_problems(path: str | os.PathLike) -> list[str]:
    """How a packed tree's cached copy differs from its lock: every file re-hashed
    (``zlbench unpack --verify``). Empty for an intact copy."""
    p = Path(path)
    if not (p.parent / _LOCK_COPY).is_file():
        raise ZlbenchError(f"{p}: not an unpacked packed tree (no {_LOCK_COPY} beside it)")
    return _tree_problems(p, read_lock(p.parent / _LOCK_COPY))


def _tree_problems(root: Path, lock: TreeLock) -> list[str]:
    want = {rel: (sha, size) for rel, sha, size in lock.files}
    problems = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink() or not (p.is_dir() or p.is_file()):
            problems.append(f"{rel}: not a plain file")
        elif p.is_file():
            if rel not in want:
                problems.append(f"{rel}: not in the lock")
            elif hashlib.sha256(p.read_bytes()).hexdigest() != want.pop(rel)[0]:
                problems.append(f"{rel}: content changed")
    problems += [f"{rel}: missing" for rel in sorted(want)]
    return problems


def packed_label(path: str | os.PathLike) -> str | None:
    """How reports name an unpacked tree (``baselines/v7``, as the lock sits in the
    repository), None for any other dir: a cache's copy is no path to show."""
    p = Path(path)
    try:
        label = (p.parent / _COMPLETE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return label if label.rsplit("/", 1)[-1] == p.name else None


def _unpack(
    lock: TreeLock, source: str | Path, cache: Path, home: Path, where: str, progress
) -> None:
    objects = cache / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    want = {sha for _, sha, _ in lock.files}
    missing = {sha for sha in want if not (objects / sha).is_file()}
    for i, name in enumerate(lock.archives, 1):
        if not missing:
            break
        if progress:
            progress(f"unpacking {lock.tree}: archive {i}/{len(lock.archives)} ({name[:12]})")
        for sha, text in iter_blobs(_fetch(name, source, cache), f"{where}: {name}"):
            if sha in missing:
                _write_atomic(objects / sha, text, 0o444)
                missing.discard(sha)
    if missing:
        sha = sorted(missing)[0]
        rel = next(r for r, s, _ in lock.files if s == sha)
        raise ZlbenchError(
            f"{where}: {rel} (blob {sha[:12]}) is in none of its archives"
            + (f" (+{len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    for old in home.glob(".tmp-*"):  # a build cut short earlier
        _make_writable(old)
        shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=home, prefix=".tmp-"))
    built = tmp / lock.tree
    for rel, sha, size in lock.files:
        obj = objects / sha
        if obj.stat().st_size != size:
            raise ZlbenchError(f"{where}: {rel}: size {obj.stat().st_size} is not {size}")
        target = built / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(obj, target)
        except OSError:
            shutil.copyfile(obj, target)
            os.chmod(target, 0o444)
    for d in sorted((p for p in built.rglob("*") if p.is_dir()), reverse=True):
        os.chmod(d, 0o555)
    dest = home / lock.tree
    if dest.exists():  # a tree without its marker: a build that died after the rename
        _make_writable(dest)
        shutil.rmtree(dest)
    os.replace(built, dest)
    os.chmod(dest, 0o555)
    tmp.rmdir()


def _make_writable(root: Path) -> None:
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        try:
            os.chmod(d, 0o755)
        except OSError:
            pass


# --------------------------------------------------------------------------- pack


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative posix path -> bytes); a symlink or a
    special file is refused (a packed tree holds plain files)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink() or not (p.is_dir() or p.is_file()):
            raise ZlbenchError(f"{root}: {rel} is not a plain file or dir; refusing to pack")
        if p.is_file():
            out[rel] = p.read_bytes()
    return out


def archive_blobs(archive_dir: Path) -> dict[str, str]:
    """sha256 -> archive name of every blob the archives in ``archive_dir`` hold."""
    held: dict[str, str] = {}
    for a in sorted(archive_dir.glob(f"*{ARCHIVE_SUFFIX}")):
        data = _read_archive_file(a, "archive unreadable")
        _check_archive(data, a.name, str(archive_dir))
        for sha, _ in iter_blobs(data, str(a)):
            held.setdefault(sha, a.name)
    return held


def encode_archive(blobs: dict[str, bytes], order: dict[str, str]) -> tuple[str, bytes]:
    """(name, bytes) of the archive holding ``blobs`` (sha256 -> text), in the order of
    ``order[sha]`` (a path: similar files side by side compress together);
    deterministic: fixed member metadata, no timestamps."""
    buf = io.BytesIO()
    with lzma.open(buf, "wb", preset=_PRESET) as xz:
        with tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for sha in sorted(blobs, key=lambda s: (PurePosixPath(order[s]).name, order[s])):
                info = tarfile.TarInfo(sha)
                info.size, info.mtime, info.mode = len(blobs[sha]), 0, 0o444
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(blobs[sha]))
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest() + ARCHIVE_SUFFIX, data


def pack_tree(root: Path, archive_dir: Path) -> tuple[TreeLock, str | None, int]:
    """Pack dir ``root``: its lock (not written here), the name of the new archive
    written into ``archive_dir`` (None when every blob was already held) and that
    archive's size. Blobs the archives already there hold are not packed again."""
    files = tree_files(root)
    if not files:
        raise ZlbenchError(f"{root}: no file to pack")
    held = archive_blobs(archive_dir) if archive_dir.is_dir() else {}
    digests = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}
    new: dict[str, bytes] = {}
    order: dict[str, str] = {}
    for rel, sha in digests.items():
        if sha not in held and sha not in new:
            new[sha], order[sha] = files[rel], rel
    name, size = None, 0
    archives = {held[s] for s in digests.values() if s in held}
    if new:
        name, data = encode_archive(new, order)
        archive_dir.mkdir(parents=True, exist_ok=True)
        if not (archive_dir / name).is_file():
            _write_atomic(archive_dir / name, data)
        archives.add(name)
        size = len(data)
    entries = tuple(sorted((rel, sha, len(files[rel])) for rel, sha in digests.items()))
    return TreeLock(root.name, tuple(sorted(archives)), entries), name, size


__all__ = [
    "ARCHIVE_DIR",
    "LOCK_SUFFIX",
    "TreeLock",
    "cache_dir",
    "encode_archive",
    "lock_path",
    "materialize",
    "packed_label",
    "pack_tree",
    "parse_lock",
    "read_lock",
    "resolve_tree",
    "unpacked_problems",
]
