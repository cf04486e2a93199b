"""One rule for conflicting records (issue 16, docs/judging.md "Conflicting records"):
a record zlbench writes once (an op's ops_status.csv row, a row key of a
result.json, a result.json per op) found twice is an error, exit 2; the runner's
status and the benchmark's own result.json may disagree, and then the worse
status is judged. Never the last one read."""

from __future__ import annotations

import json

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    gate,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
    write_status,
)
from zlbench.gate.baselines import content_hashes
from zlbench.models import (
    GateVerdict,
    OpStatus,
    RunStatus,
    dump_json_model,
    dump_yaml_model,
    load_yaml_model,
)
from zlbench.models.baseline import BaselineManifest

S = "[1024]"


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})


def status(st: RunStatus, run_dir="main/add", run_name="add") -> OpStatus:
    return OpStatus(repo="main", op=run_name, run_name=run_name, status=st, run_dir=run_dir)


@pytest.mark.parametrize(
    "first, second", [(RunStatus.FAIL, RunStatus.PASS), (RunStatus.PASS, RunStatus.PASS)]
)
def test_an_op_listed_twice_in_ops_status_is_an_error(tmp_path, bl, capsys, first, second):
    r = write_results(tmp_path / "r", [run_result("add", [crow("add", S, 1.0)])])
    write_status(r, status(first), status(second))
    rc, out = gate(tmp_path, bl, r)
    assert rc == 2
    line = one_error_line(capsys)
    assert "ops_status.csv:3" in line and "main/add" in line and "line 2" in line
    assert not (out / "verdict.json").exists()


def test_a_row_key_twice_in_result_json_is_an_error(tmp_path, bl, capsys):
    # the slower row first: a last-wins reader judged the faster one
    rows = [crow("add", S, 0.5), crow("add", S, 1.0)]
    r = write_results(tmp_path / "r", [run_result("add", rows)])
    rc, _ = gate(tmp_path, bl, r)
    assert rc == 2
    line = one_error_line(capsys)
    assert "main/add/result.json" in line and "twice" in line and S in line


def test_a_row_key_twice_in_a_confirm_pass_is_an_error(tmp_path, bl, capsys):
    write_results(tmp_path / "g" / "results", [run_result("add", [crow("add", S, 0.5)])])
    rows = [crow("add", S, 0.5), crow("add", S, 1.0)]
    write_results(tmp_path / "g" / "confirm" / "1", [run_result("add", rows)])
    rc, _ = gate(tmp_path, bl, tmp_path / "g")
    assert rc == 2
    assert "confirm/1/main/add/result.json" in one_error_line(capsys)


def test_a_row_key_twice_in_the_baseline_is_an_error(tmp_path, capsys):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0), brow("add", S, 0.5)]})
    m = load_yaml_model(bl / "manifest.yaml", BaselineManifest)
    m.files = content_hashes(bl)
    dump_yaml_model(bl / "manifest.yaml", m)
    r = write_results(tmp_path / "r", [run_result("add", [crow("add", S, 1.0)])])
    rc, _ = gate(tmp_path, bl, r)
    assert rc == 2
    line = one_error_line(capsys)
    assert "bl/main/add/result.json" in line and "twice" in line


@pytest.mark.parametrize(
    ("in_status", "in_result"),
    [
        (RunStatus.PASS, RunStatus.FAIL),
        (RunStatus.FAIL, RunStatus.PASS),
        (RunStatus.TIMEOUT, RunStatus.PASS),
        (RunStatus.SKIP, RunStatus.CRASH),
    ],
)
def test_status_and_result_disagreeing_judge_the_worse(tmp_path, bl, in_status, in_result):
    res = run_result("add", [crow("add", S, 1.0)], status=in_result)
    r = write_results(tmp_path / "r", [res], [status(in_status)])
    rc, out = gate(tmp_path, bl, r)
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    worse = in_result if in_status in (RunStatus.PASS, RunStatus.SKIP) else in_status
    assert v.ops[0].verdict == "FAILED" and f"op {worse.value}" in v.ops[0].reason


def test_a_skip_beside_a_measured_result_is_judged_on_its_rows(tmp_path, bl):
    # SKIP is the most lenient status: a PASS result.json with rows is judged
    res = run_result("add", [crow("add", S, 0.5)])
    r = write_results(tmp_path / "r", [res], [status(RunStatus.SKIP)])
    rc, out = gate(tmp_path, bl, r)
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.ops[0].verdict == "REGRESSION"


def test_a_result_of_another_op_in_a_listed_run_dir_is_an_error(tmp_path, bl, capsys):
    r = write_results(tmp_path / "r", [run_result("mm", [crow("mm", S, 1.0)])], [])
    write_status(r, status(RunStatus.PASS, run_dir="main/mm"))
    rc, _ = gate(tmp_path, bl, r)
    assert rc == 2
    line = one_error_line(capsys)
    assert "main/mm/result.json" in line and "main/add" in line


def test_two_result_files_claiming_one_op_are_an_error(tmp_path, bl, capsys):
    # ops_status lists main/add; a second run dir holds a result.json saying it is main/add
    r = write_results(tmp_path / "r", [run_result("add", [crow("add", S, 1.0)])])
    forged = run_result("add", [crow("add", S, 0.5)], status=RunStatus.FAIL)
    dump_json_model(r / "main" / "zzz" / "result.json", forged)
    rc, _ = gate(tmp_path, bl, r)
    assert rc == 2
    line = one_error_line(capsys)
    assert "main/zzz/result.json" in line and "main/add" in line


def test_two_unlisted_result_files_claiming_one_op_are_an_error(tmp_path, bl, capsys):
    r = tmp_path / "r"
    for d, speedup in (("add", 1.0), ("zzz", 0.5)):
        res = run_result("add", [crow("add", S, speedup)])
        (r / "main" / d).mkdir(parents=True)
        (r / "main" / d / "result.json").write_text(json.dumps(res.model_dump(mode="json")))
    rc, _ = gate(tmp_path, bl, r)
    assert rc == 2
    assert "main/add" in one_error_line(capsys)
