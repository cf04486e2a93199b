"""Shared pieces of the two FAKE FlagGems packages (``flag_gems``, ``flaggems_vllm``).

Written from scratch for zlbench's CPU tests; it imitates the *behaviour* of
FlagGems that zlbench depends on, not its code:

* a LibTuner-like autotuner (a subclass of ``triton.runtime.Autotuner``) whose
  config cache is a persistent sqlite table, located like upstream via
  ``FLAGGEMS_DB_URL`` (``sqlite:///<path>``) or ``FLAGGEMS_CACHE_DIR``; its
  ConfigCache stores insert-or-ignore (an existing key is never overwritten) and
  has no ``__delitem__``; on a cache hit the tuner re-attaches a config's
  ``pre_hook`` by matching kwargs against its own configs;
* a LibEntry-like launcher (a ``KernelInterface`` over a tuner) that keeps, per
  launch key (tensor dtypes, other argument values), the config of the key's first
  launch, and runs it on later launches without calling the tuner, as upstream's
  ``kernel_cache`` does across the ops of one process;
* a ``do_bench`` usable under ``TRITON_INTERPRET=1`` (triton's default needs CUDA);
* ``ZLBENCH_FAKE_SLOWDOWN=<factor>``: every fake op runs its kernel ``factor``
  times, so gate tests can make "FlagGems" measurably slower;
* ``ZLBENCH_FAKE_CLOCK=1``: zlbench's timing (and this ``do_bench``) read a virtual
  clock instead of the wall clock: each read costs :data:`READ_S` and each fake op
  call ``slowdown()`` times :data:`LAUNCH_S`, so a test's numbers do not depend on
  the machine's load (an A/A is exactly equal, a 16x slowdown exactly slower).

:func:`build_libtuner` and :func:`build_libentry` build new classes on each call, so
each fake package owns a distinct ``LibTuner`` class, as two real packages would.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import sqlite3
import statistics
import time
from pathlib import Path

import torch
import triton

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
DEVICE = "cuda" if torch.cuda.is_available() and not INTERPRET else "cpu"


class DeviceFn:
    """The subset of ``flag_gems.runtime.torch_device_fn`` the benchmarks use."""

    def synchronize(self, device=None) -> None:
        if DEVICE == "cuda":
            torch.cuda.synchronize(device)

    def empty_cache(self) -> None:
        if DEVICE == "cuda":
            torch.cuda.empty_cache()

    def current_device(self):
        return torch.cuda.current_device() if DEVICE == "cuda" else "cpu"

    def device_count(self) -> int:
        return torch.cuda.device_count() if DEVICE == "cuda" else 1

    def is_available(self) -> bool:
        return DEVICE == "cuda"


def slowdown() -> int:
    """How many times each fake op runs its kernel (``ZLBENCH_FAKE_SLOWDOWN``); under
    the virtual clock, the op's kernels' time passes here."""
    raw = os.environ.get("ZLBENCH_FAKE_SLOWDOWN", "1")
    try:
        n = max(1, math.ceil(float(raw)))
    except ValueError:
        n = 1
    _VIRTUAL_S[0] += n * LAUNCH_S
    return n


# The virtual clock (ZLBENCH_FAKE_CLOCK=1): seconds; a read, a fake kernel launch.
FAKE_CLOCK = os.environ.get("ZLBENCH_FAKE_CLOCK") == "1"
READ_S = 2e-5
LAUNCH_S = 1e-4
_VIRTUAL_S = [0.0]


class VirtualTime:
    """The ``time`` module, but ``perf_counter`` reads the virtual clock."""

    @staticmethod
    def perf_counter() -> float:
        _VIRTUAL_S[0] += READ_S
        return _VIRTUAL_S[0]

    def __getattr__(self, name):
        return getattr(time, name)


def _clock() -> float:
    return VirtualTime.perf_counter() if FAKE_CLOCK else time.perf_counter()


if FAKE_CLOCK:
    from zlbench.plugins import timing_backends

    timing_backends.time = VirtualTime()


def interp_do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8)):
    """A wall-clock ``do_bench`` for the interpreter: 1 warmup + 3 timed calls, in ms."""
    kernel_call()
    times = []
    for _ in range(3):
        t0 = _clock()
        kernel_call()
        times.append((_clock() - t0) * 1e3)
    times.sort()
    return [statistics.median(times), times[0], times[-1]][: len(quantiles)]


def default_do_bench():
    """The do_bench to hand to an Autotuner: ours under the interpreter, else triton's."""
    return interp_do_bench if INTERPRET else None


@contextlib.contextmanager
def gems_mode(state: dict, exclude=None):
    """``use_gems(exclude=None)``: the fake registers nothing with aten; it only
    records that gems mode is on (ops are called explicitly by the benchmarks)."""
    previous = dict(state)
    state["enabled"] = True
    state["exclude"] = list(exclude or [])
    try:
        yield
    finally:
        state.clear()
        state.update(previous)


# --------------------------------------------------------------------------- tuning DB


def db_path(vendor: str = "nvidia") -> Path:
    """Where the tuning DB lives: FLAGGEMS_DB_URL, else FLAGGEMS_CACHE_DIR, else ~/.flaggems."""
    url = os.environ.get("FLAGGEMS_DB_URL")
    if url:
        if not url.startswith("sqlite:///"):
            raise ValueError(f"fake FlagGems only supports sqlite:/// URLs, got {url!r}")
        return Path(url[len("sqlite:///") :])
    root = Path(os.environ.get("FLAGGEMS_CACHE_DIR") or Path.home() / ".flaggems")
    major, minor = triton.__version__.split(".")[:2]
    return root / "config_cache" / f"TunedConfig_{vendor}_triton_{major}_{minor}.db"


_CONFIG_PARAMS = set(inspect.signature(triton.Config.__init__).parameters) - {"self", "kwargs"}


def _config_from_flat(flat: dict) -> triton.Config:
    meta = {k: v for k, v in flat.items() if k not in _CONFIG_PARAMS}
    opts = {k: v for k, v in flat.items() if k in _CONFIG_PARAMS}
    return triton.Config(meta, **opts)


def build_libtuner(package: str):
    """Return ``(LibTuner, ConfigCache, libtuner)``: fresh classes owned by ``package``."""

    class ConfigCache:
        """Persistent best-config table: insert-or-ignore, and no ``__delitem__``."""

        def __init__(self, path: Path, table: str):
            self.path = path
            self.table = table

        def _connect(self):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path)
            con.execute(
                f'CREATE TABLE IF NOT EXISTS "{self.table}" (key TEXT PRIMARY KEY, config TEXT)'
            )
            return con

        @staticmethod
        def _key(key) -> str:
            return json.dumps([v if isinstance(v, (int, float, str)) else str(v) for v in key])

        def get(self, key):
            with contextlib.closing(self._connect()) as con:
                row = con.execute(
                    f'SELECT config FROM "{self.table}" WHERE key = ?', (self._key(key),)
                ).fetchone()
            return None if row is None else _config_from_flat(json.loads(row[0]))

        def set(self, key, config) -> None:
            flat = {k: v for k, v in config.all_kwargs().items() if v is not None}
            with contextlib.closing(self._connect()) as con, con:
                con.execute(
                    f'INSERT OR IGNORE INTO "{self.table}" VALUES (?, ?)',
                    (self._key(key), json.dumps(flat)),
                )

        def __contains__(self, key) -> bool:
            return self.get(key) is not None

        def __getitem__(self, key):
            config = self.get(key)
            if config is None:
                raise KeyError(key)
            return config

        def __setitem__(self, key, config) -> None:
            self.set(key, config)

    class LibTuner(triton.runtime.Autotuner):
        """Autotuner whose best configs persist in sqlite, keyed like FlagGems'
        (key args, then the dtypes of the tensor args)."""

        def __init__(self, fn, arg_names, configs, key, do_bench=None, pre_hook=None):
            super().__init__(
                fn, arg_names, configs, key, None, None, pre_hook=pre_hook, do_bench=do_bench
            )
            self.__name__ = self.base_fn.__name__
            text = ";".join(str(c) for c in self.configs)
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            self.cache = ConfigCache(db_path(), f"{self.__name__}_{digest}")
            self.bench_calls = 0  # configs benchmarked by this tuner (sweep detector)

        def get_key(self, args: dict) -> tuple:
            key = tuple(args[k] for k in self.keys if k in args)
            return key + tuple(str(v.dtype) for v in args.values() if hasattr(v, "dtype"))

        def _pick(self, args, kwargs):
            all_args = {**self.nargs, **kwargs}
            key = self.get_key({k: v for k, v in all_args.items() if k in self.arg_names})
            if key not in self.cache:

                def bench(config):
                    self.bench_calls += 1
                    return self._bench(*args, config=config, **kwargs)

                timings = {c: bench(c) for c in self.prune_configs(kwargs)}
                self.configs_timings = timings
                self.cache[key] = min(timings, key=timings.get)
            config = self.cache[key]
            if config.pre_hook is None:  # sqlite drops hooks: re-attach by kwargs
                for original in self.configs:
                    if original.all_kwargs() == config.all_kwargs():
                        return original
            return config

        def run(self, *args, **kwargs):
            self.nargs = dict(zip(self.arg_names, args, strict=False))
            config = self._pick(args, kwargs) if len(self.configs) > 1 else self.configs[0]
            self.best_config = config
            full = {**self.nargs, **kwargs, **config.all_kwargs()}
            if config.pre_hook is not None:
                config.pre_hook(full)
            ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
            self.nargs = None
            return ret

    LibTuner.__module__ = f"{package}.utils.libentry"
    LibTuner.__qualname__ = "LibTuner"
    ConfigCache.__qualname__ = "ConfigCache"
    ConfigCache.__module__ = f"{package}.utils.libentry"

    def libtuner(configs, key, do_bench=None, pre_hook=None):
        def decorator(fn):
            return LibTuner(fn, fn.arg_names, configs, key, do_bench=do_bench, pre_hook=pre_hook)

        return decorator

    return LibTuner, ConfigCache, libtuner


def build_libentry(package: str):
    """Return ``(LibEntry, libentry)``: a fresh launcher class owned by ``package``."""

    class LibEntry(triton.runtime.KernelInterface):
        """Caches, per launch key, the config the tuner chose at the key's first launch;
        a later launch with that key runs it without the tuner (``last_config`` says
        which config the last launch ran)."""

        def __init__(self, fn):
            self.fn = fn  # the tuner
            self.arg_names = fn.arg_names
            self.kernel_cache = (dict(),)  # one dict per device, as upstream
            self._cpu_cache = dict()
            self.last_config = None

        def run(self, *args, grid, warmup=False, **kwargs):
            key = tuple(str(a.dtype) if hasattr(a, "dtype") else a for a in args)
            cache = self.kernel_cache[0]
            if key not in cache:
                self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
                cache[key] = self.fn.best_config
            else:
                config = cache[key]
                self.fn.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())
            self.last_config = cache[key]

    LibEntry.__module__ = f"{package}.utils.libentry"
    LibEntry.__qualname__ = "LibEntry"

    def libentry():
        return LibEntry

    return LibEntry, libentry
