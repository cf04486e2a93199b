"""Sweep children: N pytest processes at once, each in its own process group.

Why a module of its own: :func:`zlbench.runner.execute.worker.execute_plan` runs one
process at a time and must be driven from one thread to be interruptible; a
sweep needs its N children running together and all of them killed when the
parent is interrupted (docs/design.md §5.16). Each child is a
:class:`zlbench.runner.execute.proc.GroupProcess` (own session, so Ctrl-C in the
terminal never reaches it directly); on any exception in the parent,
KeyboardInterrupt included, every child's group is killed (TERM, grace, KILL:
:func:`zlbench.runner.execute.proc.kill_group`) before the exception propagates.

Output of child ``k`` goes, ANSI stripped, to its own log file and, prefixed
with ``[sweep k/n gpu=G]``, to the sink.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.runner.execute.proc import GroupProcess, Sink, strip_ansi


@dataclass
class Child:
    """One sweep child: what to start, and how it ended."""

    shard: int
    nshards: int
    gpu: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: GroupProcess | None = field(default=None, repr=False)
    rc: int | None = None
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return f"[sweep {self.shard}/{self.nshards} gpu={self.gpu}]"


def _pump(child: Child, sink: Sink | None, lock: threading.Lock) -> None:
    """Copy the child's output to its log (and the sink) until EOF."""
    assert child.proc is not None
    with open(child.log, "a", encoding="utf-8") as log:
        for line in child.proc.lines(poll_s=0.2):
            if line is None:
                continue
            log.write(strip_ansi(line) + "\n")
            log.flush()
            if sink is not None:
                with lock:
                    sink(f"{child.label} {line}")


def _pause() -> None:
    time.sleep(0.05)


def _ended(child: Child) -> bool:
    """Whether the child has exited; its wall time is taken when it is first seen so."""
    assert child.proc is not None
    if child.proc.proc.poll() is None:
        return False
    if not child.seconds:
        child.seconds = round(time.monotonic() - child.proc.started, 3)
    return True


def _kill_all(children: Sequence[Child], grace_s: float) -> None:
    for child in children:
        if child.proc is not None and child.rc is None:
            child.proc.kill(grace_s)
            child.rc = child.proc.wait()


def run_group(
    children: Sequence[Child],
    *,
    cwd: str | os.PathLike | None = None,
    sink: Sink | None = None,
    timeout_s: float | None = None,
    grace_s: float = 5.0,
) -> None:
    """Start every child, wait for all; fills ``rc``, ``timed_out``, ``seconds``.

    ``timeout_s`` counts from the start, per child: a child past it has its group
    killed and ``timed_out`` set; the others go on.
    """
    lock = threading.Lock()
    pumps: list[threading.Thread] = []
    t0 = time.monotonic()
    try:
        for child in children:
            child.log.parent.mkdir(parents=True, exist_ok=True)
            child.proc = GroupProcess(child.argv, cwd=cwd, env=child.env)
            pump = threading.Thread(target=_pump, args=(child, sink, lock), daemon=True)
            pump.start()
            pumps.append(pump)
        while True:
            running = [c for c in children if not _ended(c)]
            if not running:
                break
            if timeout_s is not None and time.monotonic() - t0 > timeout_s:
                for c in running:
                    c.timed_out = True
                    c.proc.kill(grace_s)
            _pause()
        for child in children:
            child.rc = child.proc.wait()
    except BaseException:
        _kill_all(children, grace_s)
        raise
    finally:
        for pump in pumps:
            pump.join(timeout=5.0)
