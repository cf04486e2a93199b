"""Stopping the benchmark processes of this zlbench process (issue 49: an interrupted
gate kept measuring).

A SIGINT or SIGTERM reaches only the main thread, as a KeyboardInterrupt; the threads
that run benchmark processes (a batch's GPU slots, the interleaved A/B's two sides) do
not see it. So the CLI's signal handler also sets the flag here (:func:`request`,
signal-safe: a plain assignment) before it raises; from then on no benchmark process
starts (:class:`~zlbench.runner.execute.proc.GroupProcess` refuses), every thread
streaming one unwinds with a KeyboardInterrupt at its next output line or idle tick
(killing its process group: TERM, grace, KILL), and the CLI kills whatever groups are
still in flight (:func:`zlbench.runner.execute.proc.stop_all`) before it exits 130.

Stdlib only: the CLI installs its handlers before anything heavy is loaded. Only the
CLI (and tests) set or clear the flag; a library caller's own KeyboardInterrupt unwinds
its batch as before (each worker thread interrupted in turn).

A batch runs as one :func:`unit`: the CLI, before it exits, waits (bounded) until every
unit has unwound (:func:`wait_units`), so each leaves its partial marker; Python's own
wait for the threads at exit is not enough (after a ``join`` that a KeyboardInterrupt
cut short, Python 3.11 may count the thread as ended while it still runs).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

_state = {"stop": False}
_units = {"n": 0}
_units_lock = threading.Lock()


def request() -> None:
    """Stop measuring: no new benchmark process, the running ones unwind."""
    _state["stop"] = True


def requested() -> bool:
    return _state["stop"]


def clear() -> None:
    """A new command in this process (the CLI's ``main``) measures again."""
    _state["stop"] = False


@contextlib.contextmanager
def unit() -> Iterator[None]:
    """A piece of measuring (a batch) that :func:`wait_units` waits for."""
    with _units_lock:
        _units["n"] += 1
    try:
        yield
    finally:
        with _units_lock:
            _units["n"] -= 1


def wait_units(timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` until no :func:`unit` runs; whether none does."""
    deadline = time.monotonic() + timeout_s
    while _units["n"] > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return _units["n"] <= 0


__all__ = ["clear", "request", "requested", "unit", "wait_units"]
