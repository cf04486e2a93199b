"""On a shared GPU an autotuner's config is compiled before the GPU's turn, so the turn
holds only its timing (zlbench.plugins._tuners.compile_config); alone on a GPU nothing
changes. A real ``triton.autotune`` kernel (interpreted) checks the call matches what
triton's own ``Autotuner.run`` passes to ``_bench``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

triton = pytest.importorskip("triton")

from zlbench.plugins import _tuners  # noqa: E402


class Fn:
    """The tuner's kernel: records each run's warmup flag and the turn depth."""

    def __init__(self, turn, fail_warmup=False):
        self.turn, self.fail_warmup, self.runs = turn, fail_warmup, []

    def run(self, *args, **kw):
        self.runs.append((kw["warmup"], self.turn.depth, args, kw.get("BLOCK")))
        if kw["warmup"] and self.fail_warmup:
            raise RuntimeError("out of resources")


def _bench_of(fn):
    def orig(self, *args, config, **meta):  # Autotuner._bench: one launch, timed
        self.fn.run(*args, **dict(meta, **config.all_kwargs()))
        return [1.0]

    tuner = SimpleNamespace(fn=fn, base_fn=test_a_config_compiles_outside_the_turn_and_times_inside)
    return _tuners._wrap_bench(orig), tuner


def test_a_config_compiles_outside_the_turn_and_times_inside(env_turn):
    fn = Fn(env_turn)
    bench, tuner = _bench_of(fn)
    config = triton.Config({"BLOCK": 64})
    assert bench(tuner, "x", config=config, grid=(1,), warmup=False) == [1.0]
    assert fn.runs == [(True, 0, ("x",), 64), (False, 1, ("x",), 64)]


def test_alone_on_a_gpu_the_config_is_not_compiled_twice(no_env_turn):
    fn = Fn(no_env_turn)
    bench, tuner = _bench_of(fn)
    bench(tuner, "x", config=triton.Config({"BLOCK": 64}), grid=(1,), warmup=False)
    assert fn.runs == [(False, 1, ("x",), 64)]  # only the timed launch (no-op turn)


def test_a_failing_compile_is_left_to_bench_inside_the_turn(env_turn):
    fn = Fn(env_turn, fail_warmup=True)
    bench, tuner = _bench_of(fn)
    assert bench(tuner, "x", config=triton.Config({"BLOCK": 8}), grid=(1,), warmup=False) == [1.0]
    assert [(w, d) for w, d, *_ in fn.runs] == [(True, 0), (False, 1)]


def test_a_call_without_a_config_or_warmup_argument_is_left_alone(env_turn):
    fn = Fn(env_turn)
    tuner = SimpleNamespace(fn=fn)
    _tuners.compile_config(tuner, ("x",), {"grid": (1,), "warmup": False})
    _tuners.compile_config(tuner, ("x",), {"config": triton.Config({"BLOCK": 8})})
    assert fn.runs == []


def test_a_real_autotuner_compiles_each_config_before_its_turn(env_turn, monkeypatch):
    import torch
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(Autotuner, "_bench", _tuners._wrap_bench(Autotuner._bench))

    def timed(kernel_call, quantiles):  # the autotuner's do_bench: one launch, no GPU
        kernel_call()
        return [1.0, 1.0, 1.0]

    @triton.autotune(
        configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16})],
        key=["n"],
        do_bench=timed,
    )
    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    runs = []
    real_run = double.fn.run

    def spy(*args, **kw):
        runs.append((kw["warmup"], env_turn.depth, kw["BLOCK"]))
        return real_run(*args, **kw)

    monkeypatch.setattr(double.fn, "run", spy)
    x = torch.ones(32)
    double[(1,)](x, 32)
    # per config: compiled (warmup, no launch) outside the turn, then timed inside it
    benched = runs[:4]
    assert benched == [(True, 0, 8), (False, 1, 8), (True, 0, 16), (False, 1, 16)]
    assert env_turn.taken == 2
