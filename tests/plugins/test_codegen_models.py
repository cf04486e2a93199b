"""The codegen record models: the request id, blobs, loading (pure: no triton)."""

from __future__ import annotations

import json

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import (
    AttrValue,
    CodegenIndex,
    CompileRecord,
    CompileRequest,
    ConstValue,
    KernelConfig,
    KernelSource,
    StageDigest,
    Target,
    blob_digest,
    codegen_dir,
    load_codegen_index,
    read_blob,
)


def _request(**change) -> CompileRequest:
    data = dict(
        kernel=KernelSource(name="add_kernel", module="flag_gems.ops.add", qualname="add_kernel",
                            path="flag_gems/ops/add.py", source_sha256="a" * 64),
        signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs=[ConstValue(path=[2], kind="int", value=256)],
        attrs=[AttrValue(path=[0], attrs=[["tt.divisibility", 16]])],
        config=KernelConfig(num_warps=4, num_stages=3),
        target=Target(backend="cuda", arch=90, warp_size=32),
    )  # fmt: skip
    data.update(change)
    return CompileRequest(**data)


def test_request_id_survives_a_json_round_trip_and_key_order():
    req = _request()
    again = CompileRequest.model_validate(json.loads(req.model_dump_json()))
    assert again.key() == req.key() and len(req.key()) == 16
    shuffled = _request(signature={"BLOCK": "constexpr", "n": "i32", "x_ptr": "*fp32"})
    assert shuffled.key() == req.key()


@pytest.mark.parametrize(
    "change",
    [
        {"config": KernelConfig(num_warps=8, num_stages=3)},
        {"options": {"num_warps": 8}},
        {"constexprs": [ConstValue(path=[2], kind="int", value=512)]},
        {"attrs": []},
        {"target": Target(backend="cuda", arch=100, warp_size=32)},
        {"signature": {"x_ptr": "*bf16", "n": "i32", "BLOCK": "constexpr"}},
    ],
)
def test_request_id_changes_with_anything_that_changes_the_compile(change):
    assert _request(**change).key() != _request().key()


def test_blobs_are_deterministic_and_checked_on_read(tmp_path):
    sha, gz = blob_digest(b"tt.func @k\n")
    assert blob_digest(b"tt.func @k\n") == (sha, gz)  # gzip without a timestamp
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / f"{sha}.gz").write_bytes(gz)
    digest = StageDigest(sha256=sha, size=11, compressed_size=len(gz), blob=f"blobs/{sha}.gz")
    assert read_blob(tmp_path, digest) == b"tt.func @k\n"
    _, other = blob_digest(b"tt.func @x\n")  # same size, other bytes
    (tmp_path / "blobs" / f"{sha}.gz").write_bytes(other)
    with pytest.raises(ZlbenchError, match="sha256 mismatch"):
        read_blob(tmp_path, digest)
    with pytest.raises(ZlbenchError, match="codegen blob missing"):
        read_blob(tmp_path, digest.model_copy(update={"blob": "blobs/none.gz"}))


def test_index_loading_refuses_an_unknown_schema_version_in_one_line(tmp_path):
    index = CodegenIndex(records=[CompileRecord(id=_request().key(), request=_request())])
    cg = codegen_dir(tmp_path)
    cg.mkdir()
    (cg / "index.json").write_text(
        index.model_dump_json().replace('"schema_version":1', '"schema_version":9')
    )
    with pytest.raises(ZlbenchError, match="schema_version 9 is not supported") as e:
        load_codegen_index(tmp_path)
    assert "\n" not in str(e.value)
    (cg / "index.json").write_text(index.model_dump_json())
    assert load_codegen_index(tmp_path) == index
