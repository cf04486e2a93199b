"""zlbench changes: change points on main's series with Apache Otava, named by commit
range and changed kernels (issue 52 item 3). A real SQLite store, written through the
store's API."""

from __future__ import annotations

import random
import sys

import pytest

from tests.support.cli import zlbench_cli
from zlbench.errors import ZlbenchError
from zlbench.history import changepoints
from zlbench.history.store import open_store
from zlbench.models import load_json_model
from zlbench.models.bisect import ChangesReport
from zlbench.models.history import GateRun, RowPoint
from zlbench.workflow.changes import ChangesJob, run_changes

pytest.importorskip("otava.analysis")

STEP_ROW = "main/softmax bfloat16 [64, 128]"
FLAT_ROW = "main/add bfloat16 [64, 128]"


def fill(path, n=16, step_at=11, step=0.10, seed=5):
    """A store of ``n`` gates, one per commit; the softmax row 10 % slower from commit
    ``step_at`` on, its kernel's digest changed there; the add row flat."""
    rng = random.Random(seed)
    with open_store(path) as store:
        for i in range(n):
            changed = i >= step_at
            soft = 20.0 * (1 + step * changed) * (1 + rng.gauss(0, 0.005))
            add = 8.0 * (1 + rng.gauss(0, 0.005))
            rows = [
                RowPoint(row=STEP_ROW, op="main/softmax", value_us=soft, verdict="PASS",
                         digest=f"softmax_kernel={'b' if changed else 'a'};helper=h"),
                RowPoint(row=FLAT_ROW, op="main/add", value_us=add, verdict="PASS",
                         digest="add_kernel=a"),
            ]  # fmt: skip
            run = GateRun(run_key=f"run{i}", commit=f"sha{i:02d}", position=i, verdict="PASS")
            store.add_run(run, rows)
    return path


def test_the_step_is_found_at_its_commit_with_its_kernel(tmp_path):
    store = fill(tmp_path / "h.sqlite")
    summary = run_changes(ChangesJob(store=str(store), out=tmp_path / "out"))
    rep = load_json_model(tmp_path / "out" / "changes.json", ChangesReport)
    assert [(c.row, c.before_commit, c.commit) for c in rep.changes] == [
        (STEP_ROW, "sha10", "sha11")
    ]
    c = rep.changes[0]
    assert c.kernels == ["softmax_kernel"] and 0.08 < c.change < 0.12
    assert rep.rows_scanned == 2 and "apache-otava" in rep.detector
    assert "`sha10`..`sha11`" in summary and "softmax_kernel" in summary
    report = (tmp_path / "out" / "report.md").read_text()
    assert STEP_ROW in report and "+10" in report or "+9" in report
    assert (tmp_path / "out" / "summary.md").read_text() == summary


def test_no_change_point_on_a_flat_series(tmp_path):
    store = fill(tmp_path / "h.sqlite", step=0.0)
    summary = run_changes(ChangesJob(store=str(store), out=tmp_path / "out"))
    assert "no change point" in summary


def test_since_limits_the_series(tmp_path):
    store = fill(tmp_path / "h.sqlite")
    run_changes(ChangesJob(store=str(store), out=tmp_path / "a", since="12"))
    assert load_json_model(tmp_path / "a" / "changes.json", ChangesReport).changes == []
    with pytest.raises(ZlbenchError, match="--since nope"):
        run_changes(ChangesJob(store=str(store), out=tmp_path / "b", since="nope"))


def test_a_missing_store_is_one_line(tmp_path):
    with pytest.raises(ZlbenchError, match="no results store"):
        run_changes(ChangesJob(store=str(tmp_path / "none.sqlite"), out=tmp_path / "o"))
    assert not (tmp_path / "none.sqlite").exists() and not (tmp_path / "o").exists()


def test_without_otava_the_command_says_so_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "otava.analysis", None)  # import fails
    with pytest.raises(ZlbenchError, match=r"pip install 'zlbench\[history\]'"):
        changepoints.otava()


@pytest.mark.proc
def test_the_cli_prints_the_summary_and_exits_zero(tmp_path):
    store = fill(tmp_path / "h.sqlite")
    p = zlbench_cli("changes", "--store", str(store), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert "1 change point(s)" in p.stdout and "softmax_kernel" in p.stdout
