"""The process that goes first for a shared GPU's turn (zlbench.protocol.turn): the
others wait while its marker exists; a marker left by a dead process blocks nobody."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from zlbench.protocol.turn import (
    FIRST_SUFFIX,
    GPU_TURN_FIRST_VAR,
    GPU_TURN_LOG_VAR,
    GPU_TURN_VAR,
    GpuTurn,
)
from zlbench.runner.batch.turns import parse_turns

ONE_TURN = textwrap.dedent(
    """
    from zlbench.protocol.turn import process_turn
    with process_turn().hold():
        pass
    """
)


def one_turn(lock, log, first: bool) -> subprocess.Popen:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
    env[GPU_TURN_VAR], env[GPU_TURN_LOG_VAR] = str(lock), str(log)
    env.pop(GPU_TURN_FIRST_VAR, None)
    if first:
        env[GPU_TURN_FIRST_VAR] = "1"
    return subprocess.Popen([sys.executable, "-c", ONE_TURN], env=env)


def wait_for(predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_first_process_gets_the_turn_before_one_that_waits_for_it(tmp_path):
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "turns.csv"
    marker = tmp_path / ("gpu-0.lock" + FIRST_SUFFIX)
    held = GpuTurn(str(lock))
    with held.hold():  # another process is timing
        first = one_turn(lock, log, first=True)
        wait_for(marker.exists)  # it wants the turn
        other = one_turn(lock, log, first=False)
        time.sleep(0.5)  # the other is waiting too (for the marker to go)
        assert first.poll() is None and other.poll() is None
    assert first.wait(timeout=30) == 0 and other.wait(timeout=30) == 0
    turns = sorted(parse_turns(log.read_text()), key=lambda t: t.start)
    assert [t.pid for t in turns] == [first.pid, other.pid]
    assert not marker.exists()  # removed once the first process had the turn


def test_a_marker_left_by_a_dead_process_blocks_nobody(tmp_path):
    lock = tmp_path / "gpu-0.lock"
    marker = tmp_path / ("gpu-0.lock" + FIRST_SUFFIX)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    marker.write_text(str(dead.pid))
    turn = GpuTurn(str(lock))
    t0 = time.monotonic()
    with turn.hold():
        pass
    assert time.monotonic() - t0 < 5 and not marker.exists() and turn.taken == 1


def test_a_first_process_alone_takes_and_leaves_the_turn_without_a_marker(tmp_path):
    lock = tmp_path / "gpu-0.lock"
    turn = GpuTurn(str(lock), first=True)
    with turn.hold():
        assert not (tmp_path / ("gpu-0.lock" + FIRST_SUFFIX)).exists()
    with turn.hold():
        pass
    assert turn.taken == 2
