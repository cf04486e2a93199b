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
from collections import OrderedDict
from pathlib import Path

from zlbench.errors import ZlbenchError

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


_CACHE: OrderedDict[str, dict[str, bytes]] = OrderedDict()
_CACHE_PACKS = 4


def read_pack(path: str | os.PathLike) -> dict[str, bytes]:
    """Every text of a pack, sha256 -> bytes, each checked against its sha256, the pack
    against its name (on every call: the decompressed texts of the last few packs are
    kept, keyed by that sha256). Decompressed in a bounded stream (never more than
    MAX_PACK_BYTES). A missing or corrupt pack is one ZlbenchError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: codegen store pack missing") from None
    except OSError as e:
        raise ZlbenchError(f"{path}: codegen store pack unreadable: {e}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest + PACK_SUFFIX != path.name:
        raise ZlbenchError(f"{path}: codegen store pack corrupt: sha256 is not its name")
    if digest in _CACHE:
        _CACHE.move_to_end(digest)
        return _CACHE[digest]
    texts = _decode(path, data)
    _CACHE[digest] = texts
    while len(_CACHE) > _CACHE_PACKS:
        _CACHE.popitem(last=False)
    return texts


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
        lines = rest.split(b"\n", int(n))
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
    "encode_pack",
    "is_store_ref",
    "pack_path",
    "plan_packs",
    "read_pack",
    "read_stored_text",
    "store_ref",
]
