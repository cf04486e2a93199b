"""The GPU's turn (zlbench.protocol.turn): an exclusive flock per GPU file, re-entrant
within a process, dropped when its holder dies, every turn logged, waits counted.
Other processes are real subprocesses (flock is between open file descriptions)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from zlbench.protocol.turn import (
    GPU_TURN_LOG_VAR,
    GPU_TURN_VAR,
    GpuTurn,
    process_turn,
    reset_process_turn,
)
from zlbench.runner.batch.turns import parse_turns, summarize_turns

PROBE = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    mode = fcntl.LOCK_SH if sys.argv[2:] == ["shared"] else fcntl.LOCK_EX
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        print("busy")
    else:
        print("free")
    """
)

# argv: turns, seconds per turn, seconds to sleep after "ready" before the first turn.
HOLDER = textwrap.dedent(
    """
    import sys, time
    from zlbench.protocol.turn import process_turn
    turn = process_turn()
    print("ready", flush=True)
    time.sleep(float(sys.argv[3]))
    for _ in range(int(sys.argv[1])):
        with turn.hold():
            print("held", flush=True)
            time.sleep(float(sys.argv[2]))
    """
)


def probe(path, shared: bool = False) -> str:
    """'free' or 'busy': can another process take the lock (shared: for untimed work)
    right now?"""
    argv = [sys.executable, "-c", PROBE, str(path), *(["shared"] if shared else [])]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def holder(lock, log, *argv: str, gpu: str = "3") -> subprocess.Popen:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
    env[GPU_TURN_VAR] = str(lock)
    env.pop(GPU_TURN_LOG_VAR, None)
    if log is not None:
        env[GPU_TURN_LOG_VAR] = str(log)
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, *argv], env=env, stdout=subprocess.PIPE, text=True
    )


def expect_line(proc: subprocess.Popen, word: str) -> None:
    line = proc.stdout.readline().strip()
    assert line == word, f"expected {word!r} from the holder, got {line!r}"


def finish(proc: subprocess.Popen) -> None:
    proc.stdout.read()
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0


def test_without_a_path_the_turn_is_a_no_op_and_nests(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for turn in (GpuTurn(None), GpuTurn("", log=str(tmp_path / "log.csv"))):
        assert turn.path is None
        with turn.hold():
            with turn.hold():
                assert turn.depth == 2
            assert turn.depth == 1
        assert turn.depth == 0 and turn.taken == 0 and turn.waited_s == 0.0
    assert list(tmp_path.iterdir()) == []  # no lock file, no log line


def test_nested_hold_locks_once_and_keeps_the_turn_until_the_outer_one_ends(tmp_path):
    lock = tmp_path / "gpu-0.lock"
    turn = GpuTurn(str(lock))
    assert probe(lock) == "free"
    with turn.hold():
        assert probe(lock) == "busy"
        with turn.hold():  # an autotune sweep inside a measurement
            assert turn.depth == 2
        assert turn.depth == 1 and turn.taken == 1
        assert probe(lock) == "busy"  # the inner exit did not release the outer turn
    assert turn.depth == 0 and turn.taken == 1
    assert probe(lock) == "free"
    with turn.hold():
        pass
    assert turn.taken == 2


def test_the_lock_fd_is_not_inherited_by_children(tmp_path):
    """A child the benchmark starts while timing must not keep the turn after it dies."""
    turn = GpuTurn(str(tmp_path / "gpu-0.lock"))
    with turn.hold():
        assert turn._fd is not None and not os.get_inheritable(turn._fd)


def test_an_error_inside_the_turn_releases_it_and_logs_the_turn(tmp_path):
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "turns.csv"
    turn = GpuTurn(str(lock), log=str(log), gpu="5")
    with pytest.raises(ValueError):
        with turn.hold():
            raise ValueError("boom")
    assert turn.depth == 0 and probe(lock) == "free"
    (t,) = parse_turns(log.read_text())
    assert (t.gpu, t.pid) == ("5", os.getpid()) and t.start <= t.end


def test_three_processes_never_time_at_once_and_every_turn_is_logged(tmp_path):
    lock, log = tmp_path / "gpu-3.lock", tmp_path / "gpu_turns.csv"
    gate = GpuTurn(str(lock))  # held until all three are about to contend
    with gate.hold():
        procs = [holder(lock, log, "5", "0.02", "0") for _ in range(3)]
        for p in procs:
            expect_line(p, "ready")
        time.sleep(0.2)  # each is now blocked in flock
    for p in procs:
        finish(p)
    turns = parse_turns(log.read_text())
    assert len(turns) == 15
    assert {t.pid for t in turns} == {p.pid for p in procs}
    (gpu,) = summarize_turns(turns)
    assert (gpu.gpu, gpu.turns, gpu.processes, gpu.overlaps) == ("3", 15, 3, 0)
    assert gpu.busy_s >= 15 * 0.02
    assert gpu.wait_s > 0.1  # they waited for the gate and for each other


def test_a_process_killed_while_holding_the_turn_does_not_block_the_gpu(tmp_path):
    lock = tmp_path / "gpu-0.lock"
    proc = holder(lock, None, "1", "60", "0")
    try:
        expect_line(proc, "ready")
        expect_line(proc, "held")
        assert probe(lock) == "busy"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.stdout.close()
        assert proc.wait(timeout=30) == -signal.SIGKILL
    assert probe(lock) == "free"  # the kernel dropped the dead process's flock
    turn = GpuTurn(str(lock))
    with turn.hold():
        pass
    assert turn.taken == 1 and turn.waited_s < 2.0


def test_a_log_in_a_missing_directory_disables_the_log_not_the_turn(tmp_path):
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "missing" / "gpu_turns.csv"
    turn = GpuTurn(str(lock), log=str(log), gpu="0")
    for _ in range(2):
        with turn.hold():
            assert probe(lock) == "busy"
    assert turn.taken == 2 and turn.log is None
    assert not log.parent.exists()


def test_waited_s_counts_the_time_another_process_held_the_turn(tmp_path):
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "gpu_turns.csv"
    turn = GpuTurn(str(lock), log=str(log), gpu="0")
    with turn.hold():  # uncontended: next to no wait
        pass
    assert turn.waited_s < 0.1
    proc = holder(lock, None, "1", "0.4", "0")
    expect_line(proc, "ready")
    expect_line(proc, "held")
    before = turn.waited_s
    with turn.hold():
        waited = turn.waited_s - before
    finish(proc)
    assert 0.2 < waited < 10
    first, second = parse_turns(log.read_text())
    assert first.wait_s < 0.1 and second.wait_s == pytest.approx(waited, abs=1e-3)


def test_process_turn_reads_the_environment_once(tmp_path, monkeypatch):
    monkeypatch.setenv(GPU_TURN_VAR, str(tmp_path / "gpu-2.lock"))
    monkeypatch.setenv(GPU_TURN_LOG_VAR, str(tmp_path / "turns.csv"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    reset_process_turn()
    try:
        turn = process_turn()
        assert (turn.path, turn.log, turn.gpu) == (
            str(tmp_path / "gpu-2.lock"),
            str(tmp_path / "turns.csv"),
            "2",
        )
        monkeypatch.delenv(GPU_TURN_VAR)
        assert process_turn() is turn  # read once
        reset_process_turn()
        assert process_turn().path is None  # unset: no turn (one process per GPU)
    finally:
        reset_process_turn()


def test_a_long_shared_hold_is_logged_with_the_op_a_short_one_is_not(tmp_path, monkeypatch):
    """A shared hold keeps every other process from timing: one of SHARED_LOG_S or longer
    is a line of the log (kind shared), ended by the share's end or by released()."""
    from zlbench.protocol import turn as turn_mod

    lock, log = tmp_path / "gpu-0.lock", tmp_path / "gpu_turns.csv"
    turn = GpuTurn(str(lock), log=str(log), gpu="0")
    turn.label = "mm__at__test_mm.py"
    with turn.share():
        pass  # far below the second: not logged
    assert not log.exists()
    monkeypatch.setattr(turn_mod, "SHARED_LOG_S", 0.05)
    with turn.share():
        time.sleep(0.08)
        with turn.released():  # the hold so far ends here; compiling holds nothing
            time.sleep(0.08)
        time.sleep(0.08)
        with turn.hold():  # gives the shared turn up for the timing, takes it again
            pass
    kinds = [(t.kind, t.op) for t in parse_turns(log.read_text())]
    assert kinds == [
        ("shared", "mm__at__test_mm.py"),  # until released()
        ("shared", "mm__at__test_mm.py"),  # after it, until the hold
        ("timed", "mm__at__test_mm.py"),
    ]
    shared = [t for t in parse_turns(log.read_text()) if t.kind == "shared"]
    assert all(0.07 < t.end - t.start < 1.0 and t.wait_s == 0.0 for t in shared)
    (g,) = summarize_turns(parse_turns(log.read_text()))
    assert g.turns == 1 and g.shared_max_op == "mm__at__test_mm.py"  # a hold is no turn


def test_the_op_named_in_the_log_is_the_op_the_plugins_started(monkeypatch):
    from types import SimpleNamespace

    from zlbench.plugins import timing

    reset_process_turn()
    try:
        timing._label_turn(SimpleNamespace(entry=SimpleNamespace(run_name="softmax")))
        assert process_turn().label == "softmax"
    finally:
        reset_process_turn()
