"""Timing backends behind :mod:`zlbench.plugins.timing`: CUDA, and CPU for the test tier.

Why a seam: the warmup → capture → fallback → marker logic is the part that
went wrong in the past, so it must run in CPU CI too. The CPU backend times
with ``perf_counter`` and emulates a capture: the function runs under a torch
dispatch mode in which host-synchronising ops fail with the very error text a
real CUDA-graph capture gives, so a benchmark that cannot be captured on a GPU
cannot be "captured" on the CPU either.

The CUDA backend is the one place that touches torch.cuda graphs, events and
the CUDA RNG state.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

Fn = Callable[[], Any]

# What torch raises when a host sync happens inside a CUDA-graph capture
# (first line is the error itself; the rest is torch's generic footer).
CAPTURE_SYNC_ERROR = (
    "CUDA error: operation not permitted when stream is capturing\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

# aten ops that synchronise with the host (cannot be captured in a CUDA graph).
_SYNC_OPS = ("_local_scalar_dense", "nonzero", "masked_select", "_unique2", "unique_dim", "item")


class Backend(Protocol):
    def synchronize(self) -> None: ...

    def time_eager(self, fn: Fn, n: int) -> float:
        """Run ``fn`` n times; milliseconds per call."""

    def capture(self, fn: Fn, n: int) -> Any:
        """Capture n calls of ``fn`` into a replayable graph (under a scratch RNG state)."""

    def replay_ms(self, graph: Any) -> float:
        """Replay the graph once; milliseconds for the whole replay."""

    def plain(self, fn: Fn, rep_ms: float, warmup_ms: float, **kw: Any) -> Any:
        """Plain (uncaptured) timing: the fallback, like triton's do_bench."""


class CpuBackend:
    """perf_counter timing and an emulated capture (see module docstring)."""

    def synchronize(self) -> None:
        return None

    def time_eager(self, fn: Fn, n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e3 / max(n, 1)

    def capture(self, fn: Fn, n: int) -> Any:
        with capture_mode():
            for _ in range(n):
                fn()
        return (fn, n)

    def replay_ms(self, graph: Any) -> float:
        fn, n = graph
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e3

    def plain(self, fn: Fn, rep_ms: float, warmup_ms: float, **kw: Any) -> Any:
        fn()
        est = max(self.time_eager(fn, 1), 1e-6)
        for _ in range(max(1, min(int(warmup_ms / est), 100))):
            fn()
        times = [self.time_eager(fn, 1) for _ in range(max(1, min(int(rep_ms / est), 100)))]
        return summarize(times, kw.get("quantiles"), kw.get("return_mode", "mean"))


@contextlib.contextmanager
def capture_mode() -> Iterator[None]:
    """Host-synchronising torch ops raise the CUDA capture error while inside."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _NoSync(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.split(".")[0] in _SYNC_OPS:
                raise RuntimeError(CAPTURE_SYNC_ERROR)
            return func(*args, **(kwargs or {}))

    with _NoSync():
        yield


class CudaBackend:
    """CUDA events, CUDA graphs, triton's do_bench as the fallback."""

    def __init__(self, plain_do_bench: Callable[..., Any]) -> None:
        import torch

        self.torch = torch
        self._do_bench = plain_do_bench

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def time_eager(self, fn: Fn, n: int) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        cuda.synchronize()
        return start.elapsed_time(end) / max(n, 1)

    def capture(self, fn: Fn, n: int) -> Any:
        cuda = self.torch.cuda
        graph = cuda.CUDAGraph()
        with scratch_cuda_rng(self.torch), cuda.graph(graph):
            for _ in range(n):
                fn()
        return graph

    def replay_ms(self, graph: Any) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        cuda.synchronize()
        return start.elapsed_time(end)

    def plain(self, fn: Fn, rep_ms: float, warmup_ms: float, **kw: Any) -> Any:
        return self._do_bench(fn, warmup=warmup_ms, rep=rep_ms, **kw)


@contextlib.contextmanager
def scratch_cuda_rng(torch: Any) -> Iterator[None]:
    """Let a capture register (and possibly poison) a throw-away CUDA RNG state.

    A capture registers the default generator's state with the graph; when the
    capture aborts, that state can stay in capture mode and break the next
    ``torch.randn``. Swapping in a clone for the capture and restoring the
    original afterwards keeps the default generator clean either way.
    """
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    if not hasattr(gen, "graphsafe_set_state"):  # torch < 2.4: best effort
        saved_bytes = gen.get_state()
        try:
            yield
        finally:
            gen.set_state(saved_bytes)
        return
    saved = gen.graphsafe_get_state()
    gen.graphsafe_set_state(gen.clone_state())
    try:
        yield
    finally:
        gen.graphsafe_set_state(saved)


def summarize(times: list[float], quantiles: Any, return_mode: str) -> Any:
    """Reduce per-call times like triton's do_bench does."""
    if quantiles is not None:
        ordered = sorted(times)
        out = [_quantile(ordered, q) for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return list(times)
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.fmean(times)


def _quantile(ordered: list[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
