"""Rows timed by kernel replay are judged by the op path's pair rule (issue 51 item 2/3):
zlbench.gate.replay."""

from __future__ import annotations

import pytest

from zlbench.errors import ZlbenchError
from zlbench.gate.replay import (
    IDENTICAL,
    NO_LAUNCH,
    REPLAYED,
    ReplayEvidence,
    apply_replay,
    replay_stats,
)
from zlbench.models import (
    PairedSamples,
    PairSample,
    PairsFile,
    ReplayedRow,
    ReplayRun,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.protocol.pairs import PairRule

RULE = PairRule()


def key(op: str, shape: str = "[1024]") -> RowKey:
    return RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape)


def samples(pr_us: float, base_us: float, n: int) -> list[PairSample]:
    out = []
    for i in range(n):
        # a little spread, the same on both sides: the change is exactly pr/base - 1
        j = 1.0 + 0.001 * (i % 3)
        pair = [
            PairSample(side="pr", ms=pr_us * j / 1000),
            PairSample(side="base", ms=base_us * j / 1000),
        ]
        out += pair if i % 2 == 0 else pair[::-1]
    return out


def evidence(rows: dict[RowKey, tuple[float, float, int]], run: ReplayRun) -> ReplayEvidence:
    pairs = PairsFile(rows=[PairedSamples(key=k, samples=samples(*v)) for k, v in rows.items()])
    return ReplayEvidence(run=run, rows=replay_stats(pairs, RULE))


def replayed(k: RowKey, outputs: str = "match") -> ReplayedRow:
    return ReplayedRow(key=k, instrument="kernel-replay", outputs=outputs, kernels=["kid"])


def missing(k: RowKey) -> RowVerdict:
    return RowVerdict(key=k, verdict=Verdict.MISSING, reason="not measured")


def judge(rows, ev):
    return apply_replay(
        rows, ev, baseline="h100", threshold=RULE.threshold, floor_us=RULE.floor_us, rule=RULE
    )


def test_a_replayed_row_slower_than_the_base_is_a_regression_and_says_its_instrument():
    slow, same = key("softmax"), key("exp")
    run = ReplayRun(changed_rows=2, rows=[replayed(slow), replayed(same)])
    ev = evidence({slow: (20.0, 10.0, 10), same: (10.0, 10.0, 10)}, run)
    out = {r.key: r for r in judge([missing(slow), missing(same)], ev)}
    assert out[slow].verdict is Verdict.REGRESSION
    assert out[slow].reason.startswith(f"{REPLAYED}: slower than the base: +100.0 %")
    assert out[slow].ab is not None and out[slow].ab.rounds == 10
    # judged over balanced blocks (protocol.pairs.REPLAY_BLOCK_PAIRS), never as plain
    assert "vs the base, 10 pairs in 5 AB/BA blocks" in out[slow].reason
    assert out[slow].ab.blocks == 5 and not out[slow].ab.plain
    assert out[same].verdict is Verdict.PASS
    assert out[same].reason == REPLAYED


def test_too_few_pairs_never_pass():
    k = key("softmax")
    ev = evidence({k: (10.0, 10.0, 2)}, ReplayRun(changed_rows=1, rows=[replayed(k)]))
    (r,) = judge([missing(k)], ev)
    assert r.verdict is Verdict.MISSING
    assert "only 2 complete pairs" in r.reason


def test_pairs_of_a_row_whose_outputs_differed_are_refused():
    k = key("softmax")
    with pytest.raises(ZlbenchError, match="not list it as replayed with matching outputs"):
        evidence({k: (10.0, 10.0, 10)}, ReplayRun(changed_rows=1, rows=[replayed(k, "differ")]))


def test_pairs_of_a_row_that_fell_back_are_refused():
    k = key("softmax")
    back = ReplayedRow(key=k, instrument="op", why="launch captured in a CUDA graph")
    with pytest.raises(ZlbenchError, match="not a gate's own artifact"):
        evidence({k: (10.0, 10.0, 10)}, ReplayRun(changed_rows=1, rows=[back]))


def test_the_op_paths_verdict_stands_and_identical_rows_of_a_replayed_op_pass():
    measured, ident, other = key("mm"), key("softmax", "[2048]"), key("sum")
    run = ReplayRun(changed_rows=1, rows=[replayed(measured)], identical=[ident])
    ev = evidence({measured: (20.0, 10.0, 10)}, run)
    op_path = RowVerdict(key=measured, verdict=Verdict.PASS, reason="")
    out = {r.key: r for r in judge([op_path, missing(ident), missing(other)], ev)}
    assert out[measured] == op_path  # measured through FlagGems: not re-judged
    assert out[ident].verdict is Verdict.PASS and out[ident].reason == IDENTICAL
    assert out[other].verdict is Verdict.MISSING  # nothing said about it


def test_a_row_timing_no_kernel_passes_only_when_the_judges_own_reading_proves_it():
    nothing, also, other = key("flatten"), key("flatten", "[2048]"), key("sum")
    run = ReplayRun(changed_rows=0, no_launch=[nothing, also])
    ev = ReplayEvidence(run=run, rows={}, no_launch=frozenset({nothing, also, other}))
    out = {r.key: r for r in judge([missing(nothing), missing(also), missing(other)], ev)}
    assert out[nothing].verdict is Verdict.PASS and out[nothing].reason == NO_LAUNCH
    assert out[also].verdict is Verdict.PASS
    assert out[other].verdict is Verdict.MISSING  # the run did not say it: nothing to judge
    measured = RowVerdict(key=nothing, verdict=Verdict.REGRESSION, reason="slower")
    (kept,) = judge([measured], ev)
    assert kept == measured  # measured through FlagGems all the same: its verdict stands


def test_a_row_listed_as_timing_no_kernel_that_the_baselines_capture_does_not_prove_is_refused():
    nothing, forged = key("flatten"), key("softmax")
    run = ReplayRun(changed_rows=0, no_launch=[nothing, forged])
    with pytest.raises(ZlbenchError, match="softmax.*does not show it: not a gate's own"):
        ReplayEvidence(run=run, rows={}, no_launch=frozenset({nothing}))
    with pytest.raises(ZlbenchError, match="no Triton kernel"):  # no baseline read: none
        ReplayEvidence(run=run, rows={})


# --------------------------------------------------------------------------- through decide


def _gate(tmp_path, replay_pr_us: float):
    """A baseline of ops x and softmax (2 rows); the op path measured x only, the replay
    timed softmax's first row and proved its second identical."""
    from tests.support.zlsynth import brow, crow, load_judge_inputs, run_result
    from zlbench.gate.decide import Evidence, decide
    from zlbench.gate.verdict import GateOptions, run_gate

    base = {
        "x": [brow("x", "[1024]", 1.0)],
        "softmax": [brow("softmax", "[1024]", 1.0), brow("softmax", "[2048]", 1.0)],
    }
    b, r, th = load_judge_inputs(tmp_path, base, [run_result("x", [crow("x", "[1024]", 1.0)])])
    v = run_gate(b, r, th, GateOptions(scope={"main/x", "main/softmax"}))
    timed, ident = key("softmax"), key("softmax", "[2048]")
    run = ReplayRun(changed_rows=1, rows=[replayed(timed)], identical=[ident])
    return v, decide(v, Evidence(replay=evidence({timed: (replay_pr_us, 10.0, 10)}, run)))


def test_decide_fails_the_gate_on_a_replayed_regression_and_counts_add_up(tmp_path):
    before, v = _gate(tmp_path, 20.0)
    assert {r.verdict for r in before.rows if r.key.op == "softmax"} == {Verdict.MISSING}
    rows = {(r.key.op, r.key.shape): r.verdict for r in v.rows}
    assert rows == {
        ("x", "[1024]"): Verdict.PASS,
        ("softmax", "[1024]"): Verdict.REGRESSION,
        ("softmax", "[2048]"): Verdict.PASS,
    }
    ops = {o.run_name: o.verdict for o in v.ops}
    assert ops == {"x": Verdict.PASS, "softmax": Verdict.REGRESSION}
    assert v.verdict == "FAIL" and v.exit_code == 1


def test_decide_passes_a_gate_whose_replayed_rows_are_unchanged(tmp_path):
    _, v = _gate(tmp_path, 10.0)
    assert {o.run_name: o.verdict for o in v.ops} == {"x": Verdict.PASS, "softmax": Verdict.PASS}
    assert v.verdict == "PASS" and v.exit_code == 0


def test_the_reports_name_the_instrument_of_a_replayed_row():
    from zlbench.report.facts import confirmed_text

    k = key("softmax")
    ev = evidence({k: (20.0, 10.0, 10)}, ReplayRun(changed_rows=1, rows=[replayed(k)]))
    (r,) = judge([missing(k)], ev)
    assert r.ab is not None and r.ab.instrument == "kernel-replay"
    assert confirmed_text(r) == "kernel replay, 10 pairs"
