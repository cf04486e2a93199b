"""Unpinned replays fail in the gate (issue 15): every replay-fallback reason the
autotune plugin emits, named on a row or on the whole op, and a PASS without rows."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.gate.judge import JudgeConfig, judge, op_verdict
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import OpStatus, RunStatus, Verdict

S = "[1024, 1024]"
# Every reason zlbench.plugins.autotune emits (docs/autotune.md).
REASONS = [
    "key_missing",
    "compile_OutOfResources",
    "compile_OutOfResources_no_evict",
    "pin_ignored",
    "pre_hook_dropped",
    "tuned_live",
]


def _judge(tmp_path, results, statuses=()):
    b = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", S, 2.0)]}))
    r = load_results(write_results(tmp_path / "res", results, list(statuses)))
    th = load_thresholds(None, b.manifest.thresholds)
    th.estimator = "ratio"
    return judge(b, r, th, JudgeConfig()), th


@pytest.mark.parametrize("reason", REASONS)
@pytest.mark.parametrize("named", [True, False])
def test_every_replay_fallback_reason_fails_the_op(tmp_path, reason, named):
    where = ("bfloat16", S) if named else (None, None)
    marker = replay_marker(*where, kernel="m:k", reason=reason)
    j, th = _judge(tmp_path, [run_result("x", [crow("x", S, 2.0)], markers=[marker])])
    assert op_verdict(j.cases["main/x"], th).verdict is Verdict.FALLBACK


def test_a_pass_without_rows_is_never_pass(tmp_path):
    status = OpStatus(
        repo="main",
        op="x",
        run_name="x",
        status=RunStatus.FAIL,
        rows=0,
        run_dir="main/x",
        note="test passed but measured no row (partial_skip=1)",
    )
    j, th = _judge(tmp_path, [run_result("x", [])], [status])
    verdict = op_verdict(j.cases["main/x"], th)
    assert verdict.verdict is Verdict.FAILED and "partial_skip=1" in verdict.reason
