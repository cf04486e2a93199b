"""models.store reads, hashes and decodes each pack once per process (issue 47: verify
decoded v6's 14 packs 1,941 times), and still catches a pack changed on disk after it
was read once: a flipped byte, a truncation, a rename, a removal."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import store
from zlbench.models.codegen import blob_digest


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """An empty cache, and counts of the reads and decodes of pack files."""
    store.clear_cache()
    counts = {"read": 0, "decode": 0}
    read, decode = store._read_file, store._decode

    def counted_read(path):
        counts["read"] += 1
        return read(path)

    def counted_decode(path, data):
        counts["decode"] += 1
        return decode(path, data)

    monkeypatch.setattr(store, "_read_file", counted_read)
    monkeypatch.setattr(store, "_decode", counted_decode)
    yield counts
    store.clear_cache()


@pytest.fixture
def settled(monkeypatch):
    """Every file counts as older than RACY_NS (a pack written long before its reading):
    an unchanged one is trusted by its stat."""
    monkeypatch.setattr(store, "RACY_NS", -(10**18))


def _write_pack(d: Path, *texts: bytes) -> tuple[Path, dict[str, bytes]]:
    held = {blob_digest(t)[0]: t for t in texts}
    name, data = store.encode_pack(held)
    d.mkdir(parents=True, exist_ok=True)
    path = d / name
    path.write_bytes(data)
    old = 1_000_000_000 * 10**9  # 2001: a byte written later changes the mtime
    os.utime(path, ns=(old, old))
    return path, held


def _one_line(path: Path) -> str:
    with pytest.raises(ZlbenchError) as err:
        store.read_pack(path)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_an_unchanged_pack_is_read_hashed_and_decoded_once(tmp_path, fresh, settled):
    path, held = _write_pack(tmp_path / store.STORE_DIR, b"a", b"b")
    for _ in range(3):
        assert store.read_pack(path) == held
    cg_dir, blob = tmp_path / "main" / "abs" / "codegen", store.store_ref(path.name)
    for sha, text in held.items():  # as the screen reads a stage text
        assert store.read_stored_text(cg_dir, blob, sha) == text
    assert fresh == {"read": 1, "decode": 1}


def test_a_copy_of_a_pack_is_hashed_but_not_decoded_again(tmp_path, fresh, settled):
    """v7 holds v6's packs byte for byte: a second file of the same pack is read and
    hashed (its own name checked), its texts are the ones decoded already."""
    path, held = _write_pack(tmp_path / "v6", b"a", b"b")
    copy = tmp_path / "v7" / path.name
    copy.parent.mkdir()
    shutil.copy2(path, copy)
    assert store.read_pack(path) is store.read_pack(copy)
    assert store.read_pack(copy) == held
    assert fresh == {"read": 2, "decode": 1}


def test_a_byte_flipped_after_the_first_read_is_caught(tmp_path, settled):
    path, _ = _write_pack(tmp_path, b"one text", b"another")
    store.read_pack(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))  # the same inode and size, a new mtime
    assert _one_line(path) == f"{path}: codegen store pack corrupt: sha256 is not its name"


def test_a_pack_truncated_after_the_first_read_is_caught(tmp_path, settled):
    path, _ = _write_pack(tmp_path, b"one text", b"another")
    store.read_pack(path)
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size - 7)
    assert "corrupt: sha256 is not its name" in _one_line(path)


def test_a_pack_renamed_or_removed_after_the_first_read_is_caught(tmp_path, settled):
    path, _ = _write_pack(tmp_path, b"one text", b"another")
    other, _ = _write_pack(tmp_path / "o", b"a third")
    store.read_pack(path)
    store.read_pack(other)
    renamed = tmp_path / other.name
    path.rename(renamed)  # the first pack's bytes under the second pack's name
    assert "corrupt: sha256 is not its name" in _one_line(renamed)
    assert _one_line(path) == f"{path}: codegen store pack missing"


def test_a_pack_rewritten_within_a_clock_tick_is_hashed_every_time(tmp_path, fresh):
    """A file changed less than RACY_NS before its reading may keep its stat on a change
    (a coarse filesystem clock): it is read and hashed on every call, decoded once."""
    path, held = _write_pack(tmp_path, b"a")
    os.utime(path)  # now
    for _ in range(3):
        assert store.read_pack(path) == held
    assert fresh == {"read": 3, "decode": 1}
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(bytes(data))
    assert "corrupt" in _one_line(path)


def test_the_cache_is_bounded_by_bytes_least_recently_read_first(
    tmp_path, fresh, settled, monkeypatch
):
    monkeypatch.setattr(store, "CACHE_BYTES", 2 * 1000 + 10)
    packs = [_write_pack(tmp_path / str(i), bytes([65 + i]) * 1000)[0] for i in range(3)]
    for p in packs:
        store.read_pack(p)
    assert fresh == {"read": 3, "decode": 3}
    store.read_pack(packs[2])
    store.read_pack(packs[1])
    assert fresh == {"read": 3, "decode": 3}  # the last two are kept
    store.read_pack(packs[0])  # dropped: read, checked and decoded again
    assert fresh == {"read": 4, "decode": 4}


def test_a_whole_v7_store_fits_the_cache():
    """v7: 16 packs, 128 MiB decoded (docs/baselines.md), each of at most PACK_TARGET
    plus one text."""
    assert store.CACHE_BYTES >= 16 * (store.PACK_TARGET + 2**20)


def test_verify_reads_and_decodes_each_pack_once(tmp_path, fresh, settled):
    """A compact baseline whose indexes name their packs many times over: verify reads
    and decodes each pack once, and a second verify in the same process none again."""
    from zlbench.gate import baselines
    from zlbench.models import BaselineManifest, load_yaml_model
    from zlbench.runner.compact import compact

    out = tmp_path / "c2"
    compact(Path(__file__).resolve().parents[2] / "baselines" / "v2", out)
    store.clear_cache()
    fresh.update(read=0, decode=0)
    manifest = load_yaml_model(out / "manifest.yaml", BaselineManifest)
    packs = list((out / store.STORE_DIR).glob(f"*{store.PACK_SUFFIX}"))
    named = sum(1 for p in out.glob("*/*/codegen/index.json") if store.STORE_REF in p.read_text())
    assert packs and named > len(packs)
    for _ in range(2):
        assert baselines.verify(out, manifest).ok
        assert fresh == {"read": len(packs), "decode": len(packs)}
