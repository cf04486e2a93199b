"""Fast record pass (docs/autotune.md): before an autotuner sweeps a key in record mode,
every config it will benchmark is compiled ahead on a thread pool
(zlbench.plugins.aot through the one tuner adapter, zlbench.plugins._tuners); the sweep
then finds every kernel compiled and only benchmarks. Real compiles for cuda:90 under
the stand-in driver (no GPU; launches do nothing), counted at ``triton.compile``."""

from __future__ import annotations

import sys
import threading
import types
from types import SimpleNamespace

import pytest

triton = pytest.importorskip("triton")
pytest.importorskip("triton.backends.nvidia")

import triton.language as tl  # noqa: E402
from triton.runtime import _async_compile  # noqa: E402
from triton.runtime import jit as jit_mod  # noqa: E402

from zlbench.plugins import _tuners, aot, autotune  # noqa: E402
from zlbench.plugins.compiler import standin  # noqa: E402

TIMES = {8: 3.0, 16: 1.0, 32: 2.0, 128: 0.5}  # BLOCK -> "ms"; 128 never compiles
RAN: list[int] = []


def _config(block: int) -> triton.Config:
    def mark(nargs, block=block):  # which config the fake benchmark is timing
        RAN.append(block)

    return triton.Config({"BLOCK": block}, num_warps=1, pre_hook=mark)


def timed(kernel_call, quantiles):
    RAN.clear()
    kernel_call()  # compiles on a miss; the stand-in's launch does nothing
    return [TIMES[RAN[-1]]] * 3


@triton.autotune(configs=[_config(b) for b in TIMES], key=["n"], do_bench=timed)
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 64, "BLOCK too large")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


KNOBS = {"cache": triton.knobs.cache, "runtime": triton.knobs.runtime}


class Handler(_tuners.NullHandler):
    def __init__(self, jobs: int):
        self.jobs = jobs

    def aot_jobs(self, call) -> int:
        return self.jobs


@pytest.fixture
def compiles(tmp_path, monkeypatch):
    """Every ``triton.compile`` of the kernel: (BLOCK, thread name, in an AsyncCompileMode
    submit); a fresh triton cache, tuner cache and JIT kernel cache."""
    import triton.compiler as compiler_pkg

    seen: list[tuple[int, str, bool]] = []
    real = compiler_pkg.compile

    def spy(src, target=None, options=None, _env_vars=None):
        block = next(v for k, v in src.constants.items() if k == (2,))
        seen.append((block, threading.current_thread().name, False))
        return real(src, target=target, options=options, _env_vars=_env_vars)

    real_do = jit_mod.JITFunction._do_compile

    def do_compile(self, key, signature, device, constexprs, options, attrs, warmup):
        if _async_compile.active_mode.get() is not None:
            seen.append((constexprs[(2,)], "submit", True))
        return real_do(self, key, signature, device, constexprs, options, attrs, warmup)

    monkeypatch.setattr(compiler_pkg, "compile", spy)
    monkeypatch.setattr(jit_mod.JITFunction, "_do_compile", do_compile)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    saved = {k: dict(v.__dict__) for k, v in KNOBS.items()}
    for knobs in KNOBS.values():  # read from the environment above, not a set value
        knobs.__dict__.pop("dir", None), knobs.__dict__.pop("interpret", None)
    scale.cache.clear()
    scale.fn.device_caches.clear()
    yield seen
    scale.cache.clear()
    scale.fn.device_caches.clear()
    for name, knobs in KNOBS.items():
        knobs.__dict__.clear()
        knobs.__dict__.update(saved[name])


def sweep(jobs: int) -> tuple[dict, dict]:
    """One record-mode call of the tuned kernel: (winner, {BLOCK: timing})."""
    import torch

    benched, calls = dict(_tuners._BENCHED), _tuners._BENCH_CALLS[0]
    _tuners.install(Handler(jobs))
    try:
        with standin.standin("cuda:90", launch="skip"):
            scale[(1,)](torch.ones(64), 64)
    finally:
        _tuners.uninstall()
        _tuners._BENCHED.clear()  # the process's sweep counters: as other tests left them
        _tuners._BENCHED.update(benched)
        _tuners._BENCH_CALLS[0] = calls
    timings = {c.kwargs["BLOCK"]: t for c, t in scale.configs_timings.items()}
    return scale.best_config.all_kwargs(), timings


def test_every_config_is_compiled_ahead_and_the_sweep_only_benchmarks(compiles):
    start = aot.STATS.copy()
    sweep(jobs=2)
    submitted = sorted(b for b, _, is_submit in compiles if is_submit)
    assert submitted == [8, 16, 32, 128]  # every config the sweep benchmarks, ahead
    in_pool = sorted(b for b, who, _ in compiles if who.startswith("zl-aot"))
    assert in_pool == [8, 16, 32, 128]  # compiled on the pool's threads
    on_main = [b for b, who, _ in compiles if who == "MainThread"]
    assert on_main == [128]  # the sweep recompiles only the config that failed ahead
    done = aot.STATS.since(start)
    assert (done.sweeps, done.configs, done.compiled, done.failed) == (1, 4, 3, 1)
    assert "sweeps=1 configs=4 compiled=3 cached=0 failed=1" in done.line("op")


def test_the_old_path_compiles_every_config_in_the_sweep(compiles):
    sweep(jobs=0)
    assert [b for b, _, s in compiles if s] == []
    assert sorted(b for b, who, _ in compiles if who == "MainThread") == [8, 16, 32, 128]


def test_the_winner_and_timings_are_those_of_the_old_path(compiles):
    old = sweep(jobs=0)
    scale.cache.clear()
    scale.fn.device_caches.clear()
    new = sweep(jobs=4)
    assert new == old
    assert old[0]["BLOCK"] == 16 and old[1][128] == [float("inf")] * 3  # 128 failed: inf


def test_a_key_already_tuned_compiles_nothing_ahead(compiles):
    sweep(jobs=2)
    compiles.clear()
    start = aot.STATS.copy()
    sweep(jobs=2)  # same key: the tuner's cache answers, no sweep
    assert compiles == [] and aot.STATS.since(start).sweeps == 0


def test_interpreted_kernels_are_not_compiled_ahead(compiles, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tuner = SimpleNamespace(configs=[1, 2], cache={})
    aot.before_sweep(tuner, ("k",), False, (), {"grid": (1,)}, 4)  # would fail on this stub
    assert compiles == []


def test_will_sweep_follows_the_tuners_cache_and_policy():
    class Default:
        configs = [1, 2]
        cache: dict = {}

        @classmethod
        def get(cls, name):
            return Default

    class Other(Default):
        pass

    assert aot.will_sweep(Default(), ("k",), libtuner=True)
    assert not aot.will_sweep(Other(), ("k",), libtuner=True)  # e.g. FlagTune's proposer
    cached = Default()
    cached.cache = {("k",): 1}
    assert not aot.will_sweep(cached, ("k",), libtuner=False)
    assert not aot.will_sweep(SimpleNamespace(configs=[1], cache={}), ("k",), False)
    forced = Default()
    forced._run_mode = SimpleNamespace(value="force_policy")
    assert not aot.will_sweep(forced, ("k",), libtuner=True)


def test_will_sweep_a_flagtune_tuner_that_hands_its_configs_to_the_default_policy(
    monkeypatch,
):
    class Tuner:
        configs = [1, 2]
        cache: dict = {}

        @classmethod
        def get(cls, name):
            return {"default": Default, "flagtune": FlagTune}[name]

    class Default(Tuner):
        pass

    class FlagTune(Tuner):
        pass

    modes = {}
    monkeypatch.setattr(aot, "flagtune_mode", lambda tuner: modes.get("mode"))
    for mode, sweeps in [("default", True), ("expanded", True), ("cost_model", False),
                         (None, False)]:  # fmt: skip
        modes["mode"] = mode
        assert aot.will_sweep(FlagTune(), ("k",), libtuner=True) is sweeps, mode
    assert aot.will_sweep(Default(), ("k",), libtuner=True)


def test_flagtune_mode_asks_flaggems_own_resolver(monkeypatch):
    # the resolver FlagGems' flagtune policy itself calls, given the tuner's op name and
    # whether FlagTree's cost model supports it; unknown (no such FlagGems): None
    calls = []
    runtime = types.ModuleType("flag_gems.runtime")
    runtime.resolve_tuning_mode = lambda op, supports_cost_model: (
        calls.append((op, supports_cost_model)) or SimpleNamespace(value="default")
    )
    libentry = types.ModuleType("flag_gems.utils.libentry")
    libentry._supports_flagtune_cost_model = lambda tuner: False
    utils = types.ModuleType("flag_gems.utils")
    utils.libentry = lambda: None  # as in FlagGems: the decorator hides the module
    gems = types.ModuleType("flag_gems")
    gems.runtime, gems.utils = runtime, utils
    mods = {"flag_gems": gems, "flag_gems.runtime": runtime, "flag_gems.utils": utils}
    mods["flag_gems.utils.libentry"] = libentry
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    tuner = SimpleNamespace(_flagtune_op_name="mm")
    assert aot.flagtune_mode(tuner) == "default" and calls == [("mm", False)]
    del libentry._supports_flagtune_cost_model
    assert aot.flagtune_mode(tuner) is None


def test_parse_jobs():
    assert aot.parse_jobs("off") == 0 and aot.parse_jobs("3") == 3
    assert 1 <= aot.parse_jobs(None) == aot.parse_jobs("auto") <= aot.MAX_JOBS
    with pytest.raises(ValueError, match="auto, off or a number"):
        aot.parse_jobs("many")


def test_the_handler_compiles_ahead_in_record_mode_only():
    handler = autotune.AutotuneHandler(aot_jobs=6)
    for mode, want in (("record", 6), ("replay", 0)):
        book = SimpleNamespace(entry=SimpleNamespace(mode=mode))
        handler.book = lambda book=book: book
        assert handler.aot_jobs(None) == want
    handler.book = lambda: None
    assert handler.aot_jobs(None) == 0
    off = autotune.AutotuneHandler(aot_jobs=0)
    off.book = lambda: SimpleNamespace(entry=SimpleNamespace(mode="record"))
    assert off.aot_jobs(None) == 0


# --------------------------------------------------------------------------- the plugin, end to end


def _record_mm(root, name: str, *extra: str) -> tuple[str, dict]:
    """Record benchpkg's mm (a fake LibTuner over 3 configs) through the real plugins,
    compiling for cuda:90 without a GPU; its output and autotune record."""
    import json
    import subprocess
    import sys

    from _corerun import FAST, entry

    from tests.support.codegen import subprocess_env
    from zlbench.models import WorkerPlan

    e = entry(root, "mm", "benchmark/test_mm.py::test_mm")
    e = e.model_copy(update={"run_dir": str(root / name)})
    plan = root / f"plan-{name}.json"
    plan.write_text(WorkerPlan(entries=[e]).model_dump_json(), encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "zlbench.plugins.loader",
           "--zl-plan", str(plan), *FAST, "--zl-codegen-standin", "cuda:90",
           "--zl-codegen-no-sass", *extra, "benchmark/test_mm.py::test_mm"]  # fmt: skip
    env = subprocess_env(root / name, src=root / "src")
    env["FLAGGEMS_DB_URL"] = f"sqlite:///{root / name / 'tuning.db'}"
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    records = json.loads((root / name / "autotune_records" / "mm.json").read_text())
    return out, records


def test_a_record_run_compiles_its_sweeps_ahead_and_records_the_same_configs(tmp_path):
    from _corerun import copy_benchpkg

    root = copy_benchpkg(tmp_path / "suite")
    new_out, new = _record_mm(root, "new")
    old_out, old = _record_mm(root, "old", "--zl-aot-compile", "off")
    lines = [ln[ln.index("ZLBENCH_AOT_COMPILE") :] for ln in new_out.splitlines()
             if "ZLBENCH_AOT_COMPILE " in ln]  # fmt: skip
    assert len(lines) == 1, new_out[-3000:]
    got = dict(part.split("=", 1) for part in lines[0].split()[1:])
    assert got["run_name"] == "mm" and int(got["sweeps"]) >= 1
    assert int(got["compiled"]) == int(got["configs"]) == 3 * int(got["sweeps"])
    assert got["failed"] == "0"
    assert "ZLBENCH_AOT_COMPILE" not in old_out  # off: the old path, nothing ahead
    assert new == old and new  # the records: the same winners


def test_batch_no_aot_compile_turns_the_plugin_option_off():
    import argparse

    from zlbench.cli import batch_cmd

    p = argparse.ArgumentParser()
    batch_cmd.add_aot_compile_option(p)
    assert batch_cmd.aot_compile_args(p.parse_args([])) == []
    off = batch_cmd.aot_compile_args(p.parse_args(["--no-aot-compile"]))
    assert off == ["--zl-aot-compile", "off"] and aot.parse_jobs(off[1]) == 0


def test_on_a_shared_gpu_the_compiles_ahead_give_the_shared_turn_up(compiles, env_turn):
    """The sweep starts in a measurement's first call, in the GPU's shared turn: its
    compiles ahead (CPU work) run with the turn given up, so another process may time
    meanwhile, and the turn is the process's again once they are done."""
    import triton.compiler as compiler_pkg

    spied = compiler_pkg.compile
    held: list[bool] = []

    def spy(src, target=None, options=None, _env_vars=None):
        if threading.current_thread().name.startswith("zl-aot"):
            held.append(env_turn.sharing)
        return spied(src, target=target, options=options, _env_vars=_env_vars)

    compiler_pkg.compile = spy
    try:
        with env_turn.share():
            sweep(jobs=2)
            assert env_turn.sharing  # taken again after the compiles
    finally:
        compiler_pkg.compile = spied
    assert held == [False] * 4  # every compile ahead ran with the turn given up
