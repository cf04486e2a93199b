"""benchmarks/full_records.py: the record pass's per-call records merged, packed for git
with the texts decompressed, and unpacked back to the device's layout."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def fr():
    spec = importlib.util.spec_from_file_location("full_records", BENCH / "full_records.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _text(body: str) -> tuple[str, bytes]:
    data = body.encode()
    return hashlib.sha256(data).hexdigest(), data


def _call(path: Path, ops: dict[str, str]) -> Path:
    """A device call's records.tgz: per op an index, a record and one gzip'd text."""
    with tarfile.open(path, "w:gz") as tar:
        for op, body in ops.items():
            sha, data = _text(body)
            files = {
                f"main/{op}/codegen/index.json": f'{{"op": "{op}", "blob": "blobs/{sha}.gz"}}',
                f"main/{op}/autotune_records/{op}.json": f'{{"op": "{op}"}}',
            }
            for name, text in files.items():
                _add(tar, name, text.encode())
            _add(tar, f"main/{op}/codegen/blobs/{sha}.gz", gzip.compress(data))
    return path


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_merge_pack_unpack_round_trip_a_later_call_replacing_an_op(fr, tmp_path):
    one = _call(tmp_path / "1.tgz", {"abs": "tt.func @abs_v1", "cos": "tt.func @cos"})
    two = _call(tmp_path / "2.tgz", {"abs": "tt.func @abs_v2"})
    merged = tmp_path / "merged"
    assert fr.merge(merged, [one, two]) == ["main/abs", "main/cos"]
    blobs = sorted(p.name for p in (merged / "main/abs/codegen/blobs").iterdir())
    assert blobs == [_text("tt.func @abs_v2")[0] + ".gz"]  # call 2's abs, whole

    packed = tmp_path / "records.tar.xz"
    assert fr.pack(merged, packed) == (2, 2)
    with tarfile.open(packed, "r:xz") as tar:
        names = tar.getnames()
        sha = _text("tt.func @cos")[0]
        assert tar.extractfile(f"main/cos/codegen/blobs/{sha}").read() == b"tt.func @cos"
    assert not any(n.endswith(".gz") for n in names)  # stored plain, for xz
    assert not packed.with_name("records.tar.xz.tmp").exists()

    back = tmp_path / "back"
    assert fr.unpack([packed], back) == (2, 2)
    for path in merged.rglob("*"):
        if path.is_file():
            got = (back / path.relative_to(merged)).read_bytes()
            if path.suffix == ".gz":
                assert gzip.decompress(got) == gzip.decompress(path.read_bytes())
            else:
                assert got == path.read_bytes()


def test_unpack_refuses_a_text_that_does_not_match_its_name(fr, tmp_path):
    bad = tmp_path / "bad.tar.xz"
    with tarfile.open(bad, "w:xz") as tar:
        _add(tar, "main/abs/codegen/blobs/" + "0" * 64, b"tt.func @abs")
    with pytest.raises(SystemExit, match="does not match its sha256"):
        fr.unpack([bad], tmp_path / "out")


def test_merge_refuses_a_member_outside_the_dir(fr, tmp_path):
    evil = tmp_path / "evil.tgz"
    with tarfile.open(evil, "w:gz") as tar:
        _add(tar, "../outside/x.json", b"{}")
    with pytest.raises(SystemExit, match="not a plain file inside"):
        fr.merge(tmp_path / "m", [evil])
    assert not (tmp_path / "outside").exists()


def test_unrecorded_unmarks_the_pass_ops_no_pack_holds(fr, tmp_path):
    merged = tmp_path / "merged"
    fr.merge(merged, [_call(tmp_path / "1.tgz", {"abs": "tt.func @abs"})])
    (tmp_path / "packs").mkdir()
    fr.pack(merged, tmp_path / "packs" / "a.tar.xz")
    full = tmp_path / "full"
    for op, status in [("abs", "PASS"), ("cos", "PASS"), ("sin", "SKIP")]:
        (full / "main" / op).mkdir(parents=True)
        (full / "main" / op / ".complete").write_text(status + "\n")
        (full / "main" / op / "run.log").write_text("ZLBENCH_OP_END\n")
    assert fr.forget_unrecorded(full, sorted((tmp_path / "packs").glob("*.tar.xz"))) == ["main/cos"]
    left = sorted(p.parent.name for p in full.glob("main/*/.complete"))
    assert left == ["abs", "sin"]  # recorded, and a SKIP: nothing to record
    assert (full / "main" / "cos" / "run.log").is_file()  # resume runs it after new ops
