"""The judge's rules, each written once (zlbench.gate.aggregate): a ratio against its
thresholds, the limit, an op's verdict from its rows, the gate's outcome; and the
first verdict (judge.op_verdict) and its restatement (restate.restate_op) agree."""

from __future__ import annotations

import itertools

import pytest

from zlbench.gate import judge as judge_module
from zlbench.gate.aggregate import (
    EXIT_CODES,
    JUDGED,
    OP_ORDER,
    classify,
    gate_outcome,
    improved,
    improvement_limit,
    limit_of,
    op_outcome,
    regressed,
    rows_reason,
    summary_line,
    untimed_ops,
)
from zlbench.gate.judge import OpCase, op_verdict
from zlbench.gate.restate import restate_op
from zlbench.models import OpVerdict, RowKey, RowVerdict, ThresholdsFile, Verdict
from zlbench.models.ab import PairedRow

T = 0.25  # exact in binary: 1 - T and 1 + T are too, so the bounds are exact


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        (0.5, Verdict.REGRESSION),
        (0.74, Verdict.REGRESSION),
        (0.75, Verdict.PASS),  # at 1 - t: not beyond it
        (1.0, Verdict.PASS),
        (1.25, Verdict.PASS),  # at 1 + t
        (1.26, Verdict.IMPROVEMENT),
    ],
)
def test_classify_is_strict_at_both_thresholds(ratio, verdict):
    assert classify(ratio, T, T) is verdict
    assert regressed(ratio, T) is (verdict is Verdict.REGRESSION)
    assert improved(ratio, T) is (verdict is Verdict.IMPROVEMENT)


def test_classify_takes_each_threshold_for_its_own_side():
    assert classify(0.9, 0.05, 0.5) is Verdict.REGRESSION
    assert classify(1.1, 0.5, 0.05) is Verdict.IMPROVEMENT
    assert classify(0.9, 0.2, 0.05) is Verdict.PASS


def test_the_limit_is_the_judged_change_at_the_threshold():
    assert limit_of(T) == pytest.approx(1 / 0.75 - 1)
    assert limit_of(0.0) == 0.0
    assert limit_of(None) is None
    assert limit_of(1.0) is None  # nothing regresses past it
    assert improvement_limit(T) == pytest.approx(-0.2)


def test_judge_re_exports_the_rules():
    """report/ and the tests import these from gate.judge."""
    for name in ("JUDGED", "OP_ORDER", "classify", "limit_of"):
        assert getattr(judge_module, name) is globals()[name]


# --------------------------------------------------------------------------- an op


def test_an_op_is_its_worst_row():
    for worse, better in itertools.combinations(OP_ORDER, 2):
        out = op_outcome([better, worse, better], (), [], T)
        assert out.verdict is worse, (worse, better)


def test_an_op_without_a_verdict_passes():
    out = op_outcome([], (), [], T)
    assert (out.verdict, out.geomean, out.geomean_regressed) == (Verdict.PASS, None, False)


def test_op_level_verdicts_count_like_rows_and_new_wins_over_all():
    assert op_outcome([Verdict.PASS], {Verdict.FAILED}, [1.0], T).verdict is Verdict.FAILED
    assert op_outcome([Verdict.REGRESSION], {Verdict.NEW}, [0.1, 0.1], T).verdict is Verdict.NEW
    # rows that are NEW (not in the baseline) rank after PASS
    assert op_outcome([Verdict.NEW, Verdict.PASS], (), [1.0], T).verdict is Verdict.PASS


def test_the_geomean_of_two_rows_regresses_the_op_that_no_row_does():
    out = op_outcome([Verdict.PASS, Verdict.PASS], (), [0.8, 0.7], T)
    assert out.verdict is Verdict.REGRESSION and out.geomean_regressed
    assert out.geomean == pytest.approx((0.8 * 0.7) ** 0.5)


def test_the_geomean_of_one_row_is_not_judged_again():
    out = op_outcome([Verdict.PASS], (), [0.5], T)
    assert (out.verdict, out.geomean, out.geomean_regressed) == (Verdict.PASS, 0.5, False)


def test_no_threshold_no_geomean_rule():
    out = op_outcome([Verdict.PASS, Verdict.PASS], (), [0.5, 0.5], None)
    assert out.verdict is Verdict.PASS and not out.geomean_regressed


def test_rows_reason_counts_the_rows_of_the_ops_verdict():
    rows = [_row(0, Verdict.REGRESSION, 0.5), _row(1, Verdict.PASS, 1.0)]
    assert rows_reason(rows, Verdict.REGRESSION) == "1 row(s) REGRESSION"
    assert rows_reason(rows, Verdict.PASS) == ""
    assert rows_reason(rows, Verdict.FAILED) == ""


# --------------------------------------------------------------------------- the gate


def _op(verdict: Verdict) -> OpVerdict:
    return OpVerdict(repo="main", run_name="x", op="x", verdict=verdict)


def _named(name: str, verdict: Verdict) -> OpVerdict:
    return OpVerdict(repo="main", run_name=name, op=name, verdict=verdict)


def _row_of(name: str, verdict: Verdict, **measured) -> RowVerdict:
    key = RowKey(repo="main", run_name=name, op=name, dtype="float32", shape="[1]")
    return RowVerdict(key=key, verdict=verdict, **measured)


def test_ops_judged_pass_with_no_row_timed_count_apart_from_the_timed():
    """An op PASS with no row measured (its changed rows proven by a launch capture)
    is neither timed nor replayed: the first line counts it as proven untimed, and the
    terms still add up. A row measured by the op path or paired (A/B, replay) is timed;
    a failing op with nothing measured was meant to be timed and stays there."""
    ops = [
        _named("flat", Verdict.PASS),  # proven: no row measured
        _named("path", Verdict.PASS),  # the op path measured it
        _named("rep", Verdict.PASS),  # the replay paired it
        _named("gone", Verdict.MISSING),  # meant to be timed
    ]
    rows = [
        _row_of("flat", Verdict.PASS),
        _row_of("flat", Verdict.PASS).model_copy(update={"key": RowKey(
            repo="main", run_name="flat", op="flat", dtype="float16", shape="[1]")}),
        _row_of("path", Verdict.PASS, current_speedup=1.0),
        _row_of("rep", Verdict.PASS, ab=PairedRow(rounds=10)),
        _row_of("gone", Verdict.MISSING),
    ]  # fmt: skip
    assert untimed_ops(ops, rows) == {"main/flat"}
    line = summary_line("FAIL", "", {"PASS": 4, "MISSING": 1}, ops, ["main/same"], rows=rows)
    assert line.startswith(
        "FAIL: 5 ops checked = 3 timed (1 failing) + 1 proven untimed + 1 proven identical"
    )
    # without the rows (the first verdict, before any evidence) every judged op is timed
    assert "4 timed (1 failing) + 1 proven identical" in summary_line(
        "FAIL", "", {"PASS": 4}, ops, ["main/same"]
    )


@pytest.mark.parametrize(
    ("ops", "error", "compile_failed", "outcome"),
    [
        ([Verdict.PASS, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE], False, False, "PASS"),
        ([Verdict.NEW, Verdict.SKIPPED], False, False, "PASS"),
        ([], False, False, "PASS"),
        ([Verdict.PASS, Verdict.REGRESSION], False, False, "FAIL"),
        ([Verdict.MISSING], False, False, "FAIL"),
        ([Verdict.FALLBACK], False, False, "FAIL"),
        ([Verdict.FAILED], False, False, "FAIL"),
        ([Verdict.PASS], False, True, "FAIL"),
        ([Verdict.REGRESSION], True, True, "ERROR"),
        ([], True, False, "ERROR"),
    ],
)
def test_gate_outcome_and_exit_code(ops, error, compile_failed, outcome):
    got = gate_outcome([_op(v) for v in ops], error=error, compile_failed=compile_failed)
    assert got == (outcome, EXIT_CODES[outcome])
    assert EXIT_CODES == {"PASS": 0, "FAIL": 1, "ERROR": 2}


# ------------------------------------------------- judge and restate: one rule


def _row(i: int, verdict: Verdict, ratio: float | None) -> RowVerdict:
    key = RowKey(repo="main", run_name="x", op="x", dtype="float32", shape=f"[{i}]")
    judged = verdict in JUDGED
    return RowVerdict(key=key, verdict=verdict, ratio=ratio if judged else None)


ROW_SETS = [
    [(Verdict.PASS, 1.0)],
    [(Verdict.PASS, 0.8), (Verdict.PASS, 0.7)],  # the geomean regresses
    [(Verdict.PASS, 0.8)],  # one row: no geomean rule
    [(Verdict.REGRESSION, 0.5), (Verdict.IMPROVEMENT, 1.5)],
    [(Verdict.MISSING, None), (Verdict.PASS, 1.0)],
    [(Verdict.FALLBACK, None), (Verdict.REGRESSION, 0.5)],
    [(Verdict.INCONCLUSIVE, None), (Verdict.PASS, 1.0)],
    [(Verdict.SKIPPED, None)],
    [(Verdict.NEW, None), (Verdict.PASS, 1.0)],
    [],
]


@pytest.mark.parametrize("rows", ROW_SETS)
@pytest.mark.parametrize("own", ["", "failure", "fallback", "new"])
def test_restating_an_unchanged_op_gives_the_judges_verdict(rows, own):
    th = ThresholdsFile(default=T)
    case = OpCase("main", "x", "x", rows=[_row(i, v, r) for i, (v, r) in enumerate(rows)])
    case.failure = "op FAIL" if own == "failure" else ""
    case.fallback = "fallback marker" if own == "fallback" else ""
    case.new = own == "new"
    first = op_verdict(case, th)
    again = restate_op(first, case.rows)
    assert (again.verdict, again.geomean_ratio, again.threshold) == (
        first.verdict,
        first.geomean_ratio,
        first.threshold,
    )
