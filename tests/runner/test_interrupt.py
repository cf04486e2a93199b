"""An interrupted batch stops measuring (issue 49 item 4, seen on an H100: after
``zlbench gate: interrupted`` its workers logged 5 more ops and the gate did not exit
within 20 s). A SIGINT or SIGTERM reaches only the main thread; the threads that run
benchmark processes (a batch's GPU slots, the interleaved A/B's two sides) must stop
too: no next op starts, the process groups in flight are killed, the batch dirs say
``INTERRUPTED`` (partial), and zlbench exits 130.

Real benchmark processes (a fake pytest that takes 2 s per op), real process groups,
the real CLI; only the executor's ``python`` and the preflight are stood in for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory
from zlbench.models import RunStatus, read_ops_status
from zlbench.runner.batch.files import INTERRUPTED

REPO = Path(__file__).resolve().parents[2]
OP_S = 2.0  # each fake op's seconds: no op of a slot starts within that of another

FAKE_PYTEST = textwrap.dedent(
    """
    import json, os, sys, time
    argv = sys.argv[1:]
    plan = json.load(open(argv[argv.index("--zl-plan") + 1]))
    for e in plan["entries"]:
        with open(os.path.join(e["run_dir"], "started"), "w") as f:
            f.write(str(os.getpid()))
        name = e["run_name"]
        print(f"benchmark/test_x.py ZLBENCH_OP_BEGIN run_name={name}", flush=True)
        time.sleep(OP_S)
        res = {"schema_version": 1, "kind": "run", "repo": "main", "mode": "record",
               "timing": "kernel", "run_name": name, "op": e["op"], "status": "PASS",
               "rows": [{"op": e["op"], "dtype": "float32", "shape": "[1]",
                         "latency_ms": 1.0}]}
        with open(os.path.join(e["run_dir"], "result.json"), "w") as f:
            json.dump(res, f)
        print(f"ZLBENCH_OP_END run_name={name} status=PASS", flush=True)
    """
).replace("OP_S", repr(OP_S))

# The CLI's batch command with the real executor over the fake pytest; "ab": its batch
# run as the gate's interleaved A/B runs one, each side in a thread of its own.
DRIVER = textwrap.dedent(
    """
    import functools, sys
    from dataclasses import replace
    from pathlib import Path
    import zlbench.runner.batch.run as run_mod
    from zlbench.cli import batch_cmd, main
    from zlbench.runner.batch import workers
    from zlbench.runner.execute.worker import execute_plan

    fake_python, how = sys.argv[1], sys.argv[2]
    workers.default_executor = lambda: functools.partial(execute_plan, python=fake_python)
    batch_cmd.preflight = lambda config: None
    if how == "ab":
        from zlbench.runner.ab.interleave import run_interleaved

        real = run_mod.run_batch

        def both_sides(config):
            def measure(side, ops, out, meet):
                return real(replace(config, out_dir=out)).out_dir

            run_interleaved([], Path(config.out_dir), measure)
            raise SystemExit("both sides ended: the interrupt did not stop them")

        run_mod.run_batch = both_sides
    sys.exit(main(sys.argv[3:]))
    """
)


def _gone(pid: int) -> bool:
    """No process ``pid`` and no member of its group runs (zombies count as gone)."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[2] == str(pid) and fields[0] != "Z":
                return False
    return True


def _started(out: Path) -> list[Path]:
    return sorted(out.rglob("started"))


@pytest.mark.proc
@pytest.mark.parametrize(
    ("how", "gpus", "sig", "batch_dirs"),
    [
        ("ab", "0", signal.SIGINT, ["1/pr", "1/base"]),  # the gate's A/B: 2 side threads
        ("ab", "0", signal.SIGTERM, ["1/pr", "1/base"]),  # a CI cancel
        ("slots", "0,1", signal.SIGINT, [""]),  # one batch, a thread per GPU
    ],
)
def test_an_interrupt_stops_every_worker_and_marks_the_batch_partial(
    tmp_path, how, gpus, sig, batch_dirs
):
    fake, fake_python = tmp_path / "fake_pytest.py", tmp_path / "fake-python"
    fake_python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    fake.write_text(FAKE_PYTEST)
    fake_python.chmod(0o755)
    (tmp_path / "fg" / "benchmark").mkdir(parents=True)
    make_inventory(tmp_path / "ops", "main", [f"op{i}" for i in range(20)])
    out = tmp_path / "out"
    argv = [str(fake_python), how, "batch", "--all", "--ops-dir", str(tmp_path / "ops")]
    argv += ["--gpus", gpus, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZLBENCH_FLAGGEMS_DIR": str(tmp_path / "fg")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    log = tmp_path / "zlbench.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, *argv], env=env, stdout=f, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120  # a loaded machine: only a bound, never timed
        while len(_started(out)) < 2:  # the first op of both threads is being measured
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the ops never started: " + log.read_text()
            time.sleep(0.02)
        began = _started(out)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)  # was: still measuring, killed after 20 s
        except subprocess.TimeoutExpired:
            pytest.fail("zlbench did not exit within 30 s of the signal: " + log.read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert proc.returncode == 130, text
    assert "zlbench batch: interrupted" in text
    assert _started(out) == began, "ops started after the interrupt"
    pids = {int(p.read_text()) for p in began}
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in pids), "a benchmark process group outlived zlbench"
    for rel in batch_dirs:
        d = out / rel
        assert (d / INTERRUPTED).read_text().startswith("interrupted: partial"), rel
        # the ops cut short are not in ops_status.csv as a crash: only decided ops are
        statuses = read_ops_status(d / "ops_status.csv")
        assert all(s.status is RunStatus.PASS for s in statuses), statuses
