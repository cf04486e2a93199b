"""refresh --no-replay --require-codegen --from-work: a baseline assembled from a record
pass alone (docs/baselines.md "v6"), as the whole-inventory record pass leaves it: its
rows are the numbers (one sample, noise 0, the manifest says so), only the PASS ops
whose records were kept enter, their codegen indexes hold digest-only stages (blob
""), and every op left out is listed with why. Synthetic batch dirs, no GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory, write_one_row_pass
from tests.support.cgsynth import COMPILER, request
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import verify
from zlbench.models import (
    BaselineManifest,
    BaselineResult,
    BatchInfo,
    CodegenIndex,
    Environment,
    OpStatus,
    RunStatus,
    dump_json_model,
    load_codegen_index,
    load_json_model,
    load_yaml_model,
    read_ops_status,
)
from zlbench.models.codegen import (
    CompileRecord,
    CompileResult,
    StageDigest,
    blob_digest,
)
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.compact import compact
from zlbench.runner.refresh import NO_CODEGEN, RECORD_NUMBERS, RefreshConfig, refresh

ENV = Environment(gpu_model="NVIDIA H200", triton_dist="triton", triton_version="3.6.0")
# op -> (status in the record pass, its note, records kept)
RECORD = {
    "add": (RunStatus.PASS, "", True),
    "mm": (RunStatus.PASS, "", True),
    "abs": (RunStatus.PASS, "", False),  # done in an earlier device call: records lost
    "conv": (RunStatus.TIMEOUT, "timed out after 300 s", False),
    "beam": (RunStatus.FAIL, "test passed but measured no row", False),
    "swiglu": (RunStatus.SKIP, "", True),  # skipped itself, yet recorded a kernel
}
NOT_RUN = ["zeros"]  # selected, the record pass not there yet
DISMISSED = "tanh"


def _index(cg: Path, kernel: str, block: int = 256) -> CodegenIndex:
    """One kernel (config ``BLOCK=block``) as the record pass keeps it: TTIR and TTGIR
    texts, the other stages' digests only (blob "", as ``gpu_full_screen.sh records``
    and ``compact`` keep them)."""
    stages = {}
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        data = f"{stage} of {kernel} BLOCK={block}\n".encode()
        digest, gz = blob_digest(data)
        blob = ""
        if stage in ("ttir", "ttgir"):
            (cg / "blobs").mkdir(parents=True, exist_ok=True)
            (cg / "blobs" / f"{digest}.gz").write_bytes(gz)
            blob = f"blobs/{digest}.gz"
        stages[stage] = StageDigest(
            sha256=digest, size=len(data), compressed_size=len(gz) if blob else 0, blob=blob
        )
    req = request(kernel, block=block)
    result = CompileResult(stages=stages, compiler=COMPILER)
    return CodegenIndex(records=[CompileRecord(id=req.key(), request=req, result=result)])


@pytest.fixture
def work(tmp_path) -> Path:
    """WORK/record: the record pass's state (ops_status.csv, batch.json, result.json)
    with the kept records (autotune_records/, codegen/) unpacked into its op dirs."""
    rec = tmp_path / "wk" / "record"
    statuses = []
    for op, (status, note, kept) in RECORD.items():
        run_dir = rec / "main" / op
        if status is RunStatus.PASS:
            write_one_row_pass(run_dir, op, "record", ENV)
        if kept:
            (run_dir / "autotune_records").mkdir(parents=True, exist_ok=True)
            (run_dir / "autotune_records" / f"{op}.json").write_text('{"kernels": {}}\n')
            dump_json_model(run_dir / "codegen" / "index.json", _index(run_dir / "codegen", op))
        statuses.append(
            OpStatus(
                repo="main", op=op, run_name=op, status=status, note=note, seconds=12.5, rows=1
            )
        )
    write_ops_status(rec, statuses)
    write_batch_info(rec, BatchInfo(created="2026-01-01T10:00:00Z", mode="record", dtypes=[]))
    return rec.parent


def _ops_dir(tmp_path: Path) -> Path:
    ops = tmp_path / "ops"
    make_inventory(ops, "main", [*RECORD, *NOT_RUN, DISMISSED])
    (ops / "dismiss.txt").write_text(f"main:{DISMISSED}  # 2026-01-01 crashes the driver\n")
    return ops


def _refresh(tmp_path: Path, work: Path, shape_file: Path | None = None, **kw):
    fg = tmp_path / "fg"
    fg.mkdir(exist_ok=True)
    cfg = RefreshConfig(
        out=tmp_path / "baselines" / "v9",
        batch=BatchConfig(
            out_dir=tmp_path / "unused",
            flaggems_dirs={"main": fg},
            ops_dir=_ops_dir(tmp_path),
            all_ops=True,
            dtypes=["bfloat16"],  # the CLI's default: the record pass's batch.json wins
            shape_file=shape_file,
        ),
        from_work=work,
        zlbench_commit="abc",
        **{"repeats": 0, "require_codegen": True, **kw},
    )
    return refresh(cfg)


def test_a_record_pass_alone_gives_its_rows_as_the_numbers(tmp_path, work):
    out = _refresh(tmp_path, work)
    m = load_yaml_model(out.out / "manifest.yaml", BaselineManifest)
    assert m.ops == ["main/add", "main/mm"] and m.repeats == 0
    assert m.summary["numbers"] == RECORD_NUMBERS and m.summary["rows"] == 2
    (row,) = load_json_model(out.out / "main" / "add" / "result.json", BaselineResult).rows
    assert (row.speedup, row.repeats, row.speedups, row.noise) == (2.0, 1, [2.0], 0.0)
    assert m.dtypes == []  # asked for each op's own (batch.json), as a gate must measure
    assert m.summary["refresh_wall_s"] is None  # the record pass stamped no end
    # durations: the record pass's seconds of the ops that entered
    assert [s.run_name for s in read_ops_status(out.out / "ops_status.csv")] == ["add", "mm"]
    rep = verify(out.out, m)
    assert rep.ok, rep.problems
    assert rep.codegen_ops == 2


def test_every_op_left_out_is_listed_with_why(tmp_path, work):
    excluded = _refresh(tmp_path, work).manifest.summary["excluded"]
    assert excluded == {
        "main/abs": NO_CODEGEN,
        "main/conv": "record pass TIMEOUT: timed out after 300 s",
        "main/beam": "record pass FAIL: test passed but measured no row",
        "main/swiglu": "record pass SKIP",
        "main/tanh": "dismissed 2026-01-01: crashes the driver",
        "main/zeros": "record pass did not run it",
    }


def test_without_require_codegen_an_op_without_records_enters_unpinned(tmp_path, work):
    out = _refresh(tmp_path, work, require_codegen=False)
    assert "main/abs" in out.manifest.ops
    assert not (out.out / "main" / "abs" / "codegen").exists()


def test_digest_only_stages_are_kept_and_compact(tmp_path, work):
    """Stages with blob "" keep their digests through refresh and compact; only the
    TTIR/TTGIR texts the record pass kept are stored."""
    out = _refresh(tmp_path, work)
    (rec,) = load_codegen_index(out.out / "main" / "add").records
    assert {s: bool(d.blob) for s, d in rec.result.stages.items()} == {
        "ttir": True,
        "ttgir": True,
        "llir": False,
        "ptx": False,
        "sass": False,
    }
    m, done = compact(out.out, tmp_path / "baselines" / "v10")
    assert done.texts == 4 and done.digests_only == 6  # 2 kernels x (2 texts, 3 digests)
    assert verify(tmp_path / "baselines" / "v10", m).ok
    (crec,) = load_codegen_index(tmp_path / "baselines" / "v10" / "main" / "add").records
    assert {s: d.sha256 for s, d in crec.result.stages.items()} == {
        s: d.sha256 for s, d in rec.result.stages.items()
    }


def test_a_record_pass_of_another_shape_file_is_refused(tmp_path, work):
    write_batch_info(
        work / "record",
        BatchInfo(created="2026-01-01T10:00:00Z", shape_file_sha256="f" * 64),
    )
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("{}\n")
    with pytest.raises(ZlbenchError, match="another shape file"):
        _refresh(tmp_path, work, shape_file=shapes)
    assert not (tmp_path / "baselines" / "v9").exists()


def test_cli_no_replay(tmp_path, work, capsys, monkeypatch):
    fg = tmp_path / "fg"
    fg.mkdir()
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(fg))
    argv = ["baseline", "refresh", "--out", str(tmp_path / "v9"), "--all"]
    argv += ["--ops-dir", str(_ops_dir(tmp_path)), "--from-work", str(work)]
    argv += ["--no-replay", "--require-codegen", "--shape-file", str(tmp_path / "s.yaml")]
    (tmp_path / "s.yaml").write_text("{}\n")
    assert main([*argv, "--repeats", "1"]) == 2
    assert "--no-replay and --repeats" in capsys.readouterr().err
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "baseline v9: 2 ops, 2 rows" in out
    assert f"left out main/abs: {NO_CODEGEN}" in out
    m = load_yaml_model(tmp_path / "v9" / "manifest.yaml", BaselineManifest)
    assert m.repeats == 0 and m.summary["numbers"] == RECORD_NUMBERS


def test_a_sweeps_unpinned_configs_leave_the_record_passs_codegen(tmp_path, work):
    # the record pass compiled two configs of an autotuned kernel; its records pinned
    # one: a replay launches only that one, so only its record enters the baseline
    run_dir = work / "record" / "main" / "mm"
    recs = [r for b in (64, 128) for r in _index(run_dir / "codegen", "mm_kernel", b).records]
    dump_json_model(run_dir / "codegen" / "index.json", CodegenIndex(records=recs))
    pin = {"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 3}
    records = {"schema_version": 1, "kind": "autotune_record_set",
               "kernels": {"flag_gems.ops.x:mm_kernel": {"[1024]": pin}}}  # fmt: skip
    (run_dir / "autotune_records" / "mm.json").write_text(json.dumps(records))
    out = _refresh(tmp_path, work)
    kept = load_codegen_index(out.out / "main" / "mm")
    assert [r.id for r in kept.records] == [recs[0].id]
    loser = [d.blob for d in recs[1].result.stages.values() if d.blob]
    assert loser and not any((out.out / "main" / "mm" / "codegen" / b).exists() for b in loser)
    assert verify(out.out, out.manifest).ok


# --------------------------------------------------------------------------- FlagGems commit


def _ran(work: Path, commits: dict[str, str | None]) -> None:
    """The record pass's add and mm ran FlagGems ``commits[op]`` (None: a checkout
    without .git, as a tarball unpacked on the device names none)."""
    for op, commit in commits.items():
        env = ENV.model_copy(update={"flaggems_commit": commit, "flaggems_dirty": False})
        write_one_row_pass(work / "record" / "main" / op, op, "record", env)


def test_the_manifest_names_the_flaggems_commit_that_ran(tmp_path, work):
    """Assembled with a checkout that names no commit (tmp_path/fg has no .git): the
    manifest takes the results' commit, not the assembler's checkout's."""
    _ran(work, {"add": "ed2508bcb5a0" + "0" * 28, "mm": "ed2508bcb5a0" + "0" * 28})
    m = _refresh(tmp_path, work).manifest
    assert m.flaggems["main"] == {"package": None, "commit": "ed2508bcb5a0" + "0" * 28,
                                  "dirty": False}  # fmt: skip


def test_results_that_name_no_commit_are_counted(tmp_path, work):
    _ran(work, {"add": "ed2508bcb5a0" + "0" * 28, "mm": None})
    fg = _refresh(tmp_path, work).manifest.flaggems["main"]
    assert fg["commit"] == "ed2508bcb5a0" + "0" * 28 and fg["results_without_commit"] == 1


def test_results_of_two_flaggems_commits_are_refused_and_nothing_is_written(tmp_path, work):
    _ran(work, {"add": "a" * 40, "mm": "b" * 40})
    with pytest.raises(ZlbenchError, match=r"2 FlagGems commits \(aaaaaaaaaaaa, bbbbbbbbbbbb\)"):
        _refresh(tmp_path, work)
    assert not (tmp_path / "baselines" / "v9").exists()


def test_results_that_name_none_take_the_checkouts_commit(tmp_path, work):
    """No result names a commit: the checkout's state (here: none, it has no .git)."""
    _ran(work, {"add": None, "mm": None})
    fg = _refresh(tmp_path, work).manifest.flaggems["main"]
    assert fg["commit"] is None and "results_without_commit" not in fg
