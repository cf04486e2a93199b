"""Baseline sets: aggregation of replay passes, verify, show, --commit (issue 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.gate.baselines import aggregate_op, usable
from zlbench.models import (
    BaselineManifest,
    BaselineResult,
    Row,
    RunResult,
    RunStatus,
    load_codegen_index,
    load_json_model,
    load_yaml_model,
)
from zlbench.runner.refresh import commit_baseline, commit_message

SHIPPED = Path(__file__).resolve().parents[2] / "baselines" / "v1"


def _run(speedups: dict[str, float], status=RunStatus.PASS, markers=None) -> RunResult:
    rows = [
        Row(op="add", dtype="bfloat16", shape=s, latency_base_ms=1.0, latency_ms=1 / sp, speedup=sp)
        for s, sp in speedups.items()
    ]
    return RunResult(
        repo="main",
        run_name="add",
        op="add",
        status=status,
        mode="replay",
        timing="cudagraph",
        rows=rows,
        marker_counts=markers or {},
    )


def test_aggregate_takes_the_median_and_the_largest_deviation():
    record = _run({"[1]": 1.0})
    reps = [_run({"[1]": 1.00, "[2]": 2.0}), _run({"[1]": 1.10, "[2]": 2.0}), _run({"[1]": 0.95})]
    res = aggregate_op(record, reps)
    # [2] was not measured by the third pass: it cannot enter the baseline
    assert [r.shape for r in res.rows] == ["[1]"]
    row = res.rows[0]
    assert row.speedup == pytest.approx(1.0) and row.repeats == 3
    assert row.speedups == [1.0, 1.1, 0.95]
    assert row.noise == pytest.approx(0.10)


@pytest.mark.parametrize(
    "third, kept",
    [(1.5, False), (float("inf"), False), (float("nan"), False), (1.45, True)],
)
def test_aggregate_leaves_out_a_row_too_noisy_to_judge(third, kept):
    # median 1.0; a pass at 1.5 is 50 % off it: no threshold could judge that row
    reps = [_run({"[1]": 1.0, "[2]": 2.0}), _run({"[1]": 1.0, "[2]": 2.0}), _run({"[1]": third})]
    reps[2].rows.append(_run({"[2]": 2.0}).rows[0])
    res = aggregate_op(_run({"[1]": 1.0}), reps)
    assert [r.shape for r in res.rows] == (["[1]", "[2]"] if kept else ["[2]"])


@pytest.mark.parametrize(
    "record, replays, why",
    [
        (None, [], "record pass left no result.json"),
        (_run({}, RunStatus.FAIL), [], "record pass FAIL"),
        (_run({}), [None], "replay pass 1 left no result.json"),
        (_run({}), [_run({}), _run({}, RunStatus.CRASH)], "replay pass 2 CRASH"),
        (
            _run({}),
            [_run({}, markers={"AUTOTUNE_REPLAY_FALLBACK key_missing": 1})],
            "replay pass 1 fell back",
        ),
    ],
)
def test_unusable_ops_say_why(record, replays, why):
    assert why in usable(record, replays)


def test_usable_op():
    assert usable(_run({}), [_run({}), _run({})]) is None


@pytest.fixture
def copy_v1(tmp_path) -> Path:
    dst = tmp_path / "v1"
    shutil.copytree(SHIPPED, dst)
    return dst


def test_shipped_v1_verifies_and_shows(copy_v1, capsys):
    assert main(["baseline", "verify", str(copy_v1)]) == 0
    assert main(["baseline", "show", str(copy_v1), "--table"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "main/mm__at__test_mm.py" in out and "row noise" in out


def test_shipped_v2_verifies_and_every_op_has_codegen_records_naming_its_rows():
    """v2 (H200, 2026-11-30) is the first baseline the codegen screen can prove ops
    unchanged against: every op keeps the compile records of every row it launched."""
    v2 = SHIPPED.parent / "v2"
    assert main(["baseline", "verify", str(v2)]) == 0
    manifest = load_yaml_model(v2 / "manifest.yaml", BaselineManifest)
    assert manifest.gpu_model == "NVIDIA H200" and manifest.repeats == 2
    for key in manifest.ops:
        index = load_codegen_index(v2 / key)
        assert index is not None and index.records, key
        result = load_json_model(v2 / key / "result.json", BaselineResult)
        launched = {(u.dtype, u.shape) for rec in index.records for u in rec.used_by}
        assert {(r.dtype, r.shape) for r in result.rows} <= launched, key
    assert not any("/tmp/" in p.read_text() for p in v2.rglob("*.ttgir"))


def test_verify_catches_a_deleted_record_file(copy_v1, capsys):
    rec = next((copy_v1 / "main" / "mm__at__test_mm.py" / "autotune_records").glob("*.json"))
    rec.unlink()
    assert main(["baseline", "verify", str(copy_v1)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL main/mm__at__test_mm.py/autotune_records/{rec.name}: missing" in out
    assert "main/mm__at__test_mm.py: no autotune records" in out


def test_verify_catches_an_edited_row(copy_v1, capsys):
    path = copy_v1 / "main" / "softmax" / "result.json"
    data = json.loads(path.read_text())
    data["rows"][0]["speedup"] *= 1.5
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert main(["baseline", "verify", str(copy_v1)]) == 1
    assert "main/softmax/result.json: content changed" in capsys.readouterr().out


def test_verify_reports_a_broken_manifest_in_one_line(copy_v1, capsys):
    (copy_v1 / "manifest.yaml").write_text("name: v1\ncreated: [unclosed\n")
    assert main(["baseline", "verify", str(copy_v1)]) == 2
    err = capsys.readouterr().err.strip()
    assert "manifest.yaml: not valid YAML" in err and "\n" not in err


def test_commit_creates_a_branch_with_a_summary(tmp_path):
    git = pytest.importorskip("git")
    repo = git.Repo.init(tmp_path / "repo")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t")
        cw.set_value("user", "email", "t@example.com")
    (tmp_path / "repo" / "README").write_text("x\n")
    repo.git.add("README")
    repo.git.commit("-q", "-m", "init")  # git itself (index.commit failed under xdist)
    out = tmp_path / "repo" / "baselines" / "v1"
    shutil.copytree(SHIPPED, out)
    manifest = load_yaml_model(out / "manifest.yaml", BaselineManifest)

    assert commit_baseline(out, manifest) == "baseline/v1"
    assert repo.active_branch.name == "baseline/v1"
    msg = repo.head.commit.message
    assert msg == commit_message(manifest)
    assert msg.startswith("Add baseline v1: 34 ops, 49 rows") and "NVIDIA H200" in msg
    assert "baselines/v1/manifest.yaml" in repo.git.show("--name-only", "HEAD")
    assert not repo.is_dirty(untracked_files=True)


def test_reproduce_command_of_a_regression_is_a_runnable_zlbench_run(tmp_path, monkeypatch):
    """A slowed copy of the shipped H200 results: the regressed op's reproduce command
    parses with the real CLI and replays with the baseline's records and shapes."""
    import shlex

    from zlbench.cli import build_parser
    from zlbench.models import GateVerdict, load_json_model

    root = SHIPPED.parents[1]
    results = tmp_path / "results"
    shutil.copytree(root / "examples" / "h200-gate-v1", results)
    path = results / "main" / "softmax" / "result.json"
    data = json.loads(path.read_text())
    for row in data["rows"]:  # FlagGems side 20 % slower
        row["latency_ms"] *= 1.2
        row["speedup"] /= 1.2
    path.write_text(json.dumps(data))
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = tmp_path / "gate"
    rc = main(["gate", "--baseline", "baselines/v1", "--results", str(results), "--out", str(out)])
    assert rc == 1
    v = load_json_model(out / "verdict.json", GateVerdict)
    (op,) = [o for o in v.ops if o.verdict.value == "REGRESSION"]
    assert op.run_name == "softmax"
    argv = shlex.split(op.reproduce)
    assert argv[:2] == ["zlbench", "run"]
    args = build_parser().parse_args(argv[1:])
    assert args.op == "softmax" and args.dtypes == ["bfloat16"] and args.mode == "cudagraph"
    assert str(args.replay_from) == "baselines/v1/main/softmax"
    assert str(args.shape_file) == "baselines/v1/shapes.yaml"
