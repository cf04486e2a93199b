"""Verdict rules at the edges: a one-row op is judged by its row's threshold (not
the op aggregate), an unusable current speedup fails the row, a baseline's marker
counts are per replay pass (not summed over passes), and every run's FlagGems
commit must match the baseline's."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import ENV, brow, crow, load_judge_inputs, run_result
from zlbench.gate.baselines import aggregate_op
from zlbench.gate.env import check_environment
from zlbench.gate.judge import judge, op_verdict
from zlbench.models import RunStatus, Verdict

S = "[4096]"


def test_one_row_op_is_judged_by_its_row_threshold_not_the_aggregate(tmp_path):
    # baseline noise 3 % -> row threshold 6 %; ratio 0.945 is inside it
    b, r, th = load_judge_inputs(
        tmp_path, {"x": [brow("x", S, 2.0, noise=0.03)]}, [run_result("x", [crow("x", S, 1.89)])]
    )
    j = judge(b, r, th)
    assert j.cases["main/x"].rows[0].verdict is Verdict.PASS
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.PASS


def test_unusable_current_speedup_is_a_failure_not_a_skip(tmp_path):
    b, r, th = load_judge_inputs(
        tmp_path, {"x": [brow("x", S, 2.0)]}, [run_result("x", [crow("x", S, 0.0)])]
    )
    th.estimator = "ratio"
    j = judge(b, r, th)
    row = j.cases["main/x"].rows[0]
    assert row.verdict is Verdict.FAILED and "not usable" in row.reason


def test_baseline_marker_counts_are_per_pass_not_summed():
    from zlbench.models import Row, RunResult

    def rep():
        return RunResult(
            repo="main",
            run_name="x",
            op="x",
            status=RunStatus.PASS,
            mode="replay",
            timing="cudagraph",
            rows=[Row(op="x", dtype="bfloat16", shape=S, speedup=1.0)],
            marker_counts={"BENCHMARK_DIRECT_NO_CUDAGRAPH capture": 1},
        )

    res = aggregate_op(rep(), [rep(), rep(), rep()])
    assert res.marker_counts == {"BENCHMARK_DIRECT_NO_CUDAGRAPH capture": 1}


@pytest.mark.parametrize(
    "commits, mismatch",
    [
        (["a" * 40, "a" * 40], False),
        (["a" * 40, "f" * 40], True),  # mixed checkouts ("aaa..., fff..." sorted)
        (["0" * 40, "a" * 40], True),
        (["a" * 40, None], True),  # one run did not record it
    ],
)
def test_every_runs_flaggems_commit_must_match(commits, mismatch):
    from zlbench.gate.load import BaselineSet
    from zlbench.models import BaselineManifest

    m = BaselineManifest(
        name="v", created="now", gpu_model=ENV.gpu_model, flaggems={"main": {"commit": "a" * 40}}
    )
    runs = [
        run_result(f"op{i}", [], env=ENV.model_copy(update={"flaggems_commit": c}))
        for i, c in enumerate(commits)
    ]
    found = {f.field: f for f in check_environment(BaselineSet(None, m, {}), runs)}
    assert found["flaggems_commit[main]"].mismatch is mismatch
