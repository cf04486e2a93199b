"""The gate's screen leaves its compiled kernels in a triton cache dir the gate owns
(a temp dir, never in --out), and the measuring batches of the compiler under test
(the replay, the confirmation re-measures, the A/B's PR side) share it and record
without SASS; the A/B's base side gets the base compiler's own (its kernels that the
screen's base rebuild and the replay built), never the PR's; a baseline without
codegen records or a screen that compiled nothing changes nothing;
``<out>/steps.json`` has each step's wall seconds, also when a step stops the gate.
Fakes for the screen and the batch (tests/workflow/test_gate_codegen.py); the real
screen and real cache hits: tests/workflow/test_gate_shared_cache_e2e.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_gate_codegen import (
    ADD_SAME,
    MM_CHANGED,
    FakeBatch,
    FakeScreen,
    baseline,
    gate,
    good,
    mm_slower,
)
from test_gate_codegen import ops_dir as ops_dir  # noqa: F401 - the fixture

from zlbench.errors import ZlbenchError
from zlbench.models import STEPS_JSON, GateSteps, Scheduling, load_json_model
from zlbench.runner.ab.env import PR_ENV, CompilerEnv
from zlbench.runner.execute.worker import SHARED_TRITON_CACHE
from zlbench.workflow.gate import NO_SASS_FLAG, MeasureRequest


class CachingScreen(FakeScreen):
    """The fake screen, also leaving one triton cache group per kernel in cache_out
    (and taking 0.05 s, so that steps.json's screen time is seen)."""

    def __call__(self, opts, say):
        time.sleep(0.05)
        for k in self.kernels:
            d = opts.cache_out / f"key-{k.kernel_id}"
            d.mkdir(parents=True)
            (d / f"__grp__{k.name}.json").write_text('{"child_paths": {}}')
        return super().__call__(opts, say)


class SeeingBatch(FakeBatch):
    """The fake batch, noting whether each request's shared cache exists while measured."""

    def __init__(self, results):
        super().__init__(results)
        self.existed: list[bool] = []

    def __call__(self, req):
        self.existed.append(req.shared_cache is not None and req.shared_cache.is_dir())
        return super().__call__(req)


def test_measure_and_confirm_share_the_screens_cache_which_is_removed_after(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    batch = SeeingBatch(mm_slower())  # mm regresses: confirmed twice
    rc, out, err = gate(
        tmp_path, bl, ops_dir, CachingScreen(ADD_SAME, MM_CHANGED), batch, confirm=2
    )
    assert rc == 1 and len(batch.requests) == 3
    caches = {r.shared_cache for r in batch.requests}
    assert len(caches) == 1 and batch.existed == [True, True, True]
    assert [r.sass for r in batch.requests] == [False] * 3  # the screen has the SASS
    cache = caches.pop()
    assert not cache.exists() and out not in cache.parents  # a temp dir, gone with the gate
    assert (
        "zlbench gate: measure step uses the screen's 2 compiled kernels (shared triton cache)"
        in err
    )


def test_a_baseline_without_codegen_records_gets_no_shared_cache(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl", records=False)
    screen, batch = CachingScreen(ADD_SAME), SeeingBatch(mm_slower())
    rc, out, err = gate(tmp_path, bl, ops_dir, screen, batch, confirm=1)
    assert rc == 1 and screen.calls == [] and len(batch.requests) == 2
    assert [r.shared_cache for r in batch.requests] == [None, None]
    assert [r.sass for r in batch.requests] == [True, True]  # no screen: records keep SASS
    assert "shared triton cache" not in err
    steps = load_json_model(out / STEPS_JSON, GateSteps)
    assert steps.shared_cache_kernels is None


def test_a_screen_that_compiled_nothing_leaves_each_process_its_own_cache(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    batch = SeeingBatch(mm_slower())
    rc, _, err = gate(tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED), batch, confirm=1)
    assert rc == 1 and [r.shared_cache for r in batch.requests] == [None, None]
    assert [r.sass for r in batch.requests] == [True, True]  # compiled here: SASS recorded
    assert "the screen left no compiled kernel: the measure step compiles" in err


class SlowBatch(FakeBatch):
    """The fake batch, taking ``seconds`` per request; raising ``fail`` (once
    measured) from the request numbered ``fail_at`` on."""

    def __init__(self, results, seconds=0.05, fail=None, fail_at=0):
        super().__init__(results)
        self.seconds, self.fail, self.fail_at = seconds, fail, fail_at

    def __call__(self, req):
        time.sleep(self.seconds)
        if self.fail is not None and len(self.requests) >= self.fail_at:
            raise self.fail
        return super().__call__(req)


def test_steps_json_has_the_wall_seconds_of_each_step(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = CachingScreen(ADD_SAME, MM_CHANGED)
    rc, out, _ = gate(tmp_path, bl, ops_dir, screen, SlowBatch(mm_slower()), confirm=1)
    assert rc == 1
    steps = load_json_model(out / STEPS_JSON, GateSteps)
    assert set(steps.seconds) == {"screen", "measure", "confirm", "total"}
    assert steps.seconds["measure"] >= 0.05 and steps.seconds["confirm"] >= 0.05
    assert steps.seconds["screen"] >= 0.05
    parts = steps.seconds["screen"] + steps.seconds["measure"] + steps.seconds["confirm"]
    assert parts <= steps.seconds["total"] + 0.01
    assert steps.shared_cache_kernels == 2


@pytest.mark.parametrize("fail_at", [0, 1], ids=["measure", "confirm"])
def test_steps_json_is_written_when_a_step_stops_the_gate(tmp_path, ops_dir, fail_at):
    bl = baseline(tmp_path / "bl")
    batch = SlowBatch(mm_slower(), fail=ZlbenchError("the GPU went away"), fail_at=fail_at)
    with pytest.raises(ZlbenchError, match="the GPU went away"):
        gate(tmp_path, bl, ops_dir, CachingScreen(ADD_SAME, MM_CHANGED), batch, confirm=1)
    steps = load_json_model(tmp_path / "out" / STEPS_JSON, GateSteps)
    assert steps.shared_cache_kernels == 2 and steps.seconds["screen"] >= 0.05
    assert steps.seconds["measure"] >= 0.05  # the time spent before it stopped
    if fail_at:
        assert steps.seconds["confirm"] >= 0.05
    else:  # stopped in measure: confirm never ran
        assert steps.seconds["confirm"] == 0.0
    assert steps.seconds["total"] >= steps.seconds["measure"] + steps.seconds["confirm"]
    assert not (tmp_path / "out" / "verdict.json").exists()


@pytest.mark.parametrize("built", [False, True], ids=["no-base-builds", "base-builds"])
def test_the_ab_gives_each_side_its_own_compilers_cache(tmp_path, ops_dir, built):
    from zlbench.gate.load import load_baseline
    from zlbench.models import Selection
    from zlbench.workflow.ab import AbContext, AbOptions
    from zlbench.workflow.gate import GateInputs, GateJob, GateSeams, _remeasure_or_ab

    bl = load_baseline(baseline(tmp_path / "bl"))
    share = Scheduling(gpu_share=4)
    job = GateJob(
        baseline=str(bl.path),
        out=tmp_path / "out",
        selection=Selection(ops_dir=ops_dir),
        scheduling=share,
    )
    cache = tmp_path / "cache"
    req = MeasureRequest(bl, {"main/mm"}, tmp_path / "out" / "results", None, job)
    req.shared_cache, req.sass = cache, False
    base_cache = tmp_path / "base-cache" if built else None
    req.base_cache = base_cache
    base = CompilerEnv("/envs/base", python="/envs/base/bin/python")
    ab = AbContext(AbOptions(base_compiler="/envs/base"), base=base)
    inputs = GateInputs(bl, None, None, ab)
    batch = FakeBatch(good())
    remeasure, measure = _remeasure_or_ab(inputs, req, tmp_path / "out", GateSeams(measure=batch))
    assert remeasure is None
    measure(PR_ENV, ["main/mm"], tmp_path / "pr")
    measure(base, ["main/mm"], tmp_path / "base")
    # the PR side the screen's kernels; the base side the base compiler's builds, if any
    got = [(r.compiler, r.shared_cache) for r in batch.requests]
    assert got == [(PR_ENV, cache), (base, base_cache)]
    assert [r.sass for r in batch.requests] == [False, False]  # both sides record alike
    # both sides measured as the baseline was (recorded unshared), not --gpu-share 4
    assert [r.job.scheduling.gpu_share for r in batch.requests] == [1, 1]
    assert set(inputs.steps.seconds) == {"ab"}


def test_measure_batch_points_every_process_at_the_shared_cache(tmp_path, ops_dir, batch_configs):
    from zlbench.gate.load import load_baseline
    from zlbench.models import Selection
    from zlbench.workflow.gate import GateJob, measure_batch

    configs = batch_configs
    bl = load_baseline(baseline(tmp_path / "bl"))
    four = Scheduling(precompile_jobs=4)
    job = GateJob(
        baseline=str(bl.path),
        out=tmp_path / "o",
        selection=Selection(ops_dir=ops_dir),
        scheduling=four,
    )
    plain = MeasureRequest(bl, {"main/mm"}, tmp_path / "o" / "a", None, job)
    shared = MeasureRequest(bl, {"main/mm"}, tmp_path / "o" / "b", None, job)
    shared.shared_cache, shared.sass = Path(tmp_path / "cache"), False
    measure_batch(plain)
    measure_batch(shared)
    assert configs[0].env is None and configs[0].precompile_jobs == 4
    assert configs[1].env[SHARED_TRITON_CACHE] == str(tmp_path / "cache")
    assert configs[1].precompile_jobs == 0  # the screen compiled them: no precompile pass
    assert NO_SASS_FLAG not in configs[0].extra_pytest_args
    assert configs[1].extra_pytest_args == [NO_SASS_FLAG]  # no cuobjdump at each op's end


def test_a_kernel_cache_keeps_the_screens_kernels_and_notes_them_for_the_next_gate(
    tmp_path, ops_dir
):
    """``--kernel-cache DIR``: the screen compiles into DIR's dir for this compiler (by
    its fingerprint), the measure step shares it, it outlives the gate, and the kernels
    the screen built there are noted (protocol.cache.mark_built) for a later gate's
    builds; a gate that only judges (--results) refuses it in one line."""
    from zlbench.protocol.cache import built_ids, kernel_cache_dir
    from zlbench.workflow.codegen import compiler_fingerprint

    bl = baseline(tmp_path / "bl")
    built = MM_CHANGED.model_copy(update={"binary_digest": "b" * 16})
    screen, batch = CachingScreen(ADD_SAME, built), SeeingBatch(good())
    kept = tmp_path / "kc"
    rc, out, err = gate(tmp_path, bl, ops_dir, screen, batch, kernel_cache=kept)
    assert rc == 0
    mine = kernel_cache_dir(kept, compiler_fingerprint())
    assert {r.shared_cache for r in batch.requests} == {mine}
    assert mine.is_dir() and sorted(p.name for p in mine.iterdir() if p.name.startswith("key-"))
    assert built_ids(mine) == {built.kernel_id}  # ADD_SAME has no binary: not noted
    with pytest.raises(ZlbenchError, match="--kernel-cache keeps what a gate compiles"):
        gate(tmp_path / "2", bl, ops_dir, FakeScreen(), FakeBatch(good()),
             kernel_cache=kept, results=out / "results")  # fmt: skip
