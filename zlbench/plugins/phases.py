"""Where an op's wall time goes: ``<run_dir>/timings.json`` per op (docs/screening.md,
"Time breakdown"). Opt-in: ``-p zlbench.plugins.phases`` (``zlbench batch
--phase-timings`` adds it), so a normal run pays nothing for it.

Why: the GPU time of a screen is mostly not the timed region; to make it shorter
one must know which part is long. Recorded, in wall-clock seconds:

* process start -> plugins configured (interpreter, torch, pytest, the FlagGems
  conftest and its ``import flag_gems``), from the process start time the kernel
  keeps (``/proc/self/stat``; None where there is no /proc), and pytest's
  collection: both for the first op of the process only;
* per op: its wall time (first test start to last test end), pytest setup, call
  and teardown, and what runs after its last test before its ``ZLBENCH_OP_END``:
  each other plugin's op-end hook (codegen records and SASS disassembly, TTGIR
  dumps, autotune records, the device check), timed by wrapping the session's
  op-end callbacks (this plugin's own runs last, so it sees them all);
* per measurement of zlbench's graph timing (``zlbench.plugins.timing.measure``,
  wrapped here: its backend and function are observed, nothing else changes): the
  discarded first call (JIT compile, autotune, lazy init), eager warmup, graph
  capture, timed replays and synchronizations, split into the reference side
  (upstream's ``latency_base``: the torch op) and the measured side
  (``latency``: FlagGems), and the wait for the GPU's turn when the GPU is shared
  (``--gpu-share``). The side is read from upstream's ``Benchmark.run``
  frame: a measurement made while its ``metric.latency_base`` is still unset is
  the reference one.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from zlbench.models import dump_json_model
from zlbench.models.timings import TIMINGS_JSON, OpTimings, SidePhases
from zlbench.plugins import state, timing
from zlbench.protocol.turn import process_turn


def process_start_time() -> float | None:
    """Epoch seconds when this process started (Linux /proc), else None."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


class _TimedBackend:
    """A timing backend that adds the wall time of each call to a :class:`SidePhases`."""

    def __init__(self, backend: Any, side: SidePhases) -> None:
        self.backend, self.side, self.eager_calls = backend, side, 0

    def _timed(self, field: str, fn: Any, *args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            setattr(self.side, field, getattr(self.side, field) + time.perf_counter() - t0)

    def synchronize(self) -> None:
        self._timed("sync_s", self.backend.synchronize)

    def time_eager(self, fn: Any, n: int) -> float:
        return self._timed("warmup_s", self.backend.time_eager, fn, n)

    def capture(self, fn: Any, n: int) -> Any:
        return self._timed("capture_s", self.backend.capture, fn, n)

    def replay_ms(self, graph: Any) -> float:
        return self._timed("replays_s", self.backend.replay_ms, graph)

    def plain(self, fn: Any, rep_ms: float, warmup_ms: float, **kw: Any) -> Any:
        return self._timed("other_s", self.backend.plain, fn, rep_ms, warmup_ms, **kw)


def _total(side: SidePhases) -> float:
    return (
        side.first_call_s
        + side.warmup_s
        + side.capture_s
        + side.replays_s
        + side.sync_s
        + side.other_s
        + side.gpu_wait_s
    )


class _TimedHook:
    """An op-end callback whose wall time is added to the op's ``op_end_hooks``;
    equal to the callback it wraps (so ``state.unsubscribe`` still finds it)."""

    def __init__(self, cb: state.OpCallback, phases: Phases) -> None:
        self.cb, self.phases = cb, phases
        self.name = (getattr(cb, "__module__", None) or "other").rsplit(".", 1)[-1]

    def __call__(self, op: state.OpState) -> None:
        t0 = time.perf_counter()
        try:
            self.cb(op)
        finally:
            cur = self.phases.current
            if cur is not None:
                spent = cur.op_end_hooks.get(self.name, 0.0) + time.perf_counter() - t0
                cur.op_end_hooks[self.name] = round(spent, 4)

    def __eq__(self, other: object) -> bool:
        return other is self or other == self.cb

    def __hash__(self) -> int:
        return hash(self.cb)


class Phases:
    """The plugin object: hooks, the wrapped ``measure`` and the op being timed."""

    def __init__(self) -> None:
        self.started = process_start_time()
        self.configured = time.time()
        self.collection: list[float] = []
        self.current: OpTimings | None = None
        self.began = 0.0
        self.last_end: float | None = None  # the op's last test teardown end
        self.ops_seen = 0
        self.measure = timing.measure

    def timed_measure(self, fn: Any, backend: Any, settings: Any, **kw: Any) -> Any:
        op = self.current
        if op is None:
            return self.measure(fn, backend, settings, **kw)
        side = op.torch if timing.reference_side(sys._getframe(1)) else op.gems
        side.calls += 1
        first = [True]
        turn = process_turn()

        def observed() -> Any:
            if not first[0]:
                return fn()
            first[0] = False
            t0, waited = time.perf_counter(), turn.waited_s
            try:
                return fn()
            finally:  # an autotune sweep's waits for the turn are gpu_wait_s
                spent = time.perf_counter() - t0 - (turn.waited_s - waited)
                side.first_call_s += spent

        t0, before, waited = time.perf_counter(), _total(side), turn.waited_s
        try:
            return self.measure(observed, _TimedBackend(backend, side), settings, **kw)
        finally:
            side.gpu_wait_s += turn.waited_s - waited
            inner = _total(side) - before
            side.other_s += max(0.0, time.perf_counter() - t0 - inner)

    def on_start(self, op: state.OpState) -> None:
        first = self.ops_seen == 0
        self.ops_seen += 1
        self.current = OpTimings(run_name=op.entry.run_name, first_in_process=first)
        if first:
            if self.started is not None:
                self.current.process_start_s = round(self.configured - self.started, 3)
            if len(self.collection) == 2:
                self.current.collection_s = round(self.collection[1] - self.collection[0], 3)
        self.began, self.last_end = time.time(), None
        self.time_op_end_hooks()

    def time_op_end_hooks(self) -> None:
        """Wrap the session's other op-end callbacks in timers; put this one last."""
        session = state.active()
        if session is None:
            return
        hooks = [cb for cb in session.on_end if cb != self.on_end]
        hooks = [cb if isinstance(cb, _TimedHook) else _TimedHook(cb, self) for cb in hooks]
        session.on_end[:] = [*hooks, self.on_end]

    def on_end(self, op: state.OpState) -> None:
        if self.current is None:
            return
        now = time.time()
        end = self.last_end if self.last_end is not None else now
        self.current.op_wall_s = round(end - self.began, 3)
        self.current.op_end_s = round(now - end, 4)
        run_dir = Path(op.entry.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        dump_json_model(run_dir / TIMINGS_JSON, self.current)
        self.current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session: pytest.Session):
        self.collection = [time.time()]
        yield
        self.collection.append(time.time())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.current is not None and report.when in ("setup", "call", "teardown"):
            name = f"{report.when}_s"
            setattr(self.current, name, getattr(self.current, name) + report.duration)
            if report.when == "teardown":
                self.last_end = time.time()


_PLUGIN: Phases | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _PLUGIN
    if _PLUGIN is not None:
        return
    _PLUGIN = Phases()
    config.pluginmanager.register(_PLUGIN, "zlbench-phases")
    timing.measure = _PLUGIN.timed_measure
    state.subscribe(on_start=_PLUGIN.on_start, on_end=_PLUGIN.on_end)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _PLUGIN
    if _PLUGIN is None:
        return
    timing.measure = _PLUGIN.measure
    state.unsubscribe(on_start=_PLUGIN.on_start, on_end=_PLUGIN.on_end)
    _PLUGIN = None
