"""Process-group handling of zlbench.runner.execute.proc."""

from __future__ import annotations

import io
import sys
import time

from zlbench.runner.execute.proc import TerminalSink, run_streaming


def _gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_timeout_kills_grandchildren():
    lines: list[str] = []
    # A shell that starts a sleeper (a grandchild of ours) and waits for it.
    script = "sleep 300 & echo sleeper=$!; wait"
    t0 = time.monotonic()
    res = run_streaming(["sh", "-c", script], sink=lines.append, timeout_s=1.0, grace_s=1.0)
    assert res.timed_out
    assert time.monotonic() - t0 < 10
    pid = int(next(x for x in lines if x.startswith("sleeper=")).split("=")[1])
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"grandchild {pid} survived the timeout"


def test_term_ignored_then_killed():
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('up', flush=True); time.sleep(60)"
    )
    res = run_streaming([sys.executable, "-c", code], timeout_s=0.5, grace_s=0.5)
    assert res.timed_out
    assert res.signal == 9


def test_exit_code_and_lines_without_timeout():
    lines: list[str] = []
    res = run_streaming(["sh", "-c", "echo a; echo b >&2; exit 3"], sink=lines.append)
    assert (res.returncode, res.timed_out) == (3, False)
    assert sorted(lines) == ["a", "b"]


def test_stray_grandchild_holding_pipe_does_not_hang():
    # The child exits at once; its background grandchild keeps stdout open.
    t0 = time.monotonic()
    res = run_streaming(["sh", "-c", "sleep 300 & echo started"], timeout_s=None)
    assert res.returncode == 0
    assert time.monotonic() - t0 < 10


def test_terminal_sink_strips_colour_unless_asked():
    plain, colour = io.StringIO(), io.StringIO()
    TerminalSink(plain)("\x1b[31mred\x1b[0m x")
    TerminalSink(colour, color=True)("\x1b[31mred\x1b[0m x")
    assert plain.getvalue() == "red x\n"
    assert colour.getvalue() == "\x1b[31mred\x1b[0m x\n"
