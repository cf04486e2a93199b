"""The confirm step: re-measure flagged ops with a fake, judge on the median."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.gate.confirm import apply_samples, confirm, flagged_ops
from zlbench.gate.judge import judge, op_verdict
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import Verdict

S = "[4096]"


@pytest.fixture
def setup(tmp_path):
    base = {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0)], "y": [brow("y", S, 1.0)]}
    b = load_baseline(write_baseline(tmp_path / "bl", base))
    cur = [
        run_result("x", [crow("x", S, 1.7), crow("x", "[8]", 1.0)]),  # S regressed 15 %
        run_result("y", [crow("y", S, 1.0)]),
    ]
    r = load_results(write_results(tmp_path / "res", cur))
    th = load_thresholds(None, b.manifest.thresholds)
    return b, r, th


class FakeRemeasure:
    def __init__(self, speedups):
        self.speedups = speedups  # per pass: {shape: speedup} of op x
        self.calls = []

    def __call__(self, ops, times):
        self.calls.append((list(ops), times))
        return [
            {r.key("main", "x"): r for r in (crow("x", s, v) for s, v in p.items())}
            for p in self.speedups[:times]
        ]


def test_only_regressed_ops_are_remeasured(setup):
    b, r, th = setup
    j = judge(b, r, th)
    assert flagged_ops(j, th) == ["main/x"]
    fake = FakeRemeasure([{S: 1.7, "[8]": 1.0}, {S: 1.7, "[8]": 1.0}])
    confirm(j, fake, 2, b, th)
    assert fake.calls == [(["main/x"], 2)]


def test_regression_that_reproduces_is_confirmed(setup):
    b, r, th = setup
    j = confirm(judge(b, r, th), FakeRemeasure([{S: 1.72}, {S: 1.69}]), 2, b, th)
    row = next(v for v in j.cases["main/x"].rows if v.key.shape == S)
    assert row.verdict is Verdict.REGRESSION and row.confirmed is True
    assert row.samples == pytest.approx([0.85, 0.86, 0.845])
    assert row.ratio == pytest.approx(0.85)  # median
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.REGRESSION


def test_one_off_slow_measurement_is_not_confirmed(setup):
    b, r, th = setup
    j = confirm(judge(b, r, th), FakeRemeasure([{S: 2.0}, {S: 1.98}]), 2, b, th)
    row = next(v for v in j.cases["main/x"].rows if v.key.shape == S)
    assert row.verdict is Verdict.PASS and row.confirmed is False
    assert "not confirmed" in row.reason
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.PASS


def test_median_not_mean(setup):
    # samples 0.85, 1.0, 1.0: the mean (0.95) would sit on the boundary; the median is 1.0
    b, r, th = setup
    j = confirm(judge(b, r, th), FakeRemeasure([{S: 2.0}, {S: 2.0}]), 2, b, th)
    row = next(v for v in j.cases["main/x"].rows if v.key.shape == S)
    assert row.ratio == 1.0


def test_row_missing_from_remeasure_stays_unconfirmed(setup):
    b, r, th = setup
    j = confirm(judge(b, r, th), FakeRemeasure([{"[8]": 1.0}]), 1, b, th)
    row = next(v for v in j.cases["main/x"].rows if v.key.shape == S)
    assert row.verdict is Verdict.REGRESSION and row.confirmed is None


def test_zero_times_or_nothing_flagged_does_not_call(setup):
    b, r, th = setup
    fake = FakeRemeasure([])
    j = judge(b, r, th)
    assert confirm(j, fake, 0, b, th) is j
    th.default = 0.5
    j = judge(b, r, th)
    assert confirm(j, fake, 2, b, th) is j and fake.calls == []


def test_apply_samples_from_a_results_dir(setup):
    b, r, th = setup
    one = FakeRemeasure([{S: 2.0}])([], 1)
    # one extra sample: median of (0.85, 1.0) = 0.925 still regresses; two clear it
    j = apply_samples(judge(b, r, th), one, b, th, ["main/x"])
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.REGRESSION
    j = apply_samples(judge(b, r, th), one + one, b, th, ["main/x"])
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.PASS
