"""Table-driven judging: every Verdict member, the op verdict, markers."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    nocg_marker,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.gate.judge import OP_ORDER, JudgeConfig, judge, op_verdict
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import FAILING_VERDICTS, OpStatus, RunStatus, Verdict

S = "[1024, 1024]"


def _judge(tmp_path, base_ops, results, statuses=(), **config):
    b = load_baseline(write_baseline(tmp_path / "bl", base_ops))
    r = load_results(write_results(tmp_path / "res", results, list(statuses)))
    th = load_thresholds(None, b.manifest.thresholds)
    th.estimator = config.pop("estimator", "ratio")  # the synthetic rows are built from speedups
    return judge(b, r, th, JudgeConfig(**config)), th


# Each case: (baseline ops, current results, ops_status rows, judge config) whose
# row of op "x" with shape S gets the verdict of the key.
CASES = {
    Verdict.PASS: ({"x": [brow("x", S, 2.0)]}, [run_result("x", [crow("x", S, 1.95)])], [], {}),
    Verdict.REGRESSION: (
        {"x": [brow("x", S, 2.0)]},
        [run_result("x", [crow("x", S, 1.8)])],
        [],
        {},
    ),
    Verdict.IMPROVEMENT: (
        {"x": [brow("x", S, 2.0)]},
        [run_result("x", [crow("x", S, 2.3)])],
        [],
        {},
    ),
    Verdict.FALLBACK: (
        {"x": [brow("x", S, 2.0)]},
        [run_result("x", [crow("x", S, 2.0)], markers=[replay_marker("bfloat16", S)])],
        [],
        {},
    ),
    Verdict.FAILED: (
        {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0)]},
        [run_result("x", [crow("x", "[8]", 1.0)], status=RunStatus.FAIL, error="boom")],
        [],
        {},
    ),
    Verdict.MISSING: (
        {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0)]},
        [run_result("x", [crow("x", "[8]", 1.0)])],
        [],
        {},
    ),
    Verdict.NEW: (
        {"x": [brow("x", "[8]", 1.0)]},
        [run_result("x", [crow("x", "[8]", 1.0), crow("x", S, 1.0)])],
        [],
        {},
    ),
    Verdict.SKIPPED: (
        {"x": [brow("x", S, 2.0)], "y": [brow("y", "[8]", 1.0)]},
        [run_result("y", [crow("y", "[8]", 1.0)])],
        [
            OpStatus(
                repo="main", op="x", run_name="x", status="SKIP", note="dismissed 2026-01-01: hangs"
            )
        ],
        {},
    ),
}


# INCONCLUSIVE comes from the interleaved A/B only (tests/ab/test_interleaved_judge.py)
STORED_JUDGE_VERDICTS = [v for v in Verdict if v is not Verdict.INCONCLUSIVE]


@pytest.mark.parametrize("verdict", STORED_JUDGE_VERDICTS, ids=lambda v: v.value)
def test_every_verdict_has_a_case(tmp_path, verdict):
    assert verdict in CASES, f"no judging case for {verdict}: add one"
    base_ops, results, statuses, config = CASES[verdict]
    j, th = _judge(tmp_path, base_ops, results, statuses, **config)
    row = next(r for r in j.cases["main/x"].rows if r.key.shape == S)
    assert row.verdict is verdict, row
    ov = op_verdict(j.cases["main/x"], th)
    # An op is never better than its worst row; a failing row fails the op.
    assert OP_ORDER.index(ov.verdict) <= OP_ORDER.index(verdict), ov
    if verdict in FAILING_VERDICTS:
        assert ov.verdict in FAILING_VERDICTS
    if verdict is Verdict.SKIPPED:
        assert ov.verdict is Verdict.SKIPPED and "dismissed" in ov.reason


def test_regression_row_carries_numbers(tmp_path):
    j, _ = _judge(tmp_path, *CASES[Verdict.REGRESSION][:2])
    (row,) = j.cases["main/x"].rows
    assert row.baseline_speedup == 2.0
    assert row.current_speedup == pytest.approx(1.8)
    assert row.ratio == pytest.approx(0.9)
    assert row.threshold == pytest.approx(0.05)
    assert row.confirmed is None


def test_boundary_is_strict(tmp_path):
    # ratio exactly 1 - threshold is not a regression; just below is
    j, _ = _judge(
        tmp_path,
        {"x": [brow("x", S, 1.0), brow("x", "[8]", 1.0)]},
        [run_result("x", [crow("x", S, 0.95), crow("x", "[8]", 0.9499)])],
    )
    got = {r.key.shape: r.verdict for r in j.cases["main/x"].rows}
    assert got == {S: Verdict.PASS, "[8]": Verdict.REGRESSION}


@pytest.mark.parametrize("status", [RunStatus.TIMEOUT, RunStatus.CRASH, RunStatus.ERROR])
def test_killed_op_without_result_is_failed(tmp_path, status):
    st = OpStatus(repo="main", op="x", run_name="x", status=status, note="killed after 900 s")
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0)], "y": [brow("y", S, 1.0)]},
        [run_result("y", [crow("y", S, 1.0)])],
        [st],
    )
    ov = op_verdict(j.cases["main/x"], th)
    assert ov.verdict is Verdict.FAILED
    assert status.value in ov.reason and "killed after 900 s" in ov.reason
    assert [r.verdict for r in j.cases["main/x"].rows] == [Verdict.FAILED]


def test_op_not_measured_at_all_is_missing(tmp_path):
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0)], "y": [brow("y", S, 1.0)]},
        [run_result("y", [crow("y", S, 1.0)])],
    )
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.MISSING


def test_runtime_skip_of_a_measured_baseline_op_is_missing(tmp_path):
    st = OpStatus(repo="main", op="x", run_name="x", status="SKIP", note="")
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0)], "y": [brow("y", S, 1.0)]},
        [run_result("y", [crow("y", S, 1.0)])],
        [st],
    )
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.MISSING


def test_failed_row_in_passing_op_fails_it(tmp_path):
    bad = crow("x", S, None, status="FAILED", error="mismatch")
    j, th = _judge(tmp_path, {"x": [brow("x", S, 2.0)]}, [run_result("x", [bad])])
    assert j.cases["main/x"].rows[0].verdict is Verdict.FAILED
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FAILED


def test_unattributed_replay_marker_fails_every_row(tmp_path):
    rows = [crow("x", S, 2.0), crow("x", "[8]", 1.0)]
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0)]},
        [run_result("x", rows, markers=[replay_marker()])],
    )
    assert {r.verdict for r in j.cases["main/x"].rows} == {Verdict.FALLBACK}
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FALLBACK


def test_marker_counted_only_in_counts_still_fails(tmp_path):
    res = run_result("x", [crow("x", S, 2.0)])
    res.marker_counts = {"AUTOTUNE_REPLAY_FALLBACK compile_OutOfResources": 1}
    j, th = _judge(tmp_path, {"x": [brow("x", S, 2.0)]}, [res])
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FALLBACK


def test_attributed_replay_marker_fails_its_row_and_the_op(tmp_path):
    rows = [crow("x", S, 2.0), crow("x", "[8]", 1.0)]
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0)]},
        [run_result("x", rows, markers=[replay_marker("bfloat16", "[8]")])],
    )
    got = {r.key.shape: r.verdict for r in j.cases["main/x"].rows}
    assert got == {S: Verdict.PASS, "[8]": Verdict.FALLBACK}
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FALLBACK


@pytest.mark.parametrize(
    ("baseline_no_cg", "expected"), [(False, Verdict.FALLBACK), (True, Verdict.PASS)]
)
def test_no_cudagraph_fails_only_when_baseline_lacked_it(tmp_path, baseline_no_cg, expected):
    j, _ = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0, no_cg=baseline_no_cg)]},
        [run_result("x", [crow("x", S, 2.0, no_cudagraph=True)])],
    )
    assert j.cases["main/x"].rows[0].verdict is expected


def test_no_cudagraph_marker_names_its_row(tmp_path):
    j, _ = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0)]},
        [run_result("x", [crow("x", S, 2.0)], markers=[nocg_marker("bfloat16", S)])],
    )
    row = j.cases["main/x"].rows[0]
    assert row.verdict is Verdict.FALLBACK and "phase=capture" in row.reason


def test_unnamed_no_cudagraph_marker_fails_the_op_not_the_rows(tmp_path):
    j, th = _judge(
        tmp_path,
        {"x": [brow("x", S, 2.0)]},
        [run_result("x", [crow("x", S, 2.0)], markers=[nocg_marker()])],
    )
    assert j.cases["main/x"].rows[0].verdict is Verdict.PASS
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FALLBACK


def test_op_aggregate_geomean_regresses_without_any_row(tmp_path):
    # every row 4 % slower: no row past 5 %, geomean past an op_aggregate of 3 %
    base = {"x": [brow("x", f"[{i}]", 1.0) for i in range(4)]}
    cur = [run_result("x", [crow("x", f"[{i}]", 0.96) for i in range(4)])]
    j, th = _judge(tmp_path, base, cur)
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.PASS
    th.op_aggregate = 0.03
    ov = op_verdict(j.cases["main/x"], th)
    assert ov.verdict is Verdict.REGRESSION
    assert ov.geomean_ratio == pytest.approx(0.96)
    assert "geomean" in ov.reason
    assert {r.verdict for r in j.cases["main/x"].rows} == {Verdict.PASS}


def test_new_op_is_new_and_scope_narrows(tmp_path):
    base = {"x": [brow("x", S, 2.0)]}
    cur = [run_result("x", [crow("x", S, 2.0)]), run_result("z", [crow("z", S, 1.0)])]
    j, th = _judge(tmp_path, base, cur)
    assert op_verdict(j.cases["main/z"], th).verdict is Verdict.NEW
    j2, _ = _judge(tmp_path / "2", base, cur, scope={"main/x"})
    assert set(j2.cases) == {"main/x"}


def test_measured_op_dismissed_since_is_skipped_not_new(tmp_path):
    base = {"x": [brow("x", S, 2.0)]}
    cur = [run_result("x", [crow("x", S, 2.0)]), run_result("z", [crow("z", S, 1.0)])]
    j, th = _judge(tmp_path, base, cur, dismissed={"main/z": "not capturable (2026-11-29)"})
    case = j.cases["main/z"]
    assert op_verdict(case, th).verdict is Verdict.SKIPPED
    assert [r.verdict for r in case.rows] == [Verdict.SKIPPED]
    assert "not capturable" in case.rows[0].reason


def test_occurrences_are_distinct_rows(tmp_path):
    base = {"x": [brow("x", S, 2.0, occ=0), brow("x", S, 4.0, occ=1)]}
    cur = [run_result("x", [crow("x", S, 2.0, occ=0), crow("x", S, 3.0, occ=1)])]
    j, _ = _judge(tmp_path, base, cur)
    got = {r.key.occurrence: r.verdict for r in j.cases["main/x"].rows}
    assert got == {0: Verdict.PASS, 1: Verdict.REGRESSION}


def test_torch_normalized_estimator_removes_single_row_torch_noise(tmp_path):
    # Row S: the FlagGems kernel is unchanged but torch got 8 % faster in this run
    # for that row only; the plain ratio calls it a regression, the normalized one not.
    base = {"x": [brow("x", S, 2.0), brow("x", "[8]", 1.0), brow("x", "[9]", 1.0)]}
    cur = [
        run_result(
            "x",
            [
                crow("x", S, 2.0, torch_lat=2.0 * 0.92),
                crow("x", "[8]", 1.0),
                crow("x", "[9]", 1.0),
            ],
        )
    ]
    plain, _ = _judge(tmp_path, base, cur)
    norm, _ = _judge(tmp_path / "n", base, cur, estimator="torch_normalized")
    pick = lambda j: next(r for r in j.cases["main/x"].rows if r.key.shape == S)  # noqa: E731
    assert pick(plain).verdict is Verdict.REGRESSION
    assert pick(norm).verdict is Verdict.PASS
    # the run's drift is the median torch ratio (1.0 here): the one row whose torch
    # side jumped moves neither its own ratio nor the other rows' (a geometric mean
    # would have put every row at 0.92 ** (1/3))
    assert pick(norm).ratio == pytest.approx(1.0, rel=1e-12)
    assert all(r.ratio == pytest.approx(1.0, rel=1e-12) for r in norm.cases["main/x"].rows)


@pytest.mark.parametrize("side", ["latency_ms", "latency_base_ms"])
@pytest.mark.parametrize("value", [-0.02, 0.0, float("nan"), float("inf"), None])
@pytest.mark.parametrize("estimator", ["ratio", "torch_normalized"])
def test_a_latency_that_is_no_positive_finite_number_is_failed(tmp_path, side, value, estimator):
    # the speedup alone says "as fast as the baseline": the latency decides
    row = crow("x", S, 2.0).model_copy(update={side: value})
    j, th = _judge(
        tmp_path, {"x": [brow("x", S, 2.0)]}, [run_result("x", [row])], estimator=estimator
    )
    (r,) = j.cases["main/x"].rows
    assert r.verdict is Verdict.FAILED and "latency not usable" in r.reason
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FAILED


def test_rows_carry_latencies_in_us_and_both_changes(tmp_path):
    # FlagGems 10 % slower on a machine whose torch is 2 % slower everywhere
    base = {"x": [brow("x", S, 2.0, lat=0.1), brow("x", "[8]", 1.0, lat=0.2)]}
    cur = [
        run_result(
            "x",
            [
                crow("x", S, 1.0, lat=0.11, torch_lat=0.2 * 1.02),
                crow("x", "[8]", 1.0, lat=0.2, torch_lat=0.2 * 1.02),
            ],
        )
    ]
    j, _ = _judge(tmp_path, base, cur, estimator="torch_normalized")
    r = next(r for r in j.cases["main/x"].rows if r.key.shape == S)
    assert (r.baseline_us, r.current_us) == pytest.approx((100.0, 110.0))
    assert (r.baseline_torch_us, r.current_torch_us) == pytest.approx((200.0, 204.0))
    assert r.kernel_change == pytest.approx(0.10)
    # the judged statistic is unchanged: ratio = base / cur latency × torch drift
    assert r.ratio == pytest.approx(100 / 110 * 1.02)
    assert r.judged_change == pytest.approx(1 / r.ratio - 1) and r.judged_change > 0
    assert r.limit == pytest.approx(1 / 0.95 - 1)
    (host,) = j.hosts
    assert host.drift == pytest.approx(1.02) and host.rows == 2 and host.applied


def test_ratio_estimator_reports_the_drift_without_applying_it(tmp_path):
    j, _ = _judge(tmp_path, *CASES[Verdict.PASS][:2])
    (host,) = j.hosts
    assert not host.applied and j.drift == {}
