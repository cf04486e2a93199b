"""How the gate tells a real slowdown from a slower machine or a noisy pass: the
torch-side drift is measured per run and per measuring host (merged shards of
two machines each use their own), and confirmation passes re-judge a flagged op
with that drift, ignoring passes in which the op fell back or failed."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import ENV, brow, crow, load_judge_inputs, run_result, write_results
from zlbench.gate.confirm import confirm
from zlbench.gate.judge import judge, op_verdict
from zlbench.gate.load import load_results
from zlbench.models import RunStatus, Verdict

S = "[4096]"


def test_confirmation_uses_the_runs_drift_not_the_flagged_ops_own_torch_noise(tmp_path):
    """op1's FlagGems kernel is 10 % slower. In both confirmation passes op1's own
    torch side happened to be 6 % slower too: a drift computed over op1's one row
    would absorb most of the slowdown (0.964) and "not confirm" it."""
    ops = [f"op{i}" for i in range(1, 6)]
    base_ops = {op: [brow(op, S, 2.0)] for op in ops}
    first = [run_result("op1", [crow("op1", S, 2.0 / 1.1, lat=1.1, torch_lat=2.0)])]
    first += [run_result(op, [crow(op, S, 2.0)]) for op in ops[1:]]
    b, r, th = load_judge_inputs(tmp_path, base_ops, first)
    j = judge(b, r, th)
    assert op_verdict(j.cases["main/op1"], th).verdict is Verdict.REGRESSION
    slow_torch = crow("op1", S, 2.12 / 1.1, lat=1.1, torch_lat=2.12)

    def remeasure(keys, times):
        assert keys == ["main/op1"]
        return [{slow_torch.key("main", "op1"): slow_torch} for _ in range(times)]

    j2 = confirm(j, remeasure, 2, b, th)
    row = j2.cases["main/op1"].rows[0]
    assert row.samples == pytest.approx([1 / 1.1] * 3)
    assert row.verdict is Verdict.REGRESSION and row.confirmed is True


def test_confirmation_ignores_passes_of_ops_that_fell_back_or_failed(tmp_path):
    from tests.support.zlsynth import replay_marker

    write_results(tmp_path / "c" / "results", [run_result("x", [crow("x", S, 1.7)])])
    write_results(
        tmp_path / "c" / "confirm" / "1",
        [run_result("x", [crow("x", S, 2.0)], markers=[replay_marker("bfloat16", S)])],
    )
    write_results(
        tmp_path / "c" / "confirm" / "2",
        [run_result("x", [crow("x", S, 2.0)], status=RunStatus.FAIL)],
    )
    res = load_results(tmp_path / "c")
    assert res.confirm == [{}, {}]  # neither pass may un-confirm the regression
    assert list(res.rows())  # the first measurement itself is kept


def test_merged_shards_from_two_machines_each_use_their_own_drift(tmp_path):
    """Shard A ran on a machine 10 % slower across the board (torch and FlagGems);
    shard B on a normal one. One run-wide median drift (1.0, from B's majority)
    would call every op of A a 9 % regression."""
    slow_host = ENV.model_copy(update={"hostname": "runner-a"})
    fast_host = ENV.model_copy(update={"hostname": "runner-b"})
    ops_a, ops_b = ["a1", "a2", "a3"], ["b1", "b2", "b3", "b4"]
    base_ops = {op: [brow(op, S, 2.0)] for op in ops_a + ops_b}
    results = [
        run_result(op, [crow(op, S, 2.0, lat=1.1, torch_lat=2.2)], env=slow_host) for op in ops_a
    ]
    results += [run_result(op, [crow(op, S, 2.0)], env=fast_host) for op in ops_b]
    b, r, th = load_judge_inputs(tmp_path, base_ops, results)
    j = judge(b, r, th)
    verdicts = {k: op_verdict(c, th).verdict for k, c in j.cases.items()}
    assert set(verdicts.values()) == {Verdict.PASS}, verdicts
    assert j.drift["main/a1"] == pytest.approx(1.1) and j.drift["main/b1"] == pytest.approx(1.0)
