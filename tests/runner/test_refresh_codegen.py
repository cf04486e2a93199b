"""A refreshed baseline keeps each op's codegen records (docs/baselines.md), under
the manifest's content hashes: `baseline verify` and the gate's baseline check
refuse a baseline whose records were touched; a baseline without any (v1) still
verifies. The batches are synthetic (a fake batch runner), so no GPU or compile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.batch_fakes import refresh_with_fake_batches, write_one_row_pass
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import verify
from zlbench.gate.load import load_baseline
from zlbench.models import (
    BaselineManifest,
    CodegenIndex,
    Environment,
    OpStatus,
    RunStatus,
    dump_json_model,
    load_codegen_index,
    load_yaml_model,
)
from zlbench.models.codegen import (
    CompileRecord,
    CompileRequest,
    CompileResult,
    CompilerIdentity,
    KernelConfig,
    KernelSource,
    StageDigest,
    Target,
    blob_digest,
)
from zlbench.runner.batch.config import BatchConfig, BatchOutcome

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV = Environment(gpu_model="NVIDIA H200", gpu_count=1, triton_version="3.6.0")
# op -> the passes whose run dir holds codegen records
RECORDED = {"add": ("record", "replay"), "mm": ("record",), "softmax": ()}


def _record(kernel: str, tag: str, cg_dir: Path) -> CompileRecord:
    """One compiled kernel whose stage texts carry ``tag``; its blobs under ``cg_dir``."""
    stages = {}
    for stage in ("ttgir", "ptx"):
        data = f"{stage} of {kernel} in the {tag} pass\n".encode()
        digest, gz = blob_digest(data)
        (cg_dir / "blobs").mkdir(parents=True, exist_ok=True)
        (cg_dir / "blobs" / f"{digest}.gz").write_bytes(gz)
        stages[stage] = StageDigest(
            sha256=digest, size=len(data), compressed_size=len(gz), blob=f"blobs/{digest}.gz"
        )
    req = CompileRequest(
        kernel=KernelSource(
            name=kernel, module="flag_gems.ops.x", qualname=kernel, source_sha256="0" * 64
        ),
        signature={"x_ptr": "*fp32"},
        config=KernelConfig(num_warps=4, num_stages=3),
        target=Target(backend="cuda", arch=90, warp_size=32),
    )
    # The record pass compiles; a replay pass run with --precompile-jobs is served
    # from the shared cache (cache hits: no compile times).
    timing = {"times": {"ttgir": 0.25, "ptx": 0.5}} if tag == "record" else {"cache_hit": True}
    result = CompileResult(
        stages=stages, compiler=CompilerIdentity(distribution="triton", version="3.6.0"), **timing
    )
    return CompileRecord(id=req.key(), request=req, result=result)


def _write_pass(out: Path, tag: str) -> BatchOutcome:
    statuses = []
    for op, passes in RECORDED.items():
        run_dir = out / "main" / op
        write_one_row_pass(run_dir, op, "record" if tag == "record" else "replay", ENV)
        if tag in passes:
            cg = run_dir / "codegen"
            index = CodegenIndex(records=[_record(f"{op}_kernel", tag, cg)])
            dump_json_model(cg / "index.json", index)
        statuses.append(OpStatus(repo="main", op=op, run_name=op, status=RunStatus.PASS, rows=1))
    return BatchOutcome(out_dir=out, statuses=statuses, counts={}, summary_rows=0, exit_code=0)


def _fake_batch(cfg: BatchConfig) -> BatchOutcome:
    return _write_pass(Path(cfg.out_dir), "record" if cfg.replay_root is None else "replay")


@pytest.fixture
def base(tmp_path) -> Path:
    return refresh_with_fake_batches(tmp_path, _fake_batch)


def _tags(op_dir: Path) -> set[str]:
    """Which pass the op's codegen records came from (the tag in its stage texts)."""
    from zlbench.models.codegen import read_blob

    index = load_codegen_index(op_dir)
    texts = [
        read_blob(op_dir / "codegen", d).decode()
        for r in index.records
        for d in r.result.stages.values()
    ]
    return {t.split(" in the ")[1].split()[0] for t in texts}


def test_cache_hit_records_take_their_compile_times_from_the_pass_that_compiled(base):
    """baselines/v2's replay pass ran with precompile: its screens showed no compile
    time; the record pass had compiled the same kernels."""
    (rec,) = load_codegen_index(base / "main" / "add").records
    assert _tags(base / "main" / "add") == {"replay"}  # the digests stay the replay's
    assert rec.result.times == {"ttgir": 0.25, "ptx": 0.5} and not rec.result.cache_hit


def test_refresh_keeps_the_replay_pass_records_else_the_record_pass(base):
    assert _tags(base / "main" / "add") == {"replay"}
    assert _tags(base / "main" / "mm") == {"record"}  # replay 1 recorded nothing
    assert not (base / "main" / "softmax" / "codegen").exists()


def test_codegen_records_are_under_the_manifest_hashes(base):
    m = load_yaml_model(base / "manifest.yaml", BaselineManifest)
    cg_files = sorted(f for f in m.files if "/codegen/" in f)
    on_disk = sorted(
        p.relative_to(base).as_posix() for p in base.glob("*/*/codegen/**/*") if p.is_file()
    )
    assert cg_files == on_disk and len(cg_files) == 2 * (1 + 2)  # index + 2 blobs, 2 ops
    rep = verify(base, m)
    assert rep.ok, rep.problems
    assert rep.codegen_ops == 2


def _first_blob(base: Path) -> Path:
    return sorted((base / "main" / "add" / "codegen" / "blobs").iterdir())[0]


@pytest.mark.parametrize("tamper", ["blob_changed", "blob_added", "index_removed"])
def test_touched_codegen_records_refuse_the_baseline(base, tamper, capsys):
    blob = _first_blob(base)
    if tamper == "blob_changed":
        blob.write_bytes(blob.read_bytes() + b"\0")
    elif tamper == "blob_added":
        shutil.copyfile(blob, blob.with_name("f" * 64 + ".gz"))
    else:
        (base / "main" / "add" / "codegen" / "index.json").unlink()
    assert main(["baseline", "verify", str(base)]) == 1
    out = capsys.readouterr().out
    assert "FAIL main/add/codegen/" in out
    with pytest.raises(ZlbenchError, match="does not match its manifest: main/add/codegen/"):
        load_baseline(base)


def test_verify_names_a_corrupt_index_even_when_hashes_were_rebuilt(base):
    index = base / "main" / "mm" / "codegen" / "index.json"
    index.write_text("{not json")
    m = load_yaml_model(base / "manifest.yaml", BaselineManifest)
    from zlbench.gate.baselines import content_hashes

    rep = verify(base, m.model_copy(update={"files": content_hashes(base)}))
    assert len(rep.problems) == 1 and "main/mm/codegen/index.json" in rep.problems[0]


def test_v1_without_codegen_still_verifies_with_a_note(capsys):
    v1 = REPO_ROOT / "baselines" / "v1"
    assert not list(v1.glob("*/*/codegen"))
    rep = verify(v1, load_yaml_model(v1 / "manifest.yaml", BaselineManifest))
    assert rep.ok and rep.codegen_ops == 0
    assert main(["baseline", "verify", str(v1)]) == 0
    assert "no codegen records" in capsys.readouterr().out


def test_compile_times_are_not_borrowed_from_another_compiler(tmp_path):
    from zlbench.gate.baselines import with_compile_times

    cached = _record("k", "replay", tmp_path / "a")
    compiled = _record("k", "record", tmp_path / "b")
    other = compiled.model_copy(
        update={
            "result": compiled.result.model_copy(
                update={"compiler": CompilerIdentity(distribution="triton", version="3.7.0")}
            )
        }
    )
    index = CodegenIndex(records=[cached])
    (kept,) = with_compile_times(index, [CodegenIndex(records=[other])]).records
    assert kept.result.cache_hit and kept.result.times == {}
    (filled,) = with_compile_times(index, [CodegenIndex(records=[compiled])]).records
    assert filled.result.times == {"ttgir": 0.25, "ptx": 0.5}
