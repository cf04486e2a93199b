"""A child process in its own process group, its output streamed line by line.

Why: a benchmark process may spawn helpers (Triton compile workers, nvidia-smi
probes); killing only the pytest process would leave them holding the GPU or
the output pipe. Each child is started with ``start_new_session=True`` so its
process group id is its pid, and a timeout or an interrupt kills the whole
group: SIGTERM, a grace period, then SIGKILL (docs/architecture.md).

A descendant can leave the group (``setsid``, a daemon's double fork) and keep
the pipe open. So each child also carries a tag in its environment
(``ZLBENCH_PROC_TAG``, inherited by everything it starts): a kill signals the
group and every process whose environment holds the tag, wherever it was
reparented (:mod:`zlbench.runner.execute.proc_guard` finds them in /proc). If
this process is killed with SIGKILL, the guard process (started with the first
child, watching a pipe from us) kills every tagged process left. A pipe that
stays open after all that (a descendant that cleared its environment) is given
up after a few seconds instead of blocking the batch.

Output (stdout and stderr merged) is read by a thread and handed to the caller
line by line; :meth:`GroupProcess.lines` also yields ``None`` on idle ticks so
the caller can enforce deadlines that move while the child runs (the worker's
per-op timeout starts at each op's BEGIN line).

Once this process is stopping (:mod:`zlbench.runner.execute.stop`: a SIGINT or SIGTERM
reached the CLI), no child starts, :meth:`GroupProcess.lines` kills its group and ends
in whichever thread reads it, and :func:`stop_all` kills every group still running
from the main thread.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from zlbench.parse import strip_ansi
from zlbench.runner.execute import proc_guard, stop

__all__ = [
    "GroupProcess",
    "ProcResult",
    "Sink",
    "TerminalSink",
    "kill_group",
    "run_streaming",
    "stop_all",
    "strip_ansi",
]

# A sink receives each output line of the child, without its newline, ANSI kept.
Sink = Callable[[str], None]

_EOF = object()


@dataclass(frozen=True)
class ProcResult:
    """How a streamed child ended."""

    returncode: int  # negative: killed by that signal (subprocess convention)
    timed_out: bool
    seconds: float

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None


class TerminalSink:
    """Writes lines to a stream; keeps colour only when ``color`` (default: a tty)."""

    def __init__(self, stream: TextIO | None = None, color: bool | None = None):
        self.stream = stream if stream is not None else sys.stdout
        if color is None:
            isatty = getattr(self.stream, "isatty", None)
            color = bool(isatty and isatty())
        self.color = color

    def __call__(self, line: str) -> None:
        text = line if self.color else strip_ansi(line)
        self.stream.write(text + "\n")
        self.stream.flush()


def _live_members(pgid: int) -> bool | None:
    """Whether a non-zombie process is in group ``pgid`` (Linux /proc); None: unknown."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields after "(comm)": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _group_alive(pgid: int) -> bool:
    """A member of the group still runs (zombies waiting for their reaper do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member we cannot signal still exists
        return True
    live = _live_members(pgid)
    return True if live is None else live


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen, grace_s: float = 5.0, tag: str | None = None) -> None:
    """SIGTERM the process group led by ``proc`` (and, with ``tag``, every process
    carrying that tag: descendants that left the group), wait up to ``grace_s``,
    then SIGKILL. Reaps ``proc`` itself."""
    pgid = proc.pid

    def alive() -> bool:
        return _group_alive(pgid) or bool(tag and proc_guard.tagged(tag))

    _signal_group(pgid, signal.SIGTERM)
    if tag:
        proc_guard.signal_tagged(tag, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()
        if proc.returncode is not None and not alive():
            return
        time.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)
    if tag:
        proc_guard.signal_tagged(tag, signal.SIGKILL)
    proc.wait()
    # Members killed by SIGKILL vanish once reaped by their parents (init).
    deadline = time.monotonic() + 2.0
    while alive() and time.monotonic() < deadline:
        time.sleep(0.02)


STOP_GRACE_S = 2.0  # SIGTERM to SIGKILL of a group killed because this process stops

# Every GroupProcess started and not yet waited for, by pid: what :func:`stop_all` kills.
_LIVE: dict[int, GroupProcess] = {}
_LIVE_LOCK = threading.Lock()


def stop_all(grace_s: float = STOP_GRACE_S) -> int:
    """Stop measuring (:func:`stop.request`) and kill the process group (and the tagged
    processes) of every child still running, all at once: SIGTERM, up to ``grace_s``,
    then SIGKILL. Their threads reap them. How many groups were running."""
    stop.request()
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    if not live:
        return 0

    def alive(g: GroupProcess) -> bool:
        return _group_alive(g.proc.pid) or bool(proc_guard.tagged(g.tag))

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in live:
            _signal_group(g.proc.pid, sig)
            proc_guard.signal_tagged(g.tag, sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 2.0)
        while any(alive(g) for g in live) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not any(alive(g) for g in live):
            break
    return len(live)


class GroupProcess:
    """A child started in its own session, stdout+stderr merged and read by a thread.

    Refused (KeyboardInterrupt) once this process is stopping (:mod:`.stop`)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
    ):
        self.argv = list(argv)
        self.tag = proc_guard.new_tag()
        env = dict(os.environ if env is None else env)
        env[proc_guard.TAG_VAR] = self.tag
        if stop.requested():  # interrupted: nothing more is started
            raise KeyboardInterrupt
        proc_guard.ensure_guard()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with _LIVE_LOCK:
            _LIVE[self.proc.pid] = self
        self._queue: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if stop.requested():  # the stop came while it started (stop_all missed it)
            self.kill(grace_s=1.0)
            self.wait()
            raise KeyboardInterrupt

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                self._queue.put(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        finally:
            self._queue.put(_EOF)

    def lines(self, poll_s: float = 0.1) -> Iterator[str | None]:
        """Output lines as they come; ``None`` after each idle ``poll_s``; ends at EOF.

        EOF comes when every holder of the pipe exited. If the child itself has
        exited but a stray descendant keeps the pipe open, the group and the
        tagged processes are killed after a short wait; a pipe still open 3 s
        after that is given up, so this never hangs. Once this process is stopping
        (:mod:`.stop`), the group is killed and the lines end at the next tick: the
        caller checks :func:`stop.requested` before it reads anything into the end.
        """
        exited_at: float | None = None
        while True:
            if stop.requested():  # interrupted: the group is killed, the output ends
                self.kill(grace_s=STOP_GRACE_S)
                return
            try:
                item = self._queue.get(timeout=poll_s)
            except queue.Empty:
                if self.proc.poll() is not None:
                    exited_at = exited_at or time.monotonic()
                    idle = time.monotonic() - exited_at
                    if idle > 5.0:
                        return  # only a holder we cannot find is left
                    if idle > 2.0:
                        self.kill(grace_s=0.5)
                yield None
                continue
            if item is _EOF:
                return
            yield item

    def kill(self, grace_s: float = 5.0) -> None:
        """Kill the whole process group and the tagged processes (TERM, grace, KILL)."""
        kill_group(self.proc, grace_s, self.tag)

    def wait(self) -> int:
        """Wait for the child; then kill whatever of its group is left."""
        rc = self.proc.wait()
        if _group_alive(self.proc.pid) or proc_guard.tagged(self.tag):
            kill_group(self.proc, grace_s=1.0, tag=self.tag)
        with _LIVE_LOCK:
            _LIVE.pop(self.proc.pid, None)
        self._reader.join(timeout=5.0)
        # closing a pipe that a blocked reader holds would block: leave it to exit
        if self.proc.stdout is not None and not self._reader.is_alive():
            self.proc.stdout.close()
        return rc


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    sink: Sink | None = None,
    timeout_s: float | None = None,
    grace_s: float = 5.0,
) -> ProcResult:
    """Run ``argv`` in its own process group, each output line to ``sink``.

    On timeout the whole group is killed (``timed_out=True``); on
    KeyboardInterrupt too, and the interrupt is re-raised.
    """
    child = GroupProcess(argv, cwd=cwd, env=env)
    timed_out = False
    try:
        for line in child.lines():
            if line is not None and sink is not None:
                sink(line)
            if timeout_s is not None and time.monotonic() - child.started > timeout_s:
                if not timed_out:
                    timed_out = True
                    child.kill(grace_s)
    except BaseException:
        child.kill(grace_s)
        child.wait()
        raise
    rc = child.wait()
    return ProcResult(rc, timed_out, time.monotonic() - child.started)
