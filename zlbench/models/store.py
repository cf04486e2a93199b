"""The compact baseline layout's content-addressed store of codegen stage texts
(docs/baselines.md "Size", docs/codegen.md).

A compact baseline keeps the texts its codegen screen's diffs need (TTIR, TTGIR) in
``<root>/store/<sha256>.xz`` packs beside its op dirs, not per op; every stage keeps
its sha256 in the op's ``codegen/index.json``, so the screen still classifies every
stage. A pack is xz (LZMA2) of::

    zlbench-pack 1 <n>\\n
    <sha256> <size>\\n          n lines, sorted by sha256
    <text><text>...            the n texts in that order

named by the sha256 of its own (compressed) bytes. A stage's ``StageDigest.blob`` is
then ``../../../store/<pack>.xz``: the pack's path relative to the op's codegen dir
(``<root>/<repo>/<run_name>/codegen``); an empty ``blob`` says the text is not stored.
Packing many texts into one compresses across kernels (a kernel's configs differ in a
few lines): the point of the layout. Packs are immutable; a later version copies the
packs of the version it derives from that hold its texts (git stores a copied file
once) and packs only the new texts.

Imports only errors and models.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import time
from collections import OrderedDict
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models.base import read_regular

STORE_DIR = "store"
PACK_SUFFIX = ".xz"
# A compact index's blob paths start with this: up from <root>/<repo>/<run>/codegen.
STORE_REF = f"../../../{STORE_DIR}/"
# The pack format's own version, in its first line (docs/contributing.md "Changing an
# on-disk format": a newer pack is refused by name; there is no older one yet).
PACK_VERSION = 1
_PACK = b"zlbench-pack"
MAGIC = b"%s %d" % (_PACK, PACK_VERSION)
MAX_PACK_BYTES = 512 * 2**20  # uncompressed; a pack is written at most PACK_TARGET + one text
PACK_TARGET = 8 * 2**20  # texts per pack, uncompressed, before the next pack starts
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENTRY_MIN = len(b"%s 0\n" % (b"0" * 64))  # the shortest header entry line
_PRESET = 9


def is_store_ref(blob: str) -> bool:
    return blob.startswith(STORE_REF)


def store_ref(pack_name: str) -> str:
    return STORE_REF + pack_name


def pack_path(cg_dir: str | os.PathLike, blob: str) -> Path:
    """The pack a compact index's ``blob`` names: ``<root>/store/<sha256>.xz``, root the
    dir three levels above ``cg_dir``. One ZlbenchError for a name that is not a pack's."""
    name = blob[len(STORE_REF) :]
    if not (name.endswith(PACK_SUFFIX) and _HEX64.fullmatch(name[: -len(PACK_SUFFIX)])):
        raise ZlbenchError(f"{cg_dir}: codegen blob {blob!r} is not a store pack's name")
    return Path(cg_dir).parent.parent.parent / STORE_DIR / name


def encode_pack(texts: dict[str, bytes]) -> tuple[str, bytes]:
    """(file name, bytes) of the pack holding ``texts`` (sha256 -> text); deterministic."""
    shas = sorted(texts)
    head = [MAGIC + b" %d\n" % len(shas)]
    head += [b"%s %d\n" % (s.encode(), len(texts[s])) for s in shas]
    data = lzma.compress(b"".join(head + [texts[s] for s in shas]), preset=_PRESET)
    return hashlib.sha256(data).hexdigest() + PACK_SUFFIX, data


def plan_packs(texts: dict[str, bytes], order: dict[str, str]) -> list[dict[str, bytes]]:
    """Split ``texts`` into packs of about PACK_TARGET bytes, in the order of
    ``order[sha]`` (a sort key: stage and kernel name, so similar texts share a pack)."""
    packs: list[dict[str, bytes]] = [{}]
    size = 0
    for sha in sorted(texts, key=lambda s: (order.get(s, ""), s)):
        if size >= PACK_TARGET:
            packs.append({})
            size = 0
        packs[-1][sha] = texts[sha]
        size += len(texts[sha])
    return [p for p in packs if p]


# Decoded packs, sha256 -> texts: a byte-bounded LRU that holds a whole store (v7's 16
# packs are 128 MiB decoded), so a verify and then a screen decode each pack once.
CACHE_BYTES = 256 * 2**20
_TEXTS: OrderedDict[str, dict[str, bytes]] = OrderedDict()
_texts_bytes = 0
# Which file held which pack: (st_dev, st_ino) -> ((size, mtime_ns, ctime_ns), sha256), so
# an unchanged pack file is not read and hashed again. A file changed within RACY_NS of
# its reading may keep its stat (a filesystem's clock ticks coarsely): it is read and
# hashed on every call until it is older than that (git's "racy clean" rule).
_SEEN: dict[tuple[int, int], tuple[tuple[int, int, int], str]] = {}
RACY_NS = 2 * 10**9


def read_pack(path: str | os.PathLike) -> dict[str, bytes]:
    """Every text of a pack, sha256 -> bytes, each checked against its sha256, the pack
    against its name. Read, hashed and decoded once per process: a later call on the
    same unchanged file (same inode, size, mtime and ctime) returns the decoded texts
    (kept by sha256, CACHE_BYTES in all); a file changed on disk is read and checked
    again. Decompressed in a bounded stream (never more than MAX_PACK_BYTES). A missing
    or corrupt pack is one ZlbenchError. The dict returned is shared: do not change it."""
    path = Path(path)
    st = _io(os.stat, path)
    ident, sig = (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    seen = _SEEN.get(ident)
    if seen is not None and seen[0] == sig:
        _check_name(path, seen[1])
        texts = _TEXTS.get(seen[1])
        if texts is not None:
            _TEXTS.move_to_end(seen[1])
            return texts
    now = time.time_ns()
    data = _read_file(path)
    digest = hashlib.sha256(data).hexdigest()
    if len(data) == st.st_size and max(st.st_mtime_ns, st.st_ctime_ns) < now - RACY_NS:
        _SEEN[ident] = (sig, digest)
    else:
        _SEEN.pop(ident, None)
    _check_name(path, digest)
    texts = _TEXTS.get(digest)
    if texts is None:
        texts = _decode(path, data)
        _keep(digest, texts)
    _TEXTS.move_to_end(digest)
    return texts


def _read_file(path: Path) -> bytes:
    """The pack file's bytes; a FIFO or device in its place is refused unread."""
    return _io(read_regular, path)


def _io(call, path: Path):
    try:
        return call(path)
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: codegen store pack missing") from None
    except OSError as e:
        raise ZlbenchError(f"{path}: codegen store pack unreadable: {e}") from None


def _check_name(path: Path, digest: str) -> None:
    if digest + PACK_SUFFIX != path.name:
        raise ZlbenchError(f"{path}: codegen store pack corrupt: sha256 is not its name")


def _keep(digest: str, texts: dict[str, bytes]) -> None:
    """Add a decoded pack to the LRU, dropping the least recently read beyond
    CACHE_BYTES (a pack larger than that alone stays until the next one comes)."""
    global _texts_bytes
    _TEXTS[digest] = texts
    _texts_bytes += _size(texts)
    while _texts_bytes > CACHE_BYTES and len(_TEXTS) > 1:
        _, old = _TEXTS.popitem(last=False)
        _texts_bytes -= _size(old)


def _size(texts: dict[str, bytes]) -> int:
    return sum(len(t) for t in texts.values())


def clear_cache() -> None:
    """Forget every pack read (tests: the next read of each is a first one)."""
    global _texts_bytes
    _TEXTS.clear()
    _SEEN.clear()
    _texts_bytes = 0


def _check_pack_version(path: Path, magic: bytes) -> None:
    """A pack header of another version than PACK_VERSION: one line saying so."""
    name, _, version = magic.partition(b" ")
    if name == _PACK and version.isdigit():
        raise ZlbenchError(
            f"{path}: codegen store pack version {int(version)} is not supported "
            f"(this zlbench reads version {PACK_VERSION})"
        )


def _decode(path: Path, data: bytes) -> dict[str, bytes]:
    try:
        raw = lzma.LZMADecompressor().decompress(data, max_length=MAX_PACK_BYTES + 1)
    except lzma.LZMAError as e:
        raise ZlbenchError(f"{path}: codegen store pack corrupt: {e}") from None
    if len(raw) > MAX_PACK_BYTES:
        raise ZlbenchError(f"{path}: codegen store pack larger than {MAX_PACK_BYTES} bytes")
    try:
        first, rest = raw.split(b"\n", 1)
        magic, n = first.rsplit(b" ", 1)
        if magic != MAGIC:
            _check_pack_version(path, magic)
            raise ValueError("not a zlbench pack")
        count = int(n)
        # each entry line is "<64 hex> <size>\n": a count the data cannot hold is refused
        # before it is used (10**30 would overflow split's index)
        if not 0 <= count <= len(rest) // _ENTRY_MIN:
            raise ValueError("entry count out of range")
        lines = rest.split(b"\n", count)
        if len(lines) != count + 1:
            raise ValueError("fewer entry lines than the count")
        body = lines.pop()
        entries = [(s.decode("ascii"), int(size)) for s, size in (ln.split(b" ") for ln in lines)]
    except (ValueError, UnicodeDecodeError):
        raise ZlbenchError(f"{path}: codegen store pack corrupt: bad header") from None
    texts, at = {}, 0
    for sha, size in entries:
        text = body[at : at + size]
        at += size
        if hashlib.sha256(text).hexdigest() != sha:
            raise ZlbenchError(f"{path}: codegen store pack corrupt: text {sha[:12]} mismatch")
        texts[sha] = text
    if at != len(body):
        raise ZlbenchError(f"{path}: codegen store pack corrupt: length mismatch")
    return texts


def read_stored_text(cg_dir: str | os.PathLike, blob: str, sha256: str) -> bytes:
    """One stage text from the store pack ``blob`` names (checked). One ZlbenchError when
    the pack is missing or corrupt or does not hold it."""
    path = pack_path(cg_dir, blob)
    text = read_pack(path).get(sha256)
    if text is None:
        raise ZlbenchError(f"{path}: codegen store pack does not hold text {sha256[:12]}")
    return text


__all__ = [
    "PACK_SUFFIX",
    "STORE_DIR",
    "STORE_REF",
    "clear_cache",
    "encode_pack",
    "is_store_ref",
    "pack_path",
    "plan_packs",
    "read_pack",
    "read_stored_text",
    "store_ref",
]
