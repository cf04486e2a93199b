"""CUDA-graph timing for the FlagGems benchmarks (docs/design.md §5.8).

Why: upstream ``--mode kernel`` times with ``triton.testing.do_bench``, whose
run-to-run noise on an H200 is ~12 % median and >100 % worst case; upstream
``--mode cudagraph`` uses ``triton.testing.do_bench_cudagraph``, which warms up
with a single call on the capture stream, so an autotune sweep or a JIT
compile lands inside the capture and the capture fails, and a capture that
aborts can poison the default CUDA RNG. Both are replaced, but only for calls
made directly from a benchmark's ``get_latency`` (autotuners that call
``do_bench`` themselves keep the original):

* warm up before capture: one discarded call (autotune/JIT), then a
  steady-state loop sized from the warmup budget, clamped to 5–200 calls;
* capture ``n`` calls in one graph under a scratch CUDA RNG state, replay it
  several times, report per-call times like do_bench (median upstream);
* if warmup, sync or capture fails for a reason that is not a device fault,
  print ``BENCHMARK_DIRECT_NO_CUDAGRAPH phase=... reason=...`` and time with
  plain do_bench instead; real device faults (matched on the error text, never
  on torch's generic footer) are re-raised.

The triton patch is made here only, by :func:`install` / :func:`uninstall`. The
method and budgets (``models.Timing``) are read from the options here only
(:func:`configured_timing`); :data:`TIMERS` holds one timer per ``TimingMethod``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from zlbench.models import Marker, MarkerKind, Timing, TimingMethod
from zlbench.plugins import pairing as pairing_mod
from zlbench.plugins import state
from zlbench.plugins.pairing import Pairing
from zlbench.plugins.timing_backends import Backend, CpuBackend, CudaBackend, summarize
from zlbench.protocol import options
from zlbench.protocol.faults import is_device_fault, reason_text
from zlbench.protocol.turn import GpuTurn, process_turn

MIN_WARM_CALLS = 5
MAX_WARM_CALLS = 200
# A call longer than the whole warmup budget: the discarded first call and the
# estimate's call have each run the op past the budget already (v7's ormqr on an H100:
# 4.9 s a call, 107.5 s of its PR side's 309 s in six calls a row of warmup).
LONG_CALL_WARM_CALLS = 2
MAX_GRAPH_CALLS = 1000
# Name of the upstream benchmark method whose do_bench calls are redirected.
BENCH_METHOD = "get_latency"


@dataclass
class TimingSettings:
    warmup_ms: float = 100.0
    replays: int = 10
    capture_only: bool = False  # TimingMethod.CAPTURE: :func:`capture_calls`, no timing


def warm_calls(warmup_ms: float, est_ms: float) -> int:
    """Steady-state warmup calls: the warmup budget / one call, clamped to 5-200; a call
    longer than the whole budget gets :data:`LONG_CALL_WARM_CALLS`."""
    if est_ms <= 0:
        return MAX_WARM_CALLS
    if est_ms > warmup_ms:
        return LONG_CALL_WARM_CALLS
    return max(MIN_WARM_CALLS, min(MAX_WARM_CALLS, int(warmup_ms / est_ms)))


def graph_calls(rep_ms: float, est_ms: float) -> int:
    """Calls unrolled into one graph, as do_bench_cudagraph sizes it (capped)."""
    if est_ms <= 0:
        return MAX_GRAPH_CALLS
    return max(1, min(MAX_GRAPH_CALLS, int(rep_ms / est_ms)))


def measure(
    fn: Callable[[], Any],
    backend: Backend,
    settings: TimingSettings,
    *,
    rep_ms: float,
    grad_to_none: Any = None,
    quantiles: Any = None,
    return_mode: str = "mean",
    turn: GpuTurn | None = None,
    pairing: Pairing | None = None,
) -> Any:
    """Time ``fn`` with a CUDA graph; fall back to plain timing with a marker.

    The discarded first call takes the GPU's turn shared (its compiling, loading and
    lazy init overlap with other processes' untimed work when the GPU is shared, never
    with a timing, docs/screening.md); warmup, capture and replays (or the plain
    fallback) take it exclusive.
    An autotune sweep in the first call takes the turn for each config it times
    (:mod:`zlbench.plugins._tuners`).

    In an interleaved A/B (``pairing``, default: the process's own,
    :func:`zlbench.plugins.pairing.active`) the FlagGems side's samples are taken in
    turns with the other compiler's process (:mod:`zlbench.plugins.pairing`) instead
    of ``settings.replays`` replays in one go; the torch reference is timed alone, and
    on the base side with one replay only (the A/B judges FlagGems latency alone)."""

    turn = turn or process_turn()
    pairing = pairing if pairing is not None else pairing_mod.active()
    kw = {"grad_to_none": grad_to_none, "quantiles": quantiles, "return_mode": return_mode}
    if settings.capture_only:
        inner = fn if reference_side(sys._getframe(1)) else _in_timed_region(fn)
        return capture_calls(_call(inner, grad_to_none), backend, turn, kw)
    if reference_side(sys._getframe(1)):
        if pairing is not None and pairing.side == "base":
            settings = TimingSettings(warmup_ms=settings.warmup_ms, replays=1)
        return _measure(_call(fn, grad_to_none), fn, backend, settings, rep_ms, turn, kw, None)
    timed = _in_timed_region(fn)
    call = _call(timed, grad_to_none)
    return _measure(call, timed, backend, settings, rep_ms, turn, kw, pairing)


def capture_calls(call: Callable[[], Any], backend: Backend, turn: GpuTurn, kw: dict) -> Any:
    """:data:`TimingMethod.CAPTURE`: ``call`` twice in the GPU's shared turn, no graph
    and no exclusive turn, so processes sharing a GPU overlap everything. The first call
    compiles and loads (FlagGems runs a kernel's first launch of a specialisation holding
    its lock, where a launch capture cannot read values: it reads them at the next
    launch); the second is the call a launch capture keeps. Returns the second call's
    host wall time in ms, synchronized, as the benchmark's latency: not a measurement
    (no warmup, no graph, shared)."""
    with turn.share():
        call()
        backend.synchronize()
        t0 = time.perf_counter()
        call()
        backend.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
    return summarize([ms], kw["quantiles"], kw["return_mode"])


def _call(fn: Callable[[], Any], grad_to_none: Any) -> Callable[[], Any]:
    """``fn`` with the inputs' gradients cleared first (as do_bench does)."""

    def call() -> Any:
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        return fn()

    return call


def _in_timed_region(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` run inside the row's timed region (:func:`state.timed_region`): the
    kernels it launches are the row's timed kernels. Only the benchmark's own function
    runs there, never the harness around it (warmup bookkeeping, the graph capture's
    RNG state, do_bench's L2 flush: kernels FlagGems may serve, e.g. its fill kernel)."""

    def timed() -> Any:
        with state.timed_region():
            return fn()

    return timed


def reference_side(frame: Any) -> bool:
    """True when the measurement in flight is upstream's ``latency_base`` (the torch
    op): its kernels are not the row's timed FlagGems kernels."""
    while frame is not None:
        metric = frame.f_locals.get("metric") if frame.f_code.co_name == "run" else None
        if metric is not None and hasattr(metric, "latency_base"):
            return metric.latency_base is None
        frame = frame.f_back
    return False


def _measure(call, fn, backend, settings, rep_ms, turn, kw, pairing) -> Any:
    """:func:`measure`'s body. The discarded first call (autotune sweep, JIT compile)
    in the shared turn: its failure is the function's own (plain do_bench would fail
    the same way), so it is not a graph fallback; its compiles and launcher builds give
    the turn up (OFF_THE_TURN). Then warmup and capture, and the replays (or the plain
    fallback, with its marker) in the exclusive turn; paired samples take it per
    sample."""
    with turn.share():
        call()
    with turn.hold():
        graph = _prepared_graph(call, backend, settings, rep_ms)
        if pairing is None:
            return _alone(graph, fn, backend, settings, rep_ms, kw)
    mine = pairing.measure(_sampler(graph, fn, backend, settings, rep_ms, kw), graph is None)
    if mine:
        return summarize(mine, kw["quantiles"], kw["return_mode"])
    with turn.hold():  # no other side to pair with: timed alone, as without an A/B
        return _alone(graph, fn, backend, settings, rep_ms, kw)


def _prepared_graph(call, backend, settings, rep_ms) -> tuple[Any, int] | None:
    """The captured graph and its calls, or None (marker emitted) when graph timing
    failed for a reason that is not a device fault."""
    try:
        return graph_prepare(call, backend, settings, rep_ms)
    except GraphFailed as failed:
        _fell_back(failed)
        return None


def _fell_back(failed: GraphFailed) -> None:
    exc = failed.__cause__
    state.emit_marker(
        Marker(kind=MarkerKind.NO_CUDAGRAPH, phase=failed.phase, reason=reason_text(exc))
    )


def _alone(graph, fn, backend, settings, rep_ms, kw) -> Any:
    """One side's timing without a partner: ``settings.replays`` replays of the graph,
    or the plain fallback (also when a replay fails for a reason that is not a device
    fault: marker ``phase=sync``)."""
    if graph is not None:
        g, n = graph
        try:
            times = _replays(lambda: backend.replay_ms(g) / n, settings.replays)
            return summarize(times, kw["quantiles"], kw["return_mode"])
        except GraphFailed as failed:
            _fell_back(failed)
    return backend.plain(fn, rep_ms, settings.warmup_ms, **kw)


def _sampler(graph, fn, backend, settings, rep_ms, kw) -> Callable[[], float]:
    """One paired sample, per-call ms: one replay of the graph, or one plain timing
    (median of its own repetitions) when there is no graph."""
    if graph is None:
        plain_kw = {"grad_to_none": kw["grad_to_none"], "return_mode": "median"}
        return lambda: float(backend.plain(fn, rep_ms, settings.warmup_ms, **plain_kw))
    g, n = graph
    return lambda: backend.replay_ms(g) / n


def _replays(one: Callable[[], float], times: int) -> list[float]:
    """``times`` calls of ``one`` (a device fault re-raised, any other failure is
    :class:`GraphFailed` in phase ``sync``)."""
    try:
        return [one() for _ in range(max(1, times))]
    except Exception as exc:  # noqa: BLE001 - classified right here
        if is_device_fault(exc):
            raise
        raise GraphFailed("sync") from exc


class GraphFailed(Exception):
    """Graph timing failed for a reason that is not a device fault (``__cause__``), in
    ``phase``: the caller falls back to plain timing with a marker."""

    def __init__(self, phase: str) -> None:
        super().__init__(phase)
        self.phase = phase


def graph_prepare(
    call: Callable[[], Any], backend: Backend, settings: TimingSettings, rep_ms: float
) -> tuple[Any, int]:
    """Eager warmup and one graph of ``n`` calls (sized to ``rep_ms``): (graph, n). A
    device fault is re-raised; any other failure is :class:`GraphFailed`."""
    phase = "warmup"
    try:
        est = backend.time_eager(call, 1)
        est = backend.time_eager(call, warm_calls(settings.warmup_ms, est))
        phase = "sync"
        backend.synchronize()
        n = graph_calls(rep_ms, est)
        phase = "capture"
        graph = backend.capture(call, n)
        phase = "sync"
        backend.synchronize()
        return graph, n
    except Exception as exc:  # noqa: BLE001 - classified right here
        if is_device_fault(exc):
            raise
        raise GraphFailed(phase) from exc


def graph_times(call: Callable[[], Any], backend: Backend, settings: TimingSettings, rep_ms: float):
    """Per-call milliseconds of each replay: :func:`graph_prepare`, then
    ``settings.replays`` replays."""
    graph, n = graph_prepare(call, backend, settings, rep_ms)
    return _replays(lambda: backend.replay_ms(graph) / n, settings.replays)


# --------------------------------------------------------------------------- triton adapter


@dataclass
class _Installed:
    testing: Any
    do_bench: Callable[..., Any]
    do_bench_cudagraph: Callable[..., Any]
    # (class, method name, original) of each method wrapped by _off_the_turn
    unwrapped: list[tuple[Any, str, Callable[..., Any]]] = field(default_factory=list)


# CPU work of a first call that holds no GPU: it gives the shared turn up (another
# process may time meanwhile). triton 3.x: JITFunction._do_compile compiles a kernel
# (called on a cache miss only); CompiledKernel._init_handles builds its C launcher (a
# gcc run when the cache is cold) and loads the binary, and returns at once when
# ``module`` is set, but triton calls it on every ``kernel[grid](...)`` launch, so the
# turn is given up only while that attribute is None (the work not done yet).
# (module, class, method, attribute that is set once the work is done, or None)
OFF_THE_TURN = (
    ("triton.runtime.jit", "JITFunction", "_do_compile", None),
    ("triton.compiler.compiler", "CompiledKernel", "_init_handles", "module"),
)


def _off_the_turn(cls: Any, name: str, done_attr: str | None) -> Callable[..., Any] | None:
    """Wrap ``cls.<name>`` so that, in the shared turn, it runs with the turn given up
    (:meth:`GpuTurn.released`), unless ``self.<done_attr>`` says it has nothing left
    to do; returns the original, None when ``cls`` has no such method of its own."""
    orig = cls.__dict__.get(name) if cls is not None else None
    if orig is None:
        return None

    def wrapped(self, *args, **kwargs):
        turn = process_turn()
        if not turn.sharing or (done_attr and getattr(self, done_attr, None) is not None):
            return orig(self, *args, **kwargs)  # the hot path: one launch, no lock calls
        with turn.released():
            return orig(self, *args, **kwargs)

    setattr(cls, name, wrapped)
    return orig


def _wrap_off_the_turn(installed: _Installed) -> None:
    """Wrap :data:`OFF_THE_TURN` on a shared GPU (a turn file named); a GPU of its own
    keeps triton's methods as they are."""
    import importlib

    if process_turn().path is None:
        return
    for module, cls_name, name, done_attr in OFF_THE_TURN:
        try:
            cls = getattr(importlib.import_module(module), cls_name, None)
        except ImportError:  # pragma: no cover - a triton without that module
            cls = None
        orig = _off_the_turn(cls, name, done_attr)
        if orig is not None:
            installed.unwrapped.append((cls, name, orig))
        else:
            state.say(f"zlbench: this triton has no {cls_name}.{name}: that work holds "
                      "the GPU's shared turn (slower sharing, timing unaffected)")  # fmt: skip


_INSTALLED: _Installed | None = None


def _called_from_benchmark(frame: Any) -> bool:
    return frame is not None and frame.f_code.co_name == BENCH_METHOD and "self" in frame.f_locals


def install(backend_name: str, settings: TimingSettings) -> None:
    """Replace ``triton.testing.do_bench`` and ``do_bench_cudagraph`` (once)."""
    global _INSTALLED
    if _INSTALLED is not None:
        return
    import triton.testing as testing

    orig = _Installed(testing, testing.do_bench, testing.do_bench_cudagraph)
    backend = _make_backend(backend_name, orig.do_bench)

    def timed(caller, upstream, fn, *before_rep, rep, grad_to_none, quantiles, return_mode):
        """Measure calls made by a benchmark; hand any other caller to ``upstream``."""
        if not _called_from_benchmark(caller):  # an autotuner's timing: the GPU's turn too
            with process_turn().hold():
                return upstream(fn, *before_rep, rep, grad_to_none, quantiles, return_mode)
        return measure(
            fn, backend, settings, rep_ms=rep, grad_to_none=grad_to_none,
            quantiles=quantiles, return_mode=return_mode,
        )  # fmt: skip

    def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        return timed(
            sys._getframe(1),
            orig.do_bench,
            fn,
            warmup,
            rep=rep,
            grad_to_none=grad_to_none,
            quantiles=quantiles,
            return_mode=return_mode,
        )

    def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
        return timed(
            sys._getframe(1),
            orig.do_bench_cudagraph,
            fn,
            rep=rep,
            grad_to_none=grad_to_none,
            quantiles=quantiles,
            return_mode=return_mode,
        )

    testing.do_bench = do_bench
    testing.do_bench_cudagraph = do_bench_cudagraph
    _wrap_off_the_turn(orig)
    _INSTALLED = orig


def uninstall() -> None:
    global _INSTALLED
    if _INSTALLED is None:
        return
    _INSTALLED.testing.do_bench = _INSTALLED.do_bench
    _INSTALLED.testing.do_bench_cudagraph = _INSTALLED.do_bench_cudagraph
    for cls, name, orig in reversed(_INSTALLED.unwrapped):
        setattr(cls, name, orig)
    _INSTALLED = None


def _make_backend(name: str, plain_do_bench: Callable[..., Any]) -> Backend:
    if name == "auto":
        import torch

        name = "cuda" if torch.cuda.is_available() else "cpu"
    return CudaBackend(plain_do_bench) if name == "cuda" else CpuBackend()


# --------------------------------------------------------------------------- pytest hooks


def configured_timing(config: pytest.Config, mode: str | None = None) -> Timing | None:
    """How this process times (``--zl-timing``, ``--zl-warmup-ms``, ``--zl-replays``;
    ``mode``: upstream's ``--mode``), the one reader of the budgets; None where the
    options are not registered."""
    try:
        method = options.get(config, "timing")
        warmup, replays = options.get(config, "warmup-ms"), options.get(config, "replays")
    except ValueError:
        return None
    return Timing(mode=mode, method=method, warmup_ms=float(warmup), replays=int(replays))


def _graph_timer(backend_name: str, timing: Timing) -> None:
    """zlbench's CUDA-graph timing over ``do_bench`` (:func:`install`)."""
    assert timing.warmup_ms is not None and timing.replays is not None  # a budgeted method
    install(backend_name, TimingSettings(warmup_ms=timing.warmup_ms, replays=timing.replays))


def _capture_timer(backend_name: str, timing: Timing) -> None:
    """Two eager calls, untimed (:func:`capture_calls`; :func:`install`)."""
    install(backend_name, TimingSettings(capture_only=True))


def _upstream_timer(backend_name: str, timing: Timing) -> None:
    """Upstream's own ``do_bench`` / ``do_bench_cudagraph``: nothing is replaced."""


# The timer of each method (models.TimingMethod): installs it for this process.
TIMERS: dict[TimingMethod, Callable[[str, Timing], None]] = {
    TimingMethod.GRAPH: _graph_timer,
    TimingMethod.UPSTREAM: _upstream_timer,
    TimingMethod.CAPTURE: _capture_timer,
}


def _label_turn(op: state.OpState) -> None:
    """The turn log's lines of this process name the op in flight (a long shared hold
    says whose it was)."""
    process_turn().label = op.entry.run_name


state.subscribe(on_start=_label_turn)


def pytest_configure(config: pytest.Config) -> None:
    timing = configured_timing(config)
    if timing is not None:
        TIMERS[timing.method](options.get(config, "timing-backend"), timing)


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall()
