"""Every exit-code path of `zlbench gate` / `report` / `compare` through zlbench.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    ENV,
    brow,
    crow,
    gate,
    one_error_line,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.models import GateVerdict, OpStatus, RunStatus

S = "[1024]"


def base_ops():
    return {"add": [brow("add", S, 1.0), brow("add", "[8]", 2.0)], "mm": [brow("mm", S, 0.8)]}


def good_results():
    return [
        run_result("add", [crow("add", S, 1.0), crow("add", "[8]", 2.02)]),
        run_result("mm", [crow("mm", S, 0.8)]),
    ]


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", base_ops())


def test_pass_exits_0_and_writes_reports(tmp_path, bl, capsys):
    rc, out = gate(tmp_path, bl, write_results(tmp_path / "r", good_results()))
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.verdict == "PASS" and v.exit_code == 0 and v.counts == {"PASS": 3}
    assert (out / "report.md").read_text().startswith("<!-- zlbench-gate -->")
    assert "<testsuites" in (out / "junit.xml").read_text()
    assert "PASS" in capsys.readouterr().out
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize(
    "case",
    ["regression", "fallback", "failed", "timeout", "missing_row", "missing_op"],
)
def test_failing_verdicts_exit_1(tmp_path, bl, case):
    res = good_results()
    statuses = []
    if case == "regression":
        res[0] = run_result("add", [crow("add", S, 0.8), crow("add", "[8]", 2.0)])
    elif case == "fallback":
        res[1] = run_result("mm", [crow("mm", S, 0.8)], markers=[replay_marker()])
    elif case == "failed":
        res[1] = run_result("mm", [], status=RunStatus.FAIL, error="RuntimeError: boom")
    elif case == "timeout":
        res = res[:1]
        statuses = [OpStatus(repo="main", op="mm", run_name="mm", status="TIMEOUT")]
    elif case == "missing_row":
        res[0] = run_result("add", [crow("add", S, 1.0)])
    elif case == "missing_op":
        res = res[:1]
    rc, out = gate(tmp_path, bl, write_results(tmp_path / "r", res, statuses))
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.verdict == "FAIL"
    junit = (out / "junit.xml").read_text()
    assert "<failure" in junit or "<error" in junit


def test_improvement_and_new_do_not_fail(tmp_path, bl):
    res = good_results()
    res[0] = run_result(
        "add", [crow("add", S, 1.5), crow("add", "[8]", 2.0), crow("add", "[9]", 1.0)]
    )
    rc, out = gate(tmp_path, bl, write_results(tmp_path / "r", res))
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.counts == {"PASS": 2, "IMPROVEMENT": 1, "NEW": 1}


def test_env_mismatch_exits_2_unless_allowed(tmp_path, bl, capsys):
    a100 = ENV.model_copy(update={"gpu_model": "NVIDIA A100-SXM4-80GB"})
    res = [run_result(r.run_name, r.rows, env=a100) for r in good_results()]
    rdir = write_results(tmp_path / "r", res)
    rc, out = gate(tmp_path, bl, rdir)
    assert rc == 2
    line = one_error_line(capsys)
    assert "gpu_model" in line and "A100" in line and "--allow-env-mismatch" in line
    assert "mismatch" in (out / "report.md").read_text()
    rc, out = gate(tmp_path, bl, rdir, "--allow-env-mismatch")
    assert rc == 0
    md = (out / "report.md").read_text()
    assert "Judged despite an environment mismatch" in md and "A100" in md
    assert 'name="mismatch.gpu_model" value="allowed"' in (out / "junit.xml").read_text()


def test_nothing_measured_exits_2(tmp_path, bl, capsys):
    res = [run_result(n, [], status=RunStatus.CRASH) for n in ("add", "mm")]
    rc, out = gate(tmp_path, bl, write_results(tmp_path / "r", res))
    assert rc == 2
    assert "nothing measured" in one_error_line(capsys)
    assert 'type="ERROR"' in (out / "junit.xml").read_text()


def test_empty_results_dir_exits_2(tmp_path, bl, capsys):
    (tmp_path / "r").mkdir()
    rc, _ = gate(tmp_path, bl, tmp_path / "r")
    assert rc == 2
    assert "not a results dir" in one_error_line(capsys)


def test_other_op_set_exits_2(tmp_path, bl, capsys):
    res = [run_result("softmax", [crow("softmax", S, 1.0)])]
    rc, _ = gate(tmp_path, bl, write_results(tmp_path / "r", res))
    assert rc == 2
    line = one_error_line(capsys)
    assert "another op set" in line and "main/softmax" in line


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("manifest_field", ["manifest.yaml", "gpu_count"]),
        ("manifest_yaml", ["manifest.yaml", "not valid YAML"]),
        ("manifest_missing", ["manifest.yaml", "not found"]),
        ("thresholds", ["thr.yaml", "default"]),
        ("result_truncated", ["result.json", "not valid JSON"]),
        ("result_field", ["result.json", "status"]),
        ("baseline_result", ["add", "result.json"]),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, bl, capsys, breakage, expected):
    rdir = write_results(tmp_path / "r", good_results())
    extra = []
    if breakage == "manifest_field":
        text = (bl / "manifest.yaml").read_text().replace("gpu_count: 1", "gpu_count: many")
        (bl / "manifest.yaml").write_text(text)
    elif breakage == "manifest_yaml":
        (bl / "manifest.yaml").write_text("name: [unclosed\n")
    elif breakage == "manifest_missing":
        (bl / "manifest.yaml").unlink()
    elif breakage == "thresholds":
        (tmp_path / "thr.yaml").write_text("default: 7\n")
        extra = ["--thresholds", str(tmp_path / "thr.yaml")]
    elif breakage == "result_truncated":
        f = rdir / "main" / "add" / "result.json"
        f.write_text(f.read_text()[:100])
    elif breakage == "result_field":
        f = rdir / "main" / "add" / "result.json"
        f.write_text(f.read_text().replace('"PASS"', '"MAYBE"'))
    elif breakage == "baseline_result":
        (bl / "main" / "add" / "result.json").unlink()
    rc, out = gate(tmp_path, bl, rdir, *extra)
    assert rc == 2
    line = one_error_line(capsys)
    for word in expected:
        assert word in line
    assert not (out / "verdict.json").exists()


def test_ops_narrow_the_judged_set(tmp_path, bl):
    res = good_results()[:1]  # mm not measured: missing unless narrowed away
    rdir = write_results(tmp_path / "r", res)
    assert gate(tmp_path, bl, rdir)[0] == 1
    assert gate(tmp_path, bl, rdir, "--ops", "add")[0] == 0
    (tmp_path / "ops.txt").write_text("# gate set\nadd  # the one\n")
    assert gate(tmp_path, bl, rdir, "--ops-file", str(tmp_path / "ops.txt"))[0] == 0


def test_ops_outside_the_baseline_exit_2(tmp_path, bl, capsys):
    rc, _ = gate(tmp_path, bl, write_results(tmp_path / "r", good_results()), "--ops", "nope")
    assert rc == 2 and "'nope' names no op of baseline" in one_error_line(capsys)


@pytest.mark.parametrize("flag", [("--confirm", "2"), ("--shard", "1/2")])
def test_results_with_shard_or_confirm_is_refused(tmp_path, bl, capsys, flag):
    rdir = write_results(tmp_path / "r", good_results())
    assert gate(tmp_path, bl, rdir, *flag)[0] == 2
    assert "not with --results" in one_error_line(capsys)


def test_step_summary_is_appended(tmp_path, bl, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    gate(tmp_path, bl, write_results(tmp_path / "r", good_results()))
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "zlbench gate: PASS" in text


def slowed():
    res = good_results()
    res[0] = run_result("add", [crow("add", S, 0.8), crow("add", "[8]", 2.0)])
    return res


def test_bad_shard_spec_exits_2(tmp_path, bl, capsys):
    assert main(["gate", "--baseline", str(bl), "--shard", "4/3", "--out", str(tmp_path)]) == 2
    assert "shard" in one_error_line(capsys)


# --------------------------------------------------------------------------- report / compare


def test_report_rerenders_a_results_dir(tmp_path, bl):
    rdir = write_results(tmp_path / "r", good_results())
    out = tmp_path / "rep"
    assert main(["report", str(rdir), "--baseline", str(bl), "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {
        "junit.xml",
        "report.md",
        "comment.md",
        "report.html",
        "verdict.json",
    }
    assert (out / "comment.md").read_text().startswith("<!-- zlbench-gate -->")
    assert "<!DOCTYPE html>" in (out / "report.html").read_text()[:200]
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "PASS"


def test_gate_help_lists_the_design_flags(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = capsys.readouterr().out
    for flag in (
        "--baseline",
        "--ops",
        "--ops-file",
        "--shard",
        "--results",
        "--thresholds",
        "--allow-env-mismatch",
        "--confirm",
        "--out",
    ):
        assert flag in text


def test_no_absolute_path_in_reproduce(tmp_path, bl, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_results(Path("r"), slowed())
    rc = main(["gate", "--baseline", "bl", "--results", "r", "--out", "o"])
    assert rc == 1
    md = Path("o/report.md").read_text()
    assert '--replay-from "bl/$REPO/$RUN" --out "repro/$RUN"' in md  # the one template
    v = GateVerdict.model_validate_json(Path("o/verdict.json").read_text())
    (op,) = [o for o in v.ops if o.reproduce]
    assert "--replay-from bl/main/add --out repro/add" in op.reproduce
    assert str(tmp_path) not in md and str(tmp_path) not in op.reproduce
