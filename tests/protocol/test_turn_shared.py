"""The GPU's shared turn (zlbench.protocol.turn GpuTurn.share / released): untimed GPU
work of many processes at once, never during a timing; a waiting timer stops new
sharers (turnstile); compiling gives the shared turn up. Other processes are real
subprocesses (flock is between open file descriptions)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from test_turn import expect_line, finish, probe

from zlbench.protocol.turn import GPU_TURN_LOG_VAR, GPU_TURN_VAR, GpuTurn

# argv: "share" | "hold", seconds to keep it. Prints "ready", then "in" once it has
# the turn (and the epoch time), "out" when it gave it back.
WORKER = textwrap.dedent(
    """
    import sys, time
    from zlbench.protocol.turn import process_turn
    turn = process_turn()
    print("ready", flush=True)
    sys.stdin.readline()  # go
    ctx = turn.share() if sys.argv[1] == "share" else turn.hold()
    with ctx:
        print("in", time.time(), flush=True)
        time.sleep(float(sys.argv[2]))
    print("out", time.time(), flush=True)
    """
)


def worker(lock, mode: str, seconds: float) -> subprocess.Popen:
    env = dict(os.environ, **{GPU_TURN_VAR: str(lock)})
    env.pop(GPU_TURN_LOG_VAR, None)
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, mode, str(seconds)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    expect_line(proc, "ready")
    return proc


def go(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")
    proc.stdin.flush()


def stamp(proc: subprocess.Popen, word: str) -> float:
    kind, _, when = proc.stdout.readline().strip().partition(" ")
    assert kind == word, f"expected {word!r}, got {kind!r}"
    return float(when)


def done(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    finish(proc)


@pytest.fixture
def lock(tmp_path):
    return tmp_path / "gpu-0.lock"


def test_without_a_path_share_and_released_are_no_ops(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    turn = GpuTurn(None)
    with turn.share(), turn.released(), turn.share():
        assert turn.shared_depth == 0 and turn._sh_fd is None
    assert list(tmp_path.iterdir()) == []


def test_sharers_overlap_but_keep_a_timer_out(lock):
    turn = GpuTurn(str(lock))
    with turn.share():
        assert turn.shared_depth == 1
        assert probe(lock, shared=True) == "free"  # another process's untimed work: yes
        assert probe(lock) == "busy"  # another process's timing: no
        with turn.share():  # nested: nothing more taken
            assert turn.shared_depth == 1
        assert probe(lock) == "busy"
    assert turn.shared_depth == 0 and probe(lock) == "free"


def test_a_sharer_waits_for_a_timing_to_end(lock):
    timer = worker(lock, "hold", 0.5)
    go(timer)
    t_in = stamp(timer, "in")
    turn = GpuTurn(str(lock))
    with turn.share():
        entered = time.time()
    t_out = stamp(timer, "out")
    done(timer)
    assert entered >= t_out - 0.05 and entered - t_in > 0.3


def test_a_waiting_timer_stops_new_sharers_turnstile(lock):
    """A holds the turn shared; T waits to time; B, asking to share after T, must not
    slip in before T (else sharers could starve the timing forever)."""
    a = worker(lock, "share", 0.6)
    go(a)
    stamp(a, "in")
    t = worker(lock, "hold", 0.3)
    go(t)
    deadline = time.time() + 5
    while probe(f"{lock}.gate") != "busy":  # T is waiting in flock, holding the gate
        assert time.time() < deadline, "the timer never took the gate"
        time.sleep(0.01)
    b = worker(lock, "share", 0.0)
    go(b)
    a_out = stamp(a, "out")
    t_in, t_out = stamp(t, "in"), stamp(t, "out")
    b_in = stamp(b, "in")
    for p in (a, t, b):
        done(p)
    assert t_in >= a_out - 0.05  # the timing waited for the untimed work
    assert b_in >= t_out - 0.05  # the later sharer waited for the timing


def test_hold_inside_share_drops_the_shared_turn_and_takes_it_again(lock):
    turn = GpuTurn(str(lock))
    with turn.share():
        with turn.hold():  # an autotuner timing inside a first call: no self-deadlock
            assert turn.depth == 1 and turn._sh_fd is None
            assert probe(lock, shared=True) == "busy"
            with turn.share():  # untimed work inside the turn: the turn covers it
                assert turn._sh_fd is None
        assert turn.depth == 0 and turn._sh_fd is not None
        assert probe(lock) == "busy" and probe(lock, shared=True) == "free"
    assert turn._sh_fd is None and probe(lock) == "free"
    assert turn.taken == 1


def test_released_lets_a_timer_in_while_compiling(lock):
    turn = GpuTurn(str(lock))
    with turn.share():
        with turn.released():  # a JIT compile: CPU only
            assert turn._sh_fd is None and probe(lock) == "free"
        assert turn._sh_fd is not None and probe(lock) == "busy"
    with turn.released():  # not sharing: nothing to give up
        assert probe(lock) == "free"
    assert probe(lock) == "free"


def test_an_error_inside_share_releases_it(lock):
    turn = GpuTurn(str(lock))
    with pytest.raises(ValueError), turn.share():
        raise ValueError("boom")
    assert turn.shared_depth == 0 and turn._sh_fd is None and probe(lock) == "free"
