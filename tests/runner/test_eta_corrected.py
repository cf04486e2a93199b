"""The batch's ETA corrects itself from what it measured (issue 50 item 5): the
expected seconds of the ops left, scaled by the wall seconds the done ops took per
expected second. Synthetic numbers only; no clock."""

from __future__ import annotations

import io

import pytest

from zlbench.models import OpStatus, RunStatus
from zlbench.runner.batch import progress
from zlbench.runner.batch.files import BatchFiles
from zlbench.runner.batch.progress import Expected, corrected_eta, done_line


def test_the_remaining_estimate_scales_by_measured_over_recorded():
    # 50 ops recorded at 3.6 s each (179 s, "about 2m59s"); the first 13 took 285 s
    assert corrected_eta(285.0, 13 * 3.6, 37 * 3.6) == pytest.approx(285.0 / 13 * 37)
    # ops that take what they recorded: the recorded rest, unscaled
    assert corrected_eta(100.0, 100.0, 60.0) == pytest.approx(60.0)
    # two GPUs: 100 recorded op seconds done in 50 s of wall: the rest at half
    assert corrected_eta(50.0, 100.0, 60.0) == pytest.approx(30.0)
    assert corrected_eta(10.0, 0.0, 60.0) is None  # nothing expected done yet
    assert corrected_eta(10.0, 5.0, 0.0) == 0.0


def test_a_large_op_undercounted_3x_moves_the_eta_where_a_mean_per_op_does_not():
    # flash_attention_forward: recorded 35.1 s, measured 110.7 s; then 9 small ops of 1 s
    seconds = {"main/fa": 35.1} | {f"main/s{i}": 1.0 for i in range(9)}
    exp = Expected(dict(seconds))
    exp.op_done("main/fa", 110.7)
    eta = exp.eta(110.7)
    assert eta == pytest.approx(9 * 110.7 / 35.1)  # ~28 s: the small ops, 3.15x slower
    assert progress.eta(110.7, 1, 10) == pytest.approx(996.3)  # mean per op: 16m36s
    assert exp.ratio() == pytest.approx(110.7 / 35.1)


def _st(key: str, seconds: float) -> OpStatus:
    return OpStatus(
        repo="main", op=key, run_name=key, status=RunStatus.PASS, rows=1, seconds=seconds
    )


def test_the_done_line_names_the_ratio_when_far_from_one():
    exp = Expected({"main/a": 10.0, "main/b": 10.0, "main/c": 20.0})
    exp.op_done("main/a", 30.0)
    line = done_line(_st("a", 30.0), 1, 3, 30.0, exp)
    assert line.endswith("ETA 1m30s, ops x3.0 their recorded seconds")
    exp = Expected({"main/a": 10.0, "main/b": 10.0})
    exp.op_done("main/a", 11.0)
    assert done_line(_st("a", 11.0), 1, 2, 11.0, exp).endswith("ETA 11.0s")


def test_batch_files_feed_the_corrected_eta(tmp_path, monkeypatch):
    stream = io.StringIO()
    files = BatchFiles(tmp_path, stream, 0.0)
    files.total = 3
    files.expected = Expected({"main/a": 10.0, "main/b": 10.0, "main/c": 40.0})
    monkeypatch.setattr("zlbench.runner.batch.files.time.monotonic", lambda: 20.0)
    run_dir = tmp_path / "main" / "a"
    run_dir.mkdir(parents=True)
    files.op_final("main/a", _st("a", 20.0), run_dir)
    # 10 recorded seconds took 20 s of wall: the 50 left take 100 s (a mean says 40 s)
    assert stream.getvalue().strip().endswith("ETA 1m40s, ops x2.0 their recorded seconds")
