"""Killing the batch process itself leaves a complete, valid ops_status.csv."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.batch_fakes import make_inventory
from zlbench.models import RunStatus, read_ops_status

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tests.support.batch_fakes import FakeExecutor
    from zlbench.runner.batch.config import BatchConfig
    from zlbench.runner.batch.run import run_batch

    tmp = Path(sys.argv[1])
    run_batch(BatchConfig(
        out_dir=tmp / "out", flaggems_dirs={"main": tmp}, ops_dir=tmp / "ops",
        all_ops=True, gpus=["0", "1"], executor=FakeExecutor(delay_s=0.15),
        progress=sys.stdout,
    ))
    """
)


def test_sigkill_mid_batch_leaves_valid_csv(tmp_path):
    make_inventory(tmp_path / "ops", "main", [f"op{i}" for i in range(40)])
    log = tmp_path / "batch.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(tmp_path)],
            env={**os.environ, "PYTHONPATH": str(REPO)},  # tests.support
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    csv_path = tmp_path / "out" / "ops_status.csv"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if csv_path.is_file() and len(csv_path.read_text().splitlines()) >= 7:
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    statuses = read_ops_status(csv_path)  # parses and validates every row
    assert 6 <= len(statuses) < 40
    assert all(s.status is RunStatus.PASS and s.rows == 2 for s in statuses)
    for s in statuses:
        assert (tmp_path / "out" / s.run_dir / ".complete").is_file()
    assert "[ 5/40] PASS" in log.read_text()  # printed before the 6th row was written
    leftovers = [p.name for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) <= 1  # at most the temp file of the write that was cut short
