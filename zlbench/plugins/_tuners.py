"""The one adapter that patches triton's ``Autotuner`` and FlagGems' ``LibTuner``.

Why: record/replay (``autotune``), the TTGIR dump (``ttgir``) and the sweep
shards all need to see, for every tuned kernel launch, its tuning key, the
config it ran and the configs it benchmarked; and replay must decide the config
before the tuner does. Triton and FlagGems offer no hook for that, so this
module wraps ``run`` (and counts ``_bench`` calls, each one config timed inside the
GPU's turn when the GPU is shared: :mod:`zlbench.protocol.turn`) in one place, behind an
:func:`install` / :func:`uninstall` pair. Policy (what to record, what to pin,
which marker to print) lives in the handler that :func:`install` receives.

Two flavours of tuner:

* plain ``triton.runtime.Autotuner``: its cache is a dict; a pinned config is
  stored into it unconditionally and evicted with ``del``;
* LibTuner-like (a subclass defining its own ``run`` and ``get_key``, found in
  whichever of ``flag_gems`` / ``flaggems_vllm`` was imported): its cache is a
  persistent sqlite table whose writes never overwrite an existing key, so a
  pinned config is laid over the cache for the duration of the call instead.
  Its ``ConfigCache`` has no ``__delitem__``: a bad config cannot be evicted.

Either way, a pinned call that still benchmarked configs, or ran a config other
than the pinned one, is reported as ``pin_ignored`` (never as pinned).

Above the tuners, FlagGems' ``LibEntry`` keeps per device the kernel and config of
each argument key's first launch, and a later launch with that key skips the tuner.
Several ops share one process (docs/design.md item 20), so an op launching a kernel
an earlier op launched with the same arguments would run the earlier op's config:
its record never consulted in a replay (no tuner call, no marker; v7's ``sqrt`` ran
``sqrt_``'s BLOCK_SIZE 2048 for its own 1024) and never written in a record. The
LibEntry-like objects are known (their classes' ``__init__`` patched, and those made
before found once), and :func:`forget_launch_caches` empties their caches when an op
starts, so each op's launches reach the tuner as they would in a process of their own.
A launch made in zlbench's own work (``state.own_work``) leaves no entry behind. No
launch pays for this: ``run`` is not wrapped.
"""

from __future__ import annotations

import gc
import inspect
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import triton
from triton.runtime.autotuner import Autotuner

from zlbench.plugins import state
from zlbench.protocol.turn import process_turn


@dataclass
class TunerCall:
    """One ``run`` of a tuner, as the handler and the listeners see it."""

    tuner: Any
    kernel: str  # stable kernel id, see kernel_id()
    libtuner: bool
    key: tuple  # the tuner's cache key (computed for single-config kernels too)
    single: bool = False  # one config: the tuner never consults its cache (docs/design.md §5.3)
    config: Any = None  # the config that ran (after the call): best_config / configs[0]
    timings: dict | None = None  # {config: timing} when this call benchmarked
    pinned: bool = False  # a replayed config was injected and ran
    pin_ignored: bool = False  # a config was injected, but the tuner swept or ran another
    ret: Any = None  # what the tuner's run returned (a compiled kernel on GPU)

    def read_back(self) -> Any:
        """docs/design.md §5.1: the config stored for ``key``, read back from the tuner's cache
        (never a diff of cache keys: on a warm sqlite DB no key is added)."""
        if self.single:
            return self.tuner.configs[0]
        try:
            return self.tuner.cache[self.key]
        except Exception:  # LibTuner bypass modes do not store: use what ran
            return self.config


class Handler(Protocol):
    def pin(self, call: TunerCall) -> Any | None: ...
    def configs_for(self, call: TunerCall) -> list | None: ...
    def pin_failed(self, call: TunerCall, exc: BaseException, evicted: bool) -> None: ...
    def after(self, call: TunerCall) -> None: ...

    # optional: aot_jobs(call) -> int, threads to compile an unpinned run's sweep ahead


class NullHandler:
    """Pins nothing, records nothing: lets listeners run without record/replay."""

    def pin(self, call: TunerCall) -> None:
        return None

    def configs_for(self, call: TunerCall) -> None:
        return None

    def pin_failed(self, call: TunerCall, exc: BaseException, evicted: bool) -> None:
        return None

    def after(self, call: TunerCall) -> None:
        return None


PACKAGES = ("flag_gems", "flaggems_vllm")
_HANDLER: Handler | None = None
_LISTENERS: list[Callable[[TunerCall], None]] = []
_ORIGINALS: dict[tuple[type, str], Any] = {}
_BENCH_CALLS = [0]
_BENCHED: dict[str, int] = {}  # kernel id -> configs benchmarked (which kernels swept)
_IDS: dict[int, str] = {}
_ID_USERS: dict[str, int] = {}
# the LibEntry-like objects of this process, and their per-launch-key caches
# (FlagGems: ``kernel_cache``, a tuple of dicts, one per device; ``_cpu_cache``)
_ENTRIES: weakref.WeakSet = weakref.WeakSet()
LAUNCH_CACHES = ("kernel_cache", "_cpu_cache")

CONFIG_PARAMS = frozenset(inspect.signature(triton.Config.__init__).parameters) - {
    "self",
    "kwargs",
    "pre_hook",
}


# --------------------------------------------------------------------------- pure helpers


def kernel_id(tuner: Any) -> str:
    """``<module>:<qualname>`` of the Python function under the tuner.

    Stable across processes; a second distinct tuner over the same function
    (rare) gets ``#2``, ``#3``... in order of first use.
    """
    known = _IDS.get(id(tuner))
    if known is not None:
        return known
    fn = getattr(tuner, "base_fn", None) or tuner
    while not inspect.isfunction(fn) and hasattr(fn, "fn"):
        fn = fn.fn
    base = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    n = _ID_USERS.get(base, 0) + 1
    _ID_USERS[base] = n
    kid = base if n == 1 else f"{base}#{n}"
    _IDS[id(tuner)] = kid
    return kid


def tuning_key(tuner: Any, args: tuple, kwargs: dict, libtuner: bool) -> tuple:
    """The key the tuner itself uses for its cache (computed the same way)."""
    nargs = dict(zip(tuner.arg_names, args, strict=False))
    named = {k: v for k, v in {**nargs, **kwargs}.items() if k in tuner.arg_names}
    if libtuner:
        return tuple(tuner.get_key(named))
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def config_to_dict(config: Any) -> dict:
    """``{"kwargs": {...}, "num_warps": 4, "num_ctas": 1, "num_stages": 3, ...}``."""
    out: dict = {"kwargs": dict(config.kwargs)}
    for k, v in config.all_kwargs().items():
        if k not in config.kwargs:
            out[k] = v
    return out


def first_timing(timing: Any) -> Any:
    """The ms value of one config's timing (the first entry when it is a list of quantiles)."""
    return timing[0] if isinstance(timing, (list, tuple)) and timing else timing


def config_from_dict(data: dict) -> Any:
    opts = {k: v for k, v in data.items() if k in CONFIG_PARAMS}
    return triton.Config(dict(data.get("kwargs", {})), **opts)


def is_compile_error(exc: BaseException) -> bool:
    """Errors raised by triton while building a variant (CompilationError,
    OutOfResources, PTXASError, InterpreterError...); never device faults,
    which torch/the driver raise as plain RuntimeError."""
    return type(exc).__module__.split(".")[0] in ("triton", "flagtree")


class PinnedCache:
    """A cache view in which ``key`` maps to ``config``, over the tuner's own cache."""

    def __init__(self, base: Any, key: tuple, config: Any):
        self.base, self.key, self.config = base, key, config

    def __contains__(self, k) -> bool:
        return k == self.key or k in self.base

    def __getitem__(self, k):
        return self.config if k == self.key else self.base[k]

    def __setitem__(self, k, v) -> None:
        if k != self.key:
            self.base[k] = v

    def get(self, k, default=None):
        return self[k] if k in self else default

    def __getattr__(self, name):
        return getattr(self.base, name)


# --------------------------------------------------------------------------- the wrapped run


def _run_counting(call: TunerCall, orig: Callable, args: tuple, kwargs: dict) -> Any:
    before = _BENCH_CALLS[0]
    subset = _HANDLER.configs_for(call) if _HANDLER is not None else None
    saved_configs = call.tuner.configs
    if subset is not None:
        call.tuner.configs = subset
    try:
        _compile_ahead(call, args, kwargs)
        ret = orig(call.tuner, *args, **kwargs)
    finally:
        call.tuner.configs = saved_configs
    if _BENCH_CALLS[0] > before:
        call.timings = dict(getattr(call.tuner, "configs_timings", None) or {})
    return ret


def _compile_ahead(call: TunerCall, args: tuple, kwargs: dict) -> None:
    """Record mode: compile the configs this run is about to sweep, in parallel, before
    it benchmarks them (:mod:`zlbench.plugins.aot`); ``aot_jobs`` of the handler (0: off)."""
    jobs = getattr(_HANDLER, "aot_jobs", None)
    n = jobs(call) if callable(jobs) and not call.single else 0
    if n > 0:
        from zlbench.plugins import aot

        aot.before_sweep(call.tuner, call.key, call.libtuner, args, kwargs, n)


def _run_pinned(call: TunerCall, orig: Callable, pinned: Any, args: tuple, kwargs: dict) -> Any:
    tuner = call.tuner
    if type(tuner.cache) is dict:  # docs/design.md §5.2: inject unconditionally
        tuner.cache[call.key] = pinned
        return orig(tuner, *args, **kwargs)
    saved = tuner.cache
    tuner.cache = PinnedCache(saved, call.key, pinned)
    try:
        return orig(tuner, *args, **kwargs)
    finally:
        tuner.cache = saved


def same_config(ran: Any, pinned: Any) -> bool:
    """Whether the config a tuner ran is the pinned one (LibTuner may swap in its
    own config object with equal ``all_kwargs()`` to re-attach a pre_hook)."""
    if ran is None or ran is pinned:
        return True  # a tuner without best_config: only the bench count can tell
    try:
        return ran.all_kwargs() == pinned.all_kwargs()
    except AttributeError:
        return False


def _settle_pin(call: TunerCall, pinned: Any, benched: int) -> None:
    """Decide, after a pinned call returned, whether the pin was honoured.

    A tuner that reads its cache through a path the injection does not cover
    (e.g. it re-resolves ``self.cache`` inside ``run``) ignores the pin silently:
    it benchmarks configs (a sweep) or runs the config its own cache holds. Such
    a call is not pinned (``pin_ignored``); the handler marks it a fallback.
    """
    ran = getattr(call.tuner, "best_config", None)
    call.config = ran if ran is not None else pinned
    if benched == 0 and same_config(ran, pinned):
        call.pinned = True
        return
    call.pin_ignored = True
    if benched:
        call.timings = dict(getattr(call.tuner, "configs_timings", None) or {})


def _evict(tuner: Any, key: tuple) -> bool:
    """docs/design.md §5.5: drop a bad config from the tuner's cache; False where impossible."""
    cache = tuner.cache
    if not hasattr(type(cache), "__delitem__"):
        return False
    try:
        del cache[key]
    except KeyError:
        pass
    return True


def _drive(tuner: Any, orig: Callable, libtuner: bool, args: tuple, kwargs: dict) -> Any:
    handler = _HANDLER
    single = len(tuner.configs) <= 1
    key = tuning_key(tuner, args, kwargs, libtuner)
    call = TunerCall(tuner, kernel_id(tuner), libtuner, key, single=single)
    pinned = None if single else handler.pin(call)
    if pinned is not None:
        before = _BENCH_CALLS[0]
        try:
            call.ret = _run_pinned(call, orig, pinned, args, kwargs)
        except Exception as exc:
            if not is_compile_error(exc):
                raise
            handler.pin_failed(call, exc, _evict(tuner, key))
            pinned = None
        else:
            _settle_pin(call, pinned, _BENCH_CALLS[0] - before)
    if pinned is None:
        call.ret = _run_counting(call, orig, args, kwargs)
        call.config = tuner.configs[0] if single else getattr(tuner, "best_config", None)
    handler.after(call)
    for listener in list(_LISTENERS):
        listener(call)
    return call.ret


def _wrap_run(orig: Callable, libtuner: bool) -> Callable:
    def run(self, *args, **kwargs):
        if _HANDLER is None or state.in_own_work():  # zlbench's own work: not the op's
            return orig(self, *args, **kwargs)
        return _drive(self, orig, libtuner, args, kwargs)

    run.__wrapped__ = orig
    run._zl_patched = True
    return run


def _wrap_bench(orig: Callable) -> Callable:
    def _bench(self, *args, **kwargs):
        if not state.in_own_work():  # a sweep of zlbench's own work is not the op's
            _BENCH_CALLS[0] += 1
            kid = kernel_id(self)
            _BENCHED[kid] = _BENCHED.get(kid, 0) + 1
        turn = process_turn()
        if turn.path is not None:  # a shared GPU: compile the config before the turn
            compile_config(self, args, kwargs)
        with turn.hold():  # one config timed: the GPU's turn (protocol.turn)
            return orig(self, *args, **kwargs)

    _bench.__wrapped__ = orig
    return _bench


def compile_config(tuner: Any, args: tuple, kwargs: dict) -> None:
    """Compile the kernel of the config ``Autotuner._bench`` is about to time, without
    launching it (triton's ``run(..., warmup=True)``, what ``JITFunction.warmup`` does),
    so that on a shared GPU the compiling happens outside the turn and the turn holds
    only the timing. Best effort: a call without a config or a ``warmup`` argument is
    left alone, and any error is left for ``_bench`` to meet (and handle) as before."""
    config = kwargs.get("config")
    meta = {k: v for k, v in kwargs.items() if k != "config"}
    if config is None or "warmup" not in meta or not hasattr(config, "all_kwargs"):
        return
    try:
        tuner.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
    except Exception:  # noqa: BLE001 - _bench compiles again inside the turn and decides
        return


# --------------------------------------------------------------------------- install


def _patch(cls: type, name: str, wrapper: Callable) -> None:
    if (cls, name) in _ORIGINALS:
        return
    orig = cls.__dict__[name]
    _ORIGINALS[(cls, name)] = orig
    setattr(cls, name, wrapper(orig))


def _subclasses(cls: type) -> list[type]:
    out, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        out.append(sub)
        todo.extend(sub.__subclasses__())
    return out


def patch_packages(packages: list[str]) -> list[str]:
    """docs/design.md §5.6: patch the LibTuner-like classes of the given (imported) packages,
    and their LibEntry-like ones (a ``KernelInterface`` that is no tuner and has its own
    ``run`` and ``__init__``) so that :func:`forget_launch_caches` knows each object.

    Idempotent; returns ``module.QualName`` of every tuner class patched so far.
    """
    for cls in _subclasses(Autotuner):
        if cls.__module__.split(".")[0] not in packages or "run" not in cls.__dict__:
            continue
        libtuner = callable(getattr(cls, "get_key", None))
        _patch(cls, "run", lambda orig, lt=libtuner: _wrap_run(orig, lt))
    new = [
        cls
        for cls in _subclasses(triton.runtime.KernelInterface)
        if cls.__module__.split(".")[0] in packages
        and "run" in cls.__dict__
        and "__init__" in cls.__dict__
        and not issubclass(cls, (Autotuner, triton.runtime.Heuristics))
        and (cls, "__init__") not in _ORIGINALS
    ]
    for cls in new:
        _patch(cls, "__init__", _wrap_entry_init)
    if new:  # those made before (at import): found once, when their class is first seen
        kinds = tuple(new)
        for obj in gc.get_objects():
            if isinstance(obj, kinds):
                _remember(obj)
    state.on_own_work(_own_work_begins)
    return patched_classes()


def _wrap_entry_init(orig: Callable) -> Callable:
    def __init__(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        _remember(self)

    return __init__


def _remember(entry: Any) -> None:
    try:
        _ENTRIES.add(entry)
    except TypeError:  # unhashable (an ``__eq__`` without ``__hash__``): left as it is
        pass


def _own_work_begins() -> Callable[[], None]:
    """Note the keys of every launch cache that holds some; the returned call drops every
    key added since (the own work's launches: an empty cache, or one made meanwhile, is
    emptied), so the op's own launch of such a key still reaches its tuner."""
    # id -> (the table, kept so that its id stays its own; its keys then)
    before = {id(t): (t, set(t)) for e in list(_ENTRIES) for t in _launch_tables(e) if t}

    def ends() -> None:
        for e in list(_ENTRIES):
            for table in _launch_tables(e):
                keys = before[id(table)][1] if id(table) in before else set()
                for key in set(table) - keys:
                    table.pop(key, None)

    return ends


def _launch_tables(entry: Any) -> list[dict]:
    """The per-launch-key dicts of a LibEntry-like object (:data:`LAUNCH_CACHES`)."""
    tables: list = []
    for name in LAUNCH_CACHES:
        cache = getattr(entry, name, None)
        tables += cache if isinstance(cache, (tuple, list)) else [cache]
    return [t for t in tables if isinstance(t, dict)]


def forget_launch_caches() -> int:
    """Empty the launch caches of every LibEntry-like object (an op starts); returns how
    many held an entry."""
    emptied = 0
    for entry in list(_ENTRIES):
        tables = [t for t in _launch_tables(entry) if t]
        for table in tables:
            table.clear()
        emptied += bool(tables)
    return emptied


def imported_packages() -> list[str]:
    """Which of the FlagGems packages the process has imported (docs/design.md §5.6)."""
    return [p for p in PACKAGES if p in sys.modules]


def patched_classes() -> list[str]:
    return sorted(
        f"{c.__module__}.{c.__qualname__}"
        for (c, n) in _ORIGINALS
        if n == "run" and issubclass(c, Autotuner)
    )


def install(handler: Handler | None = None) -> None:
    """Route every Autotuner run through ``handler`` (LibTuners: see patch_packages).

    Without a handler, keep the installed one (or a :class:`NullHandler`).
    """
    global _HANDLER
    if handler is not None or _HANDLER is None:
        _HANDLER = handler or NullHandler()
    _patch(Autotuner, "run", lambda orig: _wrap_run(orig, False))
    _patch(Autotuner, "_bench", _wrap_bench)


def uninstall() -> None:
    """Restore every patched method and forget the handler and listeners."""
    global _HANDLER
    for (cls, name), orig in list(_ORIGINALS.items()):
        setattr(cls, name, orig)
    _ORIGINALS.clear()
    _LISTENERS.clear()
    _ENTRIES.clear()
    state.on_own_work(_own_work_begins, add=False)
    _HANDLER = None


def add_listener(fn: Callable[[TunerCall], None]) -> None:
    """Be told about every tuner run (after it ran), e.g. to dump its TTGIR."""
    if fn not in _LISTENERS:
        _LISTENERS.append(fn)


def remove_listener(fn: Callable[[TunerCall], None]) -> None:
    if fn in _LISTENERS:
        _LISTENERS.remove(fn)


def bench_calls() -> int:
    """Configs benchmarked by any tuner in this process so far (a sweep detector)."""
    return _BENCH_CALLS[0]


def benched_kernels() -> dict[str, int]:
    """Kernel id -> configs benchmarked so far in this process (a copy)."""
    return dict(_BENCHED)
