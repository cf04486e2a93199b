"""Result capture: one ``<run_dir>/result.json`` per plan entry, from the benchmark objects.

Why: upstream prints a dtype's table only after its last shape, and aborts a
test at its first failing shape with ``pytest.fail`` (docs/design.md §5.21), so
parsing stdout loses every row measured before the failure and never names
the failing shape. Here rows are taken from the ``BenchmarkMetrics`` objects
as upstream creates them (see :mod:`zlbench.plugins.bench_adapter`), so a
failing op keeps its measured rows and ``failing_shape`` names the row that
failed.

Several plan entries may share one process (startup costs ~14 s on a GPU
host, docs/design.md §6): items are grouped by entry, in plan order, and each entry
is framed by ``ZLBENCH_OP_BEGIN run_name=<n>`` / ``ZLBENCH_OP_END run_name=<n>
status=<S>`` lines, which the runner uses to split the output into per-op
run.log files. The first failing test of an entry prints
``ZLBENCH_OP_ERROR run_name=<n> signature=<s>`` inside that frame
(:func:`exception_signature`): pytest prints the traceback only in its
end-of-session summary, after the END. ``result.json`` is written atomically and only once the
entry's last test has finished, after the on_end callbacks of the other
plugins: a process that dies mid-op leaves no result.json for that op.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from zlbench import parse
from zlbench.models import (
    MarkerKind,
    RunResult,
    RunStatus,
    assign_occurrences,
    atomic_write_text,
    count_markers,
    dump_json_model,
)
from zlbench.plugins import bench_adapter, environment, state, timing
from zlbench.plugins.devices import POISONED_EXIT_CODE
from zlbench.plugins.state import entry_status, skipped_tests
from zlbench.protocol.boundary import begin_line, end_line, error_line, slow_hook_line
from zlbench.protocol.layout import RESULT_JSON, SHAPES_YAML
from zlbench.protocol.signature import OUTCOMES, location, outcome_location

# item.stash: index of the item's plan entry; whether it is the entry's last item.
SLOW_HOOK_S = 30.0  # an op-end hook running this long says so in the op's run.log
ENTRY_KEY = pytest.StashKey[int]()
LAST_KEY = pytest.StashKey[bool]()


# --------------------------------------------------------------------------- pure helpers


def matches(nodeid: str, wanted: str) -> bool:
    """An item belongs to a plan node id: equal, or a parametrization / child of it."""
    return nodeid == wanted or nodeid.startswith(wanted + "[") or nodeid.startswith(wanted + "::")


def group_items(nodeids: list[str], entries: list[list[str]]) -> list[tuple[int, int]]:
    """(entry index, item index) pairs in plan order; unplanned items are left out."""
    taken: set[int] = set()
    order: list[tuple[int, int]] = []
    for e, wanted_ids in enumerate(entries):
        for wanted in wanted_ids:
            for i, nodeid in enumerate(nodeids):
                if i not in taken and matches(nodeid, wanted):
                    taken.add(i)
                    order.append((e, i))
    return order


def exception_signature(exc: BaseException) -> str | None:
    """``ExcType in path:line`` of the innermost frame of the first exception in
    ``exc``'s chain that is not a pytest outcome (upstream wraps a kernel's error in
    ``pytest.fail(str(e))``); a bare outcome names its own location and message."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        frames = traceback.extract_tb(e.__traceback__)
        if type(e).__name__ not in OUTCOMES and frames:
            return location(type(e).__name__, frames[-1].filename, frames[-1].lineno)
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _in_pytest(f.filename)]
    if not frames:
        return None
    msg = getattr(exc, "msg", None) or str(exc)
    return outcome_location(type(exc).__name__, frames[-1].filename, frames[-1].lineno, msg)


def _in_pytest(path: str) -> bool:
    """A frame of pytest itself (``pytest.fail`` raises from ``_pytest/outcomes.py``)."""
    parts = path.replace("\\", "/").split("/")
    return "_pytest" in parts or "pluggy" in parts


def build_result(op: state.OpState, plan_timing: str, env: Any, now: float) -> RunResult:
    rows = assign_occurrences(op.rows)
    graphless = {(m.dtype, m.shape_detail) for m in op.markers if m.kind is MarkerKind.NO_CUDAGRAPH}
    rows = [
        r.model_copy(update={"no_cudagraph": True}) if (r.dtype, r.shape) in graphless else r
        for r in rows
    ]
    entry = op.entry
    status = entry_status(op.outcomes, len(rows), op.poisoned)
    return RunResult(
        repo=entry.repo,
        run_name=entry.run_name,
        op=entry.op,
        test_nodeids=list(op.nodeids_done),
        status=status,
        mode=entry.mode,
        timing=plan_timing,
        dtypes=list(op.measured_dtypes) or list(entry.dtypes),
        rows=rows,
        markers=list(op.markers),
        marker_counts=count_markers(op.markers),
        failing_shape=op.failing_shape,
        error=op.error if status is RunStatus.FAIL else None,
        environment=env,
        shape_file_sha256=_sha256(op.shape_file),
        replay_from=entry.replay_records,
        started=datetime.fromtimestamp(op.started, timezone.utc).isoformat(timespec="seconds"),
        duration_s=round(now - op.started, 3),
        bench_s=round(op.bench_s, 3),
        skipped_tests=skipped_tests(op.outcomes),
    )


def _sha256(path: str | None) -> str | None:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- live rows


def on_dtype(bench: Any, dtype: Any) -> None:
    op = state.current_op()
    if op is None:
        return
    name = parse.normalize_dtype(dtype)
    if name not in op.measured_dtypes:
        op.measured_dtypes.append(name)
    op.live_bench = bench
    state.set_row_context(name, None)


def on_shape(bench: Any, detail: Any) -> None:
    op = state.current_op()
    if op is not None:
        state.set_row_context(op.dtype, parse.shape_text(detail))


def on_metric(metric: Any) -> None:
    op = state.current_op()
    if op is None:
        return
    if op.live_bench is not None:
        op.live.append((op.live_bench.op_name, op.dtype, metric))
    elif not op.unattributed:
        op.unattributed = True
        state.say(
            f"zlbench: {op.entry.run_name}: a benchmark measured rows zlbench cannot name "
            "(its own init_user_config never calls upstream's): they are not recorded"
        )


def _end_hook(cb: state.OpCallback, op: state.OpState) -> None:
    """Run one op-end callback; one line in the op's run.log if it is still running
    after :data:`SLOW_HOOK_S` (a hook that hangs is then named by the log's tail)."""
    timer = _slow_timer(op.entry.run_name, _hook_name(cb))
    try:
        cb(op)
    finally:
        timer.cancel()


def _slow_timer(run_name: str, what: str) -> threading.Timer:
    """Started: says ``what`` of op ``run_name`` still runs after :data:`SLOW_HOOK_S`,
    unless cancelled first."""
    line = slow_hook_line(run_name, what, SLOW_HOOK_S)
    timer = threading.Timer(SLOW_HOOK_S, state.say, args=(line,))
    timer.daemon = True
    timer.start()
    return timer


def _hook_name(cb: Any) -> str:
    """``Recorder.on_end``; through a wrapper with a ``cb`` (phases' timed hooks)."""
    inner = getattr(cb, "cb", cb)
    return getattr(inner, "__qualname__", None) or type(inner).__name__


def collect_rows(op: state.OpState) -> None:
    """Turn the live metric objects into rows; name the first failing shape."""
    for op_name, dtype, metric in op.live:
        if getattr(metric, "shape_detail", None) is None:
            continue
        row = parse.row_from_metrics(op_name, dtype or "", metric)
        op.rows.append(row)
        if row.status == "FAILED" and op.failing_shape is None:
            op.failing_shape = row.shape
            op.error = op.error or row.error
    op.live.clear()


# --------------------------------------------------------------------------- entry lifecycle


class Capture:
    """Per-process bookkeeping of the plan entries; registered as a plugin object."""

    def __init__(self, config: pytest.Config, session: state.Session) -> None:
        self.config = config
        self.session = session
        self.env: Any = None
        self.signed: set[str] = set()  # run names whose ZLBENCH_OP_ERROR line is out
        self.teardown_timer: threading.Timer | None = None  # a test's teardown running

    def start(self, index: int) -> state.OpState:
        entry = self.session.plan.entries[index]
        op = state.OpState(entry=entry)
        self.session.current = op
        state.say(begin_line(entry.run_name))
        for cb in list(self.session.on_start):
            cb(op)
        return op

    def finish(self, op: state.OpState) -> None:
        collect_rows(op)
        for cb in list(self.session.on_end):
            _end_hook(cb, op)
        result = build_result(op, self.session.plan.timing, self.environment(), time.time())
        run_dir = Path(op.entry.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if op.shape_file and Path(op.shape_file).is_file():
            atomic_write_text(run_dir / SHAPES_YAML, Path(op.shape_file).read_text("utf-8"))
        dump_json_model(run_dir / RESULT_JSON, result)
        self.session.finished.append(op)
        self.session.current = None
        state.say(end_line(op.entry.run_name, result.status.value))
        if op.poisoned:
            pytest.exit("zlbench: CUDA context poisoned by a device fault", POISONED_EXIT_CODE)

    def environment(self) -> Any:
        if self.env is None:
            mode = _opt(self.config, "--mode")
            self.env = environment.probe(_flaggems_module(), mode, _opt(self.config, "--level"),
                                         timing.configured_timing(self.config, mode))  # fmt: skip
        return self.env.model_copy()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list) -> None:
        entries = [e.nodeids for e in self.session.plan.entries]
        order = group_items([it.nodeid for it in items], entries)
        kept = [items[i] for _, i in order]
        for n, (e, i) in enumerate(order):
            items[i].stash[ENTRY_KEY] = e
            items[i].stash[LAST_KEY] = n + 1 == len(order) or order[n + 1][0] != e
        for e in sorted(set(range(len(entries))) - {e for e, _ in order}):
            entry = self.session.plan.entries[e]
            state.say(
                f"zlbench: plan entry {entry.run_name} matched no collected test: {entry.nodeids}"
            )
        dropped = [it for it in items if ENTRY_KEY not in it.stash]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any):
        index = item.stash.get(ENTRY_KEY, None)
        op = self.session.current
        if index is not None and (op is None or op.entry is not self.session.plan.entries[index]):
            op = self.start(index)
        yield
        if op is not None:
            op.nodeids_done.append(item.nodeid)
            if item.stash.get(LAST_KEY, False):
                self.finish(op)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        bench_adapter.install()
        if self.session.current is not None:
            # a benchmark this test makes names its rows (on_dtype); one that never
            # reaches the patched config (its own init_user_config) must not have its
            # rows named after the previous test's benchmark
            self.session.current.live_bench = None
        t0 = time.perf_counter()
        yield
        if self.session.current is not None:
            self.session.current.bench_s += time.perf_counter() - t0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        op = self.session.current
        report = outcome.get_result()
        name = op.entry.run_name if op is not None else None
        if name is None or call.excinfo is None or not report.failed or name in self.signed:
            return
        sig = exception_signature(call.excinfo.value)
        if sig:
            self.signed.add(name)
            state.say(error_line(op.entry.run_name, sig))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        op = self.session.current
        if self.teardown_timer is not None:  # the test's teardown ended
            self.teardown_timer.cancel()
            self.teardown_timer = None
        if op is None:
            return
        if report.when == "call":  # its pass mark is out; its teardown is next
            self.teardown_timer = _slow_timer(op.entry.run_name, "pytest-teardown")
        if report.when == "call" or report.outcome != "passed":
            op.outcomes.append(report.outcome)
        if report.outcome == "failed" and op.error is None:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = crash.message if crash is not None else str(report.longrepr)
            op.error = parse.one_line(text)[:2000]


def _opt(config: pytest.Config, name: str) -> str | None:
    try:
        value = config.getoption(name)
    except ValueError:
        return None
    return getattr(value, "value", value)


def _flaggems_module() -> Any:
    """The FlagGems package the benchmark module imported (flag_gems or flaggems_vllm)."""
    for mod in bench_adapter.benchmark_modules():
        fg = getattr(mod, "flag_gems", None)
        if fg is not None and hasattr(fg, "__name__"):
            return sys.modules.get(fg.__name__.split(".")[0], fg)
    for name in ("flaggems_vllm", "flag_gems"):
        if name in sys.modules:
            return sys.modules[name]
    return None


# --------------------------------------------------------------------------- hooks


def pytest_configure(config: pytest.Config) -> None:
    session = state.session_of(config)
    hooks = bench_adapter.HOOKS
    hooks.on_dtype.append(on_dtype)
    hooks.on_shape.append(on_shape)
    hooks.on_metric.append(on_metric)
    if session is not None:
        config.pluginmanager.register(Capture(config, session), "zlbench-capture")


def pytest_collection_finish(session: pytest.Session) -> None:
    bench_adapter.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    hooks = bench_adapter.HOOKS
    for lst, cb in ((hooks.on_dtype, on_dtype), (hooks.on_shape, on_shape),
                    (hooks.on_metric, on_metric)):  # fmt: skip
        if cb in lst:
            lst.remove(cb)
    bench_adapter.uninstall()
