"""A writer killed mid-write (SIGKILL, inside its transaction, points half written)
leaves no trace: the next opener sees the store as it was and writes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from zlbench.history.store import open_store
from zlbench.models.history import GateRun, RowPoint

pytestmark = pytest.mark.proc

CHILD = r"""
import sys, time
from pathlib import Path
from zlbench.history.store import open_store
from zlbench.models.history import GateRun, RowPoint

store = open_store(sys.argv[1])
real = type(store.db).executemany

def half(self, sql, rows):
    rows = list(rows)
    real(self, sql, rows[: len(rows) // 2])
    Path(sys.argv[2]).write_text("half written")
    time.sleep(120)  # killed here, the transaction open

type(store.db).executemany = half
rows = [RowPoint(row=f"main/op f32 [{i}]", op="main/op", verdict="PASS") for i in range(100)]
store.add_run(GateRun(run_key="killed", commit="c-killed"), rows)
"""


def test_a_writer_killed_mid_write_leaves_no_trace(store_url, tmp_path):
    with open_store(store_url) as s:
        s.add_run(GateRun(run_key="first", commit="c0"),
                  [RowPoint(row="main/op f32 [0]", op="main/op", verdict="PASS")])  # fmt: skip
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", CHILD, store_url, str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the writer ended before its write"
            assert time.monotonic() < deadline, "the writer never reached its write"
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    with open_store(store_url) as s:
        assert s.counts() == {"commits": 1, "runs": 1, "rowkeys": 1, "points": 1}
        s.add_run(GateRun(run_key="after", commit="c1"),
                  [RowPoint(row="main/op f32 [1]", op="main/op", verdict="PASS")])  # fmt: skip
        assert [c.position for c in s.commits()] == [0, 1]
