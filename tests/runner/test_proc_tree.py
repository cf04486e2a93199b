"""Timeouts end the whole process tree (issue 16): a descendant that started its own
session (setsid) and holds the output pipe is killed with the op, the batch returns
within seconds of --op-timeout, and a batch killed with SIGKILL leaves no orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_worker import _plan, _run, checkout, fake_python  # noqa: F401 (fixtures)

from zlbench.models import RunStatus
from zlbench.runner.execute.proc import run_streaming

# A child that starts a grandchild in its own session holding our stdout, prints
# the grandchild's pid, then sleeps (or exits at once with "exit").
DETACH = (
    "import subprocess, sys, time\n"
    "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
    " start_new_session=True)\n"
    "print(f'detached={kid.pid}', flush=True)\n"
    "if sys.argv[1] != 'exit':\n"
    "    time.sleep(600)\n"
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _gone(pid)


def _pid(lines: list[str], key: str) -> int:
    return int(next(x for x in lines if x.startswith(f"{key}=")).split("=")[1])


def test_timeout_kills_a_detached_grandchild_that_holds_the_pipe():
    lines: list[str] = []
    t0 = time.monotonic()
    res = run_streaming(
        [sys.executable, "-c", DETACH, "sleep"], sink=lines.append, timeout_s=1.0, grace_s=0.5
    )
    took = time.monotonic() - t0
    assert res.timed_out
    assert took < 8, f"returned {took:.1f} s after start (timeout 1 s)"
    assert _wait_gone(_pid(lines, "detached")), "the detached grandchild survived"


def test_a_child_that_exits_leaving_a_detached_pipe_holder_does_not_hang():
    lines: list[str] = []
    t0 = time.monotonic()
    res = run_streaming([sys.executable, "-c", DETACH, "exit"], sink=lines.append)
    assert res.returncode == 0 and not res.timed_out
    assert time.monotonic() - t0 < 10
    assert _wait_gone(_pid(lines, "detached"))


def test_op_timeout_ends_an_op_whose_detached_child_holds_stdout(tmp_path, checkout, fake_python):  # noqa: F811
    plan = _plan(tmp_path, ["detach", "ok"])
    t0 = time.monotonic()
    statuses, _ = _run(plan, checkout, fake_python, op_timeout_s=2.0)
    took = time.monotonic() - t0
    assert [s.status for s in statuses] == [RunStatus.TIMEOUT, RunStatus.PASS]
    assert took < 15, f"the plan took {took:.1f} s with a 2 s --op-timeout"
    pid = int((Path(plan.entries[0].run_dir) / "detached.pid").read_text())
    assert _wait_gone(pid)


# A stand-in for a batch: starts DETACH through GroupProcess, prints both pids, waits.
BATCH = (
    "import sys, time\n"
    "from zlbench.runner.execute.proc import GroupProcess\n"
    "child = GroupProcess([sys.executable, '-c', sys.argv[1], 'sleep'])\n"
    "for line in child.lines():\n"
    "    if line:\n"
    "        print(f'child={child.pid}', line, flush=True)\n"
    "        break\n"
    "time.sleep(600)\n"
)


def test_sigkill_of_the_batch_leaves_no_orphan():
    batch = subprocess.Popen(
        [sys.executable, "-c", BATCH, DETACH],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        first = batch.stdout.readline().split()
        child = int(first[0].split("=")[1])
        grandchild = int(first[1].split("=")[1])
        assert not _gone(child) and not _gone(grandchild)
        os.kill(batch.pid, signal.SIGKILL)
        batch.wait()
        assert _wait_gone(child), "the op's process outlived the killed batch"
        assert _wait_gone(grandchild), "the detached grandchild outlived the killed batch"
    finally:
        if batch.poll() is None:
            batch.kill()
        batch.communicate()
