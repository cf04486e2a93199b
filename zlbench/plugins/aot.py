"""Compile an autotune sweep's configs ahead, in parallel (docs/autotune.md, "Fast record
pass").

Why: in record mode a cold tuner benchmarks config after config, and each config's
first ``_bench`` launch compiles its kernel first (front end, MLIR passes, LLVM,
ptxas: ~0.1-1 s of CPU each) while the GPU waits. The sweep is compile-bound. Before
a tuner sweeps a key, :func:`before_sweep` compiles every config the sweep is about to
benchmark at once, on a pool of threads through triton's own ``AsyncCompileMode``
(triton >= 3.5: ``JITFunction.run(..., warmup=True)`` then submits the compile to the
pool; the MLIR passes, LLVM and ptxas run without the GIL), and waits for all of them.
Each compiled kernel lands in the JIT function's in-memory kernel cache (and in
``TRITON_CACHE_DIR``), so the sweep's own launches find it there and only benchmark.

Nothing is compiled while the GPU times: the compiles all finish before the sweep's
first ``_bench``, so no compile thread competes with a benchmark's launches. A config
that fails ahead (a compile error, a conflict) is simply compiled by the sweep as
before, where triton handles its error as before; which config wins never depends on
this module. Off (the old path) with ``--zl-aot-compile off``, under
``TRITON_INTERPRET=1`` (nothing is compiled) and on a triton without
``AsyncCompileMode`` (one ``ZLBENCH_AOT_COMPILE_WARNING`` line).

On a shared GPU (``--gpu-share N``) the sweep starts in the first call of a
measurement, which holds the GPU's shared turn (zlbench.protocol.turn). The compiles
ahead are CPU work: the turn is given up while they run (:meth:`GpuTurn.released`).
Before 2026-12-02 it was not: the pool compiled while this process held the shared turn
and waited for it, triton's ``_do_compile`` (which gives the turn up) only submitting,
so another process that wanted to time waited at the turnstile for the whole sweep's
compile, and every process behind it too. The H200's turn log of 2026-12-02 has such
stretches: no timing for 46-127 s, one process waiting 125 s for its turn (that this
was their cause is not measured; docs/measurements.md, seventeenth session).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any

from zlbench.protocol.turn import process_turn

MAX_JOBS = 16  # threads per process: the GIL-held front end caps the gain well below


@dataclass
class AotStats:
    """What compiling ahead did in this process (summed over sweeps)."""

    sweeps: int = 0  # tuner runs whose configs were compiled ahead
    configs: int = 0  # configs those sweeps were about to benchmark
    compiled: int = 0  # compiled ahead, in the pool
    cached: int = 0  # already in the JIT function's kernel cache: nothing to do
    failed: int = 0  # left to the sweep, which compiles (and handles) them as before
    seconds: float = 0.0  # wall time of the ahead compiles (the GPU idles meanwhile)

    def since(self, start: AotStats) -> AotStats:
        names = [f.name for f in fields(self)]
        return AotStats(**{n: getattr(self, n) - getattr(start, n) for n in names})

    def copy(self) -> AotStats:
        return AotStats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def line(self, run_name: str) -> str:
        return (
            f"ZLBENCH_AOT_COMPILE run_name={run_name} sweeps={self.sweeps} "
            f"configs={self.configs} compiled={self.compiled} cached={self.cached} "
            f"failed={self.failed} seconds={self.seconds:.2f}"
        )


STATS = AotStats()
_WARNED: list[str] = []


def default_jobs() -> int:
    """The CPU cores this process may use, at most :data:`MAX_JOBS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cores))


def parse_jobs(spec: str | None) -> int:
    """``--zl-aot-compile`` text -> threads: ``auto`` (default_jobs), ``off`` (0) or N."""
    text = (spec or "auto").strip().lower()
    if text == "auto":
        return default_jobs()
    if text in ("off", "0", "no"):
        return 0
    try:
        return max(0, int(text))
    except ValueError:
        raise ValueError(f"--zl-aot-compile {spec!r}: expected auto, off or a number") from None


def _warn_once(text: str) -> None:
    if text not in _WARNED:
        _WARNED.append(text)
        print(f"ZLBENCH_AOT_COMPILE_WARNING {text}", flush=True)


def will_sweep(tuner: Any, key: tuple, libtuner: bool) -> bool:
    """Whether this ``run`` is about to benchmark the tuner's configs for ``key``: more
    than one config, ``key`` not in its cache, and (LibTuner) in normal run mode the
    default policy, which benchmarks every pruned config, or the ``flagtune`` policy
    where it hands them to the default one (:func:`flagtune_mode`). Another policy, e.g.
    FlagTree's cost-model proposer, benchmarks configs of its own: nothing to compile
    ahead. A LibTuner without a policy table sweeps its pruned configs like triton's."""
    if len(getattr(tuner, "configs", ())) <= 1:
        return False
    try:
        if key in tuner.cache:
            return False
    except Exception:  # noqa: BLE001 - a cache we cannot ask: leave the sweep alone
        return False
    if not libtuner:
        return True
    mode = getattr(tuner, "_run_mode", None)
    if mode is not None and str(getattr(mode, "value", mode)) != "normal":
        return False
    get = getattr(type(tuner), "get", None)
    if not callable(get):  # no policy table (an older LibTuner): it sweeps its configs
        return True
    try:
        if type(tuner) is get("default"):
            return True
        flagtune = type(tuner) is get("flagtune")
    except Exception:  # noqa: BLE001 - no registered default policy: unknown, leave it
        return False
    return flagtune and flagtune_mode(tuner) in ("default", "expanded")


def flagtune_mode(tuner: Any) -> str | None:
    """The tuning mode FlagGems' ``flagtune`` policy resolves for ``tuner`` (its own
    call: ``runtime.resolve_tuning_mode``): ``default`` or ``expanded`` hand the pruned
    configs to the default policy, which benchmarks every one (on upstream triton, which
    has no FlagTree cost model, always: the Hopper ``mm`` family's tuners, 101 s of
    record pass for one ``mm`` shape on the H200 before this); ``cost_model`` lets
    FlagTree's proposer pick and benchmark configs of its own. None when it cannot be
    told (another FlagGems): nothing is compiled ahead."""
    try:
        from flag_gems import runtime

        # by its module name: ``flag_gems.utils.libentry`` as an attribute of
        # flag_gems.utils is the decorator of that name, which hides the module
        libentry = importlib.import_module("flag_gems.utils.libentry")

        op = (
            getattr(tuner, "_flagtune_op_name", None)
            or getattr(tuner, "_flagtune_expand_op_name", None)
            or getattr(tuner, "__name__", "unknown")
        )
        cost_model = libentry._supports_flagtune_cost_model(tuner)
        mode = runtime.resolve_tuning_mode(op, supports_cost_model=cost_model)
        return str(getattr(mode, "value", mode))
    except Exception:  # noqa: BLE001 - not FlagGems' flagtune as we know it
        return None


def sweep_configs(tuner: Any, args: tuple, kwargs: dict) -> list | None:
    """The configs the sweep will benchmark: the tuner's own ``prune_configs`` (early
    prune, perf model) with ``nargs`` set as its ``run`` sets it; None on any error."""
    saved = getattr(tuner, "nargs", None)
    tuner.nargs = dict(zip(tuner.arg_names, args, strict=False))
    try:
        return list(tuner.prune_configs(kwargs))
    except Exception:  # noqa: BLE001 - the tuner's run meets (and raises) it itself
        return None
    finally:
        tuner.nargs = saved


@contextlib.contextmanager
def _serial_listener():
    """triton's compilation listener (the codegen recorder's) is called inside each
    compile, here on pool threads: let them call it one at a time."""
    import triton

    knobs = getattr(getattr(triton, "knobs", None), "compilation", None)
    previous = getattr(knobs, "listener", None)
    if previous is None:
        yield
        return
    lock = threading.Lock()

    def listener(**kw):
        with lock:
            previous(**kw)

    knobs.listener = listener
    try:
        yield
    finally:
        knobs.listener = previous


def compile_configs(tuner: Any, configs: list, args: tuple, kwargs: dict, jobs: int) -> AotStats:
    """Compile ``configs`` of ``tuner`` for this call's arguments on ``jobs`` threads
    and wait for all of them; what happened (see :class:`AotStats`)."""
    import triton

    out = AotStats(sweeps=1, configs=len(configs))
    mode_cls = getattr(triton, "AsyncCompileMode", None)
    if mode_cls is None:
        _warn_once(f"triton {triton.__version__} has no AsyncCompileMode: sweeps compile serially")
        return AotStats()
    meta = {**kwargs, "warmup": True}
    t0 = time.monotonic()
    pending = []
    with ThreadPoolExecutor(max(1, min(jobs, len(configs))), thread_name_prefix="zl-aot") as pool:
        with _serial_listener():
            try:
                mode = mode_cls(pool, ignore_errors=True)
            except TypeError:  # an AsyncCompileMode without ignore_errors
                _warn_once("AsyncCompileMode without ignore_errors: sweeps compile serially")
                return AotStats()
            with mode:
                for config in configs:
                    if meta.keys() & config.kwargs.keys():  # _bench refuses it itself
                        out.failed += 1
                        continue
                    try:
                        got = tuner.fn.run(*args, **meta, **config.all_kwargs())
                    except Exception:  # noqa: BLE001 - left to the sweep, as before
                        out.failed += 1
                        continue
                    if hasattr(got, "future"):
                        pending.append(got)
                    else:  # compiled before (or a hook said skip): nothing to do
                        out.cached += 1
    for future_kernel in pending:  # the mode's exit waited for all and kept the good ones
        if future_kernel.kernel is None:
            out.failed += 1
        else:
            out.compiled += 1
    out.seconds = time.monotonic() - t0
    return out


def interpreted() -> bool:
    import triton

    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is not None:
        return bool(getattr(runtime, "interpret", False))
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def before_sweep(
    tuner: Any, key: tuple, libtuner: bool, args: tuple, kwargs: dict, jobs: int
) -> None:
    """Compile ahead what this tuner ``run`` is about to sweep (see the module doc);
    best effort: whatever goes wrong is left to the sweep, which compiles as before."""
    if jobs <= 0 or "grid" not in kwargs or interpreted():
        return
    if not will_sweep(tuner, key, libtuner):
        return
    configs = sweep_configs(tuner, args, kwargs)
    if not configs or len(configs) < 2:
        return
    try:
        with process_turn().released():  # CPU work: another process may time meanwhile
            got = compile_configs(tuner, configs, args, kwargs, jobs)
    except Exception as e:  # noqa: BLE001 - never break a sweep for a speed-up
        _warn_once(f"compiling ahead failed ({type(e).__name__}: {e}): sweeps compile serially")
        return
    for f in fields(AotStats):
        setattr(STATS, f.name, getattr(STATS, f.name) + getattr(got, f.name))
