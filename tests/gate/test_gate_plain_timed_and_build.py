"""What a row was timed with and which compiler build measured it reach the verdict:
a row the plain do_bench fallback timed (``Row.no_cudagraph``) in the baseline or the
run carries ``plain_timed``; the compiler build fingerprint of both sides is recorded
and a differing build is reported, never judged."""

from __future__ import annotations

import json

import pytest

from tests.support.zlsynth import ENV, brow, crow, load_judge_inputs, run_result, write_baseline
from zlbench.gate.env import baseline_environment, check_environment, current_environment
from zlbench.gate.judge import judge
from zlbench.gate.load import load_baseline
from zlbench.models import Environment, RunResult, Verdict

S = "[torch.Size([1048576])]"


def _rows(tmp_path, base_cg: bool, cur_cg: bool):
    b, r, th = load_judge_inputs(
        tmp_path,
        {"softmax_backward": [brow("softmax_backward", S, 1.0, no_cg=base_cg)]},
        [run_result("softmax_backward", [crow("softmax_backward", S, 1.0, no_cudagraph=cur_cg)])],
    )
    return [row for c in judge(b, r, th).cases.values() for row in c.rows]


@pytest.mark.parametrize(
    ("base_cg", "cur_cg", "sides"),
    [
        (True, True, ["baseline", "current"]),  # the A/A false alarms' row, every run
        (True, False, ["baseline"]),
        (False, False, []),
    ],
)
def test_a_row_timed_by_the_plain_fallback_says_so(tmp_path, base_cg, cur_cg, sides):
    (row,) = _rows(tmp_path, base_cg, cur_cg)
    assert row.verdict is Verdict.PASS  # informational: never a verdict of its own
    assert row.plain_timed is bool(sides)
    assert row.plain_timed_in == sides


def test_a_fallback_the_baseline_lacked_is_a_fallback_and_plain_timed(tmp_path):
    (row,) = _rows(tmp_path, False, True)
    assert row.verdict is Verdict.FALLBACK
    assert (row.plain_timed, row.plain_timed_in) == (True, ["current"])


def test_rows_of_an_op_not_measured_carry_the_baselines_timing(tmp_path):
    b, r, th = load_judge_inputs(
        tmp_path, {"x": [brow("x", S, 1.0, no_cg=True)]}, [run_result("y", [crow("y", S, 1.0)])]
    )
    (row,) = judge(b, r, th).cases["main/x"].rows
    assert row.verdict is Verdict.MISSING and row.plain_timed_in == ["baseline"]


# --------------------------------------------------------------------------- builds


@pytest.fixture
def baseline(tmp_path):
    b = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    for res in b.ops.values():
        res.environment.compiler_build = "aaaa111122223333"
        res.environment.compiler_path = "/opt/base/triton"
    return b


def _run(build: str | None, path: str | None = "/opt/pr/triton") -> RunResult:
    env = ENV.model_copy(update={"compiler_build": build, "compiler_path": path})
    return run_result("x", [crow("x", "[1]", 1.0)], env=env)


def test_a_differing_build_is_reported_never_a_mismatch(baseline):
    (f,) = [
        f for f in check_environment(baseline, [_run("bbbb444455556666")]) if "build" in f.field
    ]
    assert (f.field, f.baseline, f.current, f.mismatch) == (
        "compiler_build",
        "aaaa111122223333",
        "bbbb444455556666",
        False,
    )


def test_builds_are_named_on_both_sides_of_the_verdict(baseline):
    base, cur = baseline_environment(baseline), current_environment([_run("bbbb444455556666")])
    assert (base.compiler_build, base.compiler_path) == ("aaaa111122223333", "/opt/base/triton")
    assert (cur.compiler_build, cur.compiler_path) == ("bbbb444455556666", "/opt/pr/triton")


def test_results_from_before_the_fingerprint_are_reported_as_not_recorded(baseline):
    (f,) = [f for f in check_environment(baseline, [_run(None, None)]) if "build" in f.field]
    assert f.current == "(not recorded)" and not f.mismatch


def test_neither_side_recording_a_build_adds_no_finding(tmp_path):
    b = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    assert not [f for f in check_environment(b, [_run(None, None)]) if "build" in f.field]
    assert baseline_environment(b).compiler_build is None


def test_an_old_result_json_without_the_new_fields_still_loads():
    data = json.loads(run_result("x", [crow("x", "[1]", 1.0)]).model_dump_json())
    for name in ("compiler_path", "compiler_build"):
        data["environment"].pop(name)
    assert RunResult.model_validate(data).environment.compiler_build is None
    assert Environment.model_validate({"triton_version": "3.6.0"}).compiler_path is None
