"""Paired timing of a replayed launch under both compilers, and their outputs compared
(issue 51).

:func:`time_paired` times the PR's and the base's launch callables on the same
arguments, strictly alternating on one stream (the caller's current stream: both
sides' launches and every restore and flush are enqueued on it):

* warmup: each side ``warmup`` times, alternating (PR, base, PR, base ...), each on
  restored inputs;
* then pairs: pair ``k`` takes the PR's sample then the base's for even ``k``, the
  base's then the PR's for odd ``k`` (``AB BA``: neither side always goes first, a
  drift within two pairs moves both sides alike);
* a sample is the median of single-call timings of one side; the memory state each
  timed call starts from is the plan's L2 policy, the same for both sides and outside
  the timed span (``models.replay.L2_POLICIES``): by default (``warm``) the inputs are
  restored (:func:`materialize.restore`) once before each sample and L2 is not
  flushed, so a sample's calls run back to back as FlagGems' benchmark runs them;
  under ``flush`` (the default before the fiftieth session) and ``clean`` they are
  restored and L2 is flushed (``flush``, zeroed or read) before *every* call. Each call
  is read (the device synchronised) before the next is enqueued: enqueuing a sample's
  calls ahead (thirty-third session, an H100) left the device waiting on the host,
  the start event fired before the launch was enqueued, and samples of 4 µs rows read
  20-30 µs in bursts (an A/A: 7 of 88 replayed rows INCONCLUSIVE);
* how many calls a sample takes: ``reps``, or with ``target_ms`` as many as span it
  (:func:`zlbench.protocol.pairs.sample_reps`) of the slower side's probe call, one
  timed call of each side after the warmup (not a sample), the same count for both
  sides and every sample of the row;
  with ``settle`` N, each sample is preceded by N untimed calls of its side (restored
  and flushed alike): a probe of the first-sample effect seen on an H100 (the first
  sample of each pair 4-10 % slower on two-launch rows), off by default;
  ``restore_each`` (the policy's) restores before each call, else once a sample;
* after each pair the rule's own stopping (:func:`zlbench.protocol.pairs.should_stop`
  on :func:`zlbench.protocol.pairs.row_stats` of the pairs so far, ``replayed``: over
  balanced blocks of ``AB`` + ``BA``, which cancel that first-sample effect; never
  plain) says whether to go on, so the judge sees
  the same kind of evidence as from the op path's interleaved A/B: samples
  ``{"side", "ms"}`` (``zlbench.models.ab.PairSample``) in slot order, pairs in slots
  ``2k, 2k + 1``; with a ``clock`` the NVML clock and throttle reasons go with each
  sample, and a throttled pair is dropped by the judge as on the op path.

A launch that raises, or a device error surfacing at a timer's synchronisation, is a
:class:`ReplayError` of one line (the row falls back). A launch that hangs is not
caught here: the replay worker (``zlbench.plugins.replay.worker``) runs each row under
a per-row timeout and restarts its process after a hang or a device fault (a CUDA
fault poisons the context of the process).

:func:`side_outputs` runs each side once more on restored inputs and keeps copies of
every tensor argument; :func:`compare_outputs` compares them (floats within a
tolerance that widens with the dtype's precision, integers and bools exactly, nan
equal to nan).

GPU only: :class:`CudaEventTimer` and :func:`l2_flush` (CUDA events; a 2x-L2 zeroing,
or reading, the probe ``by="read"``),
run on H100s (2026-12-06, docs/measurements.md, twenty-ninth and thirtieth sessions: a
timed call cost 130-170 µs beyond its kernel). Tests on CPU use
:class:`PerfCounterTimer` and fake timers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any, Protocol, get_args

from zlbench.models.replay import FlushBy
from zlbench.plugins.compiler.rebuild import first_line
from zlbench.plugins.replay.materialize import ReplayError, restore, snapshot, tensor_of
from zlbench.protocol.pairs import (
    REPLAY_REPS,
    PairRule,
    complete_pairs,
    row_stats,
    sample_reps,
    should_stop,
)

Launch = Callable[[list], None]
SIDE_A, SIDE_B = "pr", "base"  # pair k: A, B for even k, B, A for odd k
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
EPS_ULPS = 2.0  # a float dtype's relative tolerance is at least this many of its eps
L2_DEFAULT_BYTES = 64 << 20  # when the device does not say (H100/H200: 50 MiB)
LEAD_CYCLES = 100_000  # ~50-70 us of GPU spin before a timed launch (CudaEventTimer)


class Timer(Protocol):
    """Times one span on the device: ``start()``, then ``stop()`` -> milliseconds."""

    def start(self) -> None: ...

    def stop(self) -> float: ...


class PerfCounterTimer:
    """Host wall clock (``time.perf_counter_ns``): CPU tests only (the launches run
    synchronously on the host)."""

    def __init__(self) -> None:
        self._t0 = 0

    def start(self) -> None:
        self._t0 = time.perf_counter_ns()

    def stop(self) -> float:
        return (time.perf_counter_ns() - self._t0) / 1e6


class CudaEventTimer:
    """A pair of CUDA events on the current stream; ``stop`` synchronises on the end
    event. GPU only (not verified in this session).

    After a synchronisation the GPU is idle, so a start event recorded then fires at
    once and the span would include the host's time to launch the kernel (a triton
    launch costs microseconds, as much as a small kernel). ``start`` therefore first
    enqueues a spin of ``lead_cycles`` (``torch.cuda._sleep``): the start event fires
    after it, by when the host has enqueued the launch, and the span is the kernels'
    only (for rows of several launches, as long as the host enqueues them all within
    the lead: the worker gives :func:`lead_cycles_for` the launches of a call).
    ``lead_cycles=0``: no spin."""

    def __init__(self, lead_cycles: int = LEAD_CYCLES) -> None:
        import torch

        self._torch = torch
        self.lead_cycles = lead_cycles
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        stream = self._torch.cuda.current_stream()
        if self.lead_cycles:
            self._torch.cuda._sleep(self.lead_cycles)
        self._start.record(stream)

    def stop(self) -> float:
        self._end.record(self._torch.cuda.current_stream())
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end))


def lead_cycles_for(launches: int) -> int:
    """The spin before a timed call that makes ``launches`` launches: LEAD_CYCLES for
    each, so that the host has enqueued them all before the start event fires (the
    span is then the kernels', not the host's). On an H100 (2026-12-06) two-launch rows
    of ~7 µs stayed undecided after 16 pairs (±6-10 %) where one-launch rows of the same
    size decided in 5, with one LEAD_CYCLES and again with this: the first sample of
    each pair is ~10 % slower than the second, whichever side (docs/measurements.md,
    thirtieth session), a cause this does not remove. The judge's balanced blocks of
    two pairs cancel it (``protocol.pairs.REPLAY_BLOCK_PAIRS``)."""
    return LEAD_CYCLES * max(1, launches)


FLUSH_BY = get_args(FlushBy)  # how l2_flush evicts L2: the default first


def l2_flush(device: Any, by: str = FLUSH_BY[0]) -> Callable[[], None] | None:
    """A callable that evicts the arguments from L2 before a timed call over a buffer of
    twice the GPU's L2 cache (``L2_cache_size``; :data:`L2_DEFAULT_BYTES` when not
    given): ``by`` "zero" writes zeros over it (L2 is left holding written lines, which
    the timed call's kernel writes back to DRAM as it evicts them), "read" reads it (a
    probe: L2 left holding clean lines); None on a CPU device. GPU only."""
    if by not in FLUSH_BY:
        raise ReplayError(f"l2_flush: by {by!r}, not one of {', '.join(FLUSH_BY)}")
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(dev)
    size = int(getattr(props, "L2_cache_size", 0) or L2_DEFAULT_BYTES)
    buf = torch.empty(2 * size, dtype=torch.uint8, device=dev)

    def zero() -> None:
        buf.zero_()

    def read() -> None:
        buf.max()  # a reduction: every line of the buffer read, none written

    return zero if by == "zero" else read


def _call(side: str, launch: Launch, args: list) -> None:
    try:
        launch(args)
    except ReplayError:
        raise
    except Exception as e:
        raise ReplayError(f"{side} launch failed: {first_line(e)}") from e


def _fresh(snap: list | None, flush) -> None:
    """Before a call of a sample (timed or settling): the inputs restored (unless
    ``snap`` is None: restored once a sample), L2 flushed."""
    if snap is not None:
        restore(snap)
    if flush is not None:
        flush()


def _timed(side: str, launch: Launch, args: list, snap: list | None, timer: Timer, flush) -> float:
    _fresh(snap, flush)
    try:
        timer.start()
        launch(args)
        ms = float(timer.stop())
    except ReplayError:
        raise
    except Exception as e:
        raise ReplayError(f"{side} launch failed: {first_line(e)}") from e
    if not (math.isfinite(ms) and ms > 0):
        raise ReplayError(f"{side} launch timed at {ms} ms (not a positive time)")
    return ms


@dataclass(frozen=True)
class Paired:
    """:func:`time_paired`'s result: the samples in slot order, and the single calls
    each sample took (the same for every sample of the row)."""

    samples: list[dict]
    reps: int


def time_paired(
    launch: Mapping[str, Launch],
    args: list,
    *,
    rule: PairRule,
    timer: Timer,
    flush: Callable[[], None] | None,
    warmup: int = 3,
    reps: int = REPLAY_REPS,
    target_ms: float | None = None,
    snap: list | None = None,
    clock: Callable[[], tuple[int | None, int | None]] | None = None,
    settle: int = 0,
    restore_each: bool = True,
) -> Paired:
    """Samples of both sides' ``launch`` callables (``{"pr": f, "base": g}``, each
    launching the row's kernels on ``args``) in slot order (module docstring), each of
    ``reps`` calls, or with ``target_ms`` of :func:`sample_reps` of the probe calls.
    ``snap``: the inputs' :func:`snapshot` (taken here when None, before any call);
    ``clock``: read after each sample, ``(MHz, NVML reasons)``."""
    if set(launch) != {SIDE_A, SIDE_B}:
        raise ReplayError(f"time_paired needs launches of both sides, got {sorted(launch)}")
    if reps < 1 or warmup < 0 or settle < 0:
        raise ReplayError(
            f"time_paired: reps {reps} (>= 1), warmup {warmup} (>= 0), settle {settle} (>= 0)"
        )
    snap = snapshot(args) if snap is None else snap
    for _ in range(warmup):
        for side in (SIDE_A, SIDE_B):
            restore(snap)
            _call(side, launch[side], args)
    if target_ms is not None:  # the probe: one timed call a side, the slower decides
        probe = max(_timed(s, launch[s], args, snap, timer, flush) for s in (SIDE_A, SIDE_B))
        reps = sample_reps(probe, reps, target_ms)
    samples: list[dict] = []
    each = snap if restore_each else None  # restored before each call, or a sample
    k = 0
    while True:
        order = (SIDE_A, SIDE_B) if k % 2 == 0 else (SIDE_B, SIDE_A)
        for side in order:
            if each is None:
                restore(snap)
            for _ in range(settle):  # untimed, restored and flushed as a timed call
                _fresh(each, flush)
                _call(side, launch[side], args)
            times = [_timed(side, launch[side], args, each, timer, flush) for _ in range(reps)]
            sample: dict[str, Any] = {"side": side, "ms": median(times)}
            if clock is not None:
                sample["mhz"], sample["reasons"] = clock()
            samples.append(sample)
        k += 1
        pr, base, _ = complete_pairs(samples)
        if should_stop(row_stats(pr, base, rule, False, replayed=True), rule, False, k):
            break
    restore(snap)
    return Paired(samples, reps)


def side_outputs(
    launch: Mapping[str, Launch], args: list, snap: list | None = None
) -> dict[str, list]:
    """Each side run once on restored inputs: ``{side: args after the run}``, tensors
    copied (a tensor descriptor as a copy of its base; the inputs are restored again
    after). For :func:`compare_outputs`."""
    import torch

    snap = snapshot(args) if snap is None else snap
    out: dict[str, list] = {}
    for side in (SIDE_A, SIDE_B):
        restore(snap)
        _call(side, launch[side], args)
        try:  # a tensor descriptor's output is its base's (a TMA store writes it)
            held = [tensor_of(a) for a in args]
            out[side] = [a if t is None else t.clone() for a, t in zip(args, held, strict=True)]
            if any(t is not None and t.is_cuda for t in held):
                torch.cuda.synchronize()
        except Exception as e:  # a device error of the launch surfaces here
            raise ReplayError(f"{side} launch failed: {first_line(e)}") from e
    restore(snap)
    return out


def _tolerance(dtype: Any, rtol: float, atol: float) -> tuple[float, float]:
    """``rtol`` widened to the dtype's precision: at least EPS_ULPS of its eps (bf16
    ~1.6e-2, fp16 ~2e-3, fp8 more; float32 keeps ``rtol``); ``atol`` as given."""
    import torch

    return max(rtol, EPS_ULPS * torch.finfo(dtype).eps), atol


def _compare_float(p: Any, b: Any, rtol: float, atol: float) -> tuple[bool, float]:
    import torch

    rt, at = _tolerance(p.dtype, rtol, atol)
    wide = torch.float64 if p.dtype == torch.float64 else torch.float32
    pf, bf = p.to(wide), b.to(wide)
    both_nan = pf.isnan() & bf.isnan()
    same = (pf == bf) | both_nan  # inf == inf of one sign included
    close = torch.isclose(pf, bf, rtol=rt, atol=at, equal_nan=True)
    err = (pf - bf).abs() / (bf.abs() + at)
    err = torch.where(same, torch.zeros_like(err), err)
    err = torch.nan_to_num(err, nan=math.inf, posinf=math.inf)
    worst = float(err.max()) if err.numel() else 0.0
    return bool(close.all()), worst


def compare_outputs(
    pr_args: Sequence[Any],
    base_args: Sequence[Any],
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
) -> tuple[bool, float]:
    """Whether every tensor argument agrees between the sides after their runs, and
    the largest ``|PR - base| / (|base| + atol)`` seen (0 where equal, inf where one
    side is nan and the other not). Floats (and complex, as their real pairs) within
    ``isclose(rtol, atol)`` widened by the dtype's precision (:func:`_tolerance`),
    nan equal to nan; integers and bools exactly (their error computed alike); a shape
    or dtype that differs, or a tensor against a non-tensor, differs (inf)."""
    import torch

    if len(pr_args) != len(base_args):
        return False, math.inf
    match, worst = True, 0.0
    for p, b in zip(pr_args, base_args, strict=True):
        tp, tb = isinstance(p, torch.Tensor), isinstance(b, torch.Tensor)
        if not (tp or tb):
            continue
        if not (tp and tb) or p.shape != b.shape or p.dtype != b.dtype:
            return False, math.inf
        if p.dtype.is_complex:
            p, b = torch.view_as_real(p), torch.view_as_real(b)
        if p.dtype.is_floating_point:
            ok, err = _compare_float(p, b, rtol, atol)
        else:  # integers and bools: exactly; the error for the record
            ok = bool(torch.equal(p, b))
            d = (p.to(torch.float64) - b.to(torch.float64)).abs()
            err = float((d / (b.to(torch.float64).abs() + atol)).max()) if d.numel() else 0.0
        match, worst = match and ok, max(worst, err)
    return match, worst


__all__ = [
    "CudaEventTimer",
    "Paired",
    "PerfCounterTimer",
    "Timer",
    "compare_outputs",
    "l2_flush",
    "side_outputs",
    "time_paired",
]
