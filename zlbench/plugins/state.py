"""Shared in-process state of the zlbench plugins.

Why: several plugins (timing, autotune record/replay, TTGIR, result capture)
must agree on which plan entry and which (dtype, shape) row is being measured
right now, and code patched into triton/FlagGems has no handle on the pytest
``config``. The state lives in ``config.stash`` (one :class:`Session` per
pytest run); one module-level pointer (:func:`active`) makes it reachable from
patched code. Markers are printed here, in one place, so that every marker
line in run.log is also counted into result.json.

Nothing here imports torch, triton or FlagGems.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from zlbench.models import Marker, PlanEntry, Row, RunStatus, WorkerPlan

SESSION_KEY = pytest.StashKey["Session"]()

OpCallback = Callable[["OpState"], None]


@dataclass
class OpState:
    """One plan entry while (and after) its tests run."""

    entry: PlanEntry
    markers: list[Marker] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    dtype: str | None = None  # row being measured now
    shape: str | None = None  # shape_detail text of the row being measured now
    nodeids_done: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)  # passed|failed|skipped per test phase
    error: str | None = None
    failing_shape: str | None = None
    started: float = field(default_factory=time.time)
    bench_s: float = 0.0
    shape_file: str | None = None  # shape file in effect for this op (shapes)
    measured_dtypes: list[str] = field(default_factory=list)
    poisoned: bool = False  # a sticky device fault was seen after the op (devices)
    # Live BenchmarkMetrics objects as upstream creates them: (op_name, dtype, metric).
    live: list[tuple[str, str | None, Any]] = field(default_factory=list)
    live_bench: Any = None  # the benchmark object whose rows are being measured
    # A row part: inputs drawn so far per (benchmark op_name, dtype) (bench_adapter)
    part_rows_seen: dict[tuple[str, str], int] = field(default_factory=dict)
    unattributed: bool = False  # a metric came with no benchmark to name it (capture)


@dataclass
class Session:
    """The state of one pytest process run by the zlbench plugins."""

    plan: WorkerPlan
    current: OpState | None = None
    finished: list[OpState] = field(default_factory=list)
    on_start: list[OpCallback] = field(default_factory=list)
    on_end: list[OpCallback] = field(default_factory=list)


_ACTIVE: Session | None = None
# Subscriptions made before a session exists (plugins import order) are kept here
# and copied into each new session.
_PENDING_START: list[OpCallback] = []
_PENDING_END: list[OpCallback] = []


def active() -> Session | None:
    """The session of this process, or None outside a zlbench-run pytest."""
    return _ACTIVE


def current_op() -> OpState | None:
    """The plan entry being run now, or None (no active session, or between entries)."""
    return _ACTIVE.current if _ACTIVE is not None else None


def say(line: str) -> None:
    """Print one line of zlbench output on its own line (flushed)."""
    sys.stdout.write("\n" + line + "\n")
    sys.stdout.flush()


def start_session(config: pytest.Config, plan: WorkerPlan) -> Session:
    """Create the session for this pytest run and make it the active one."""
    global _ACTIVE
    session = Session(plan=plan, on_start=list(_PENDING_START), on_end=list(_PENDING_END))
    config.stash[SESSION_KEY] = session
    _ACTIVE = session
    return session


def end_session(config: pytest.Config) -> None:
    global _ACTIVE
    session = config.stash.get(SESSION_KEY, None)
    if session is not None and _ACTIVE is session:
        _ACTIVE = None
    if session is not None:
        del config.stash[SESSION_KEY]


def session_of(config: pytest.Config) -> Session | None:
    return config.stash.get(SESSION_KEY, None)


def subscribe(
    on_start: OpCallback | None = None,
    on_end: OpCallback | None = None,
) -> None:
    """Be called when a plan entry's first test starts / after its last test ends.

    ``on_end`` callbacks run before the entry's result.json is written, so they
    may still add markers. Subscriptions apply to the active session and to any
    session started later in this process.
    """
    targets = [_PENDING_START, _PENDING_END]
    if _ACTIVE is not None:
        targets = [_ACTIVE.on_start, _ACTIVE.on_end, *targets]
    for i, lst in enumerate(targets):
        cb = on_start if i % 2 == 0 else on_end
        if cb is not None and cb not in lst:
            lst.append(cb)


def unsubscribe(on_start: OpCallback | None = None, on_end: OpCallback | None = None) -> None:
    lists = [_PENDING_START, _PENDING_END]
    if _ACTIVE is not None:
        lists += [_ACTIVE.on_start, _ACTIVE.on_end]
    for lst in lists:
        for cb in (on_start, on_end):
            if cb is not None and cb in lst:
                lst.remove(cb)


def emit_marker(marker: Marker) -> None:
    """Print the marker line (flushed) and attach it to the op being measured.

    dtype/shape_detail are filled from the current row when the marker lacks them.
    Works without an active session: the line is just printed.
    """
    op = current_op()
    if op is not None:
        update = {}
        if marker.dtype is None and op.dtype is not None:
            update["dtype"] = op.dtype
        if marker.shape_detail is None and op.shape is not None:
            update["shape_detail"] = op.shape
        if update:
            marker = marker.model_copy(update=update)
        op.markers.append(marker)
    sys.stdout.write(marker.line() + "\n")
    sys.stdout.flush()


_TIMED_DEPTH = [0]  # nesting of timed_region(): > 0 while a row's timed code runs
_TIMED_CALLS = [0]  # outermost timed_region() entries so far: one per timed call
# called at each outermost timed_region() entry, before the call runs (the kernel-replay
# capture lists the row in flight: plugins.replay_capture.LaunchRecorder.on_timed_call)
_ON_TIMED_CALL: list[Callable[[], None]] = []


def on_timed_call(callback: Callable[[], None], add: bool = True) -> None:
    """Be called (``add``), or no longer (not ``add``), when a timed call begins. A
    callback must not raise."""
    if add and callback not in _ON_TIMED_CALL:
        _ON_TIMED_CALL.append(callback)
    elif not add and callback in _ON_TIMED_CALL:
        _ON_TIMED_CALL.remove(callback)


@contextlib.contextmanager
def timed_region() -> Iterator[None]:
    """Each call of the FlagGems side's benchmarked function in a row's measurement
    (``zlbench.plugins.timing.measure``: its first call, warmup, capture, or the plain
    fallback's loop): the kernels launched inside it are the row's *timed* kernels
    (docs/codegen.md). Input generation, the torch reference, and the harness around
    the calls (capture setup, do_bench's L2 flush) run outside it."""
    if _TIMED_DEPTH[0] == 0:
        _TIMED_CALLS[0] += 1
        for callback in list(_ON_TIMED_CALL):
            callback()
    _TIMED_DEPTH[0] += 1
    try:
        yield
    finally:
        _TIMED_DEPTH[0] -= 1


def in_timed_region() -> bool:
    """A kernel launched now runs inside a row's timed region."""
    return _TIMED_DEPTH[0] > 0


def timed_calls() -> int:
    """How many timed calls (outermost :func:`timed_region` entries) this process has
    begun: the kernel-replay capture counts a launch's runs per call by it."""
    return _TIMED_CALLS[0]


_OWN_WORK = [0]  # nesting of own_work()
# called as the outermost own_work() begins; each returns what to call as it ends
_OWN_WORK_HOOKS: list[Callable[[], Callable[[], None]]] = []


@contextlib.contextmanager
def own_work() -> Iterator[None]:
    """zlbench's own torch work inside a benchmark: the kernel-replay capture reading a
    launch's tensor values, which FlagGems serves with its own (tuned) kernels. A tuner
    call made in it is not the op's (``plugins._tuners``): not recorded, not pinned, not
    counted as a sweep, so it can never make an op a FALLBACK (an H100's v5 gates
    marked argsort, group_norm, index_select, isin and topk ``key_missing`` for the
    index kernel that read their small tensors, 2026-12-06)."""
    ends = [hook() for hook in list(_OWN_WORK_HOOKS)] if _OWN_WORK[0] == 0 else []
    _OWN_WORK[0] += 1
    try:
        yield
    finally:
        _OWN_WORK[0] -= 1
        for end in ends:
            end()


def on_own_work(hook: Callable[[], Callable[[], None]], add: bool = True) -> None:
    """Be called (``add``), or no longer, as zlbench's own work begins; ``hook`` returns
    what to call as it ends. Neither may raise."""
    if add and hook not in _OWN_WORK_HOOKS:
        _OWN_WORK_HOOKS.append(hook)
    elif not add and hook in _OWN_WORK_HOOKS:
        _OWN_WORK_HOOKS.remove(hook)


def in_own_work() -> bool:
    """A tuner runs now for zlbench's own work (:func:`own_work`), not for the op."""
    return _OWN_WORK[0] > 0


def set_row_context(dtype: str | None, shape: str | None) -> None:
    """Record which row is being measured (called by the capture plugin)."""
    op = current_op()
    if op is not None:
        op.dtype = dtype
        op.shape = shape


def entry_status(outcomes: list[str], rows: int, poisoned: bool = False) -> RunStatus:
    """PASS / FAIL / SKIP of a plan entry from its test-phase outcomes."""
    if poisoned or "failed" in outcomes:
        return RunStatus.FAIL
    if "skipped" in outcomes and "passed" not in outcomes and rows == 0:
        return RunStatus.SKIP
    return RunStatus.PASS


def skipped_tests(outcomes: list[str]) -> int:
    """How many of an entry's tests were skipped (``outcomes`` holds one "skipped" per
    skipped test: its setup or call phase, never both)."""
    return outcomes.count("skipped")
