"""The replay tier's paired timing loop and output comparison
(zlbench.plugins.replay.timing): the order of the calls (ABBA, a restore and a flush
before every timed call, the same for both sides), the pair rule's stopping, one-line
errors, the dtype-aware comparison, and a real @triton.jit kernel replayed under
TRITON_INTERPRET=1 as both sides. No timing value is asserted."""

from __future__ import annotations

import math

import pytest
import torch

from zlbench.models.ab import PairSample
from zlbench.models.replay import ArgSpec, LaunchSpec, TensorStats
from zlbench.plugins.replay import timing
from zlbench.plugins.replay.materialize import ReplayError, materialize, snapshot
from zlbench.plugins.replay.timing import (
    PerfCounterTimer,
    compare_outputs,
    side_outputs,
    time_paired,
)
from zlbench.protocol.pairs import PairRule


class Recorder:
    """Logs every restore, flush, timer start/stop and launch, in order; the timer
    answers ``ms(side, sample index)`` for the side whose launch it timed."""

    def __init__(self, monkeypatch, ms=lambda side, i: 1.0):
        self.log: list[str] = []
        self.ms = ms
        self.side = ""
        self.calls = {"pr": 0, "base": 0}  # timed calls per side
        real = timing.restore

        def logged_restore(snap):
            self.log.append("restore")
            real(snap)

        monkeypatch.setattr(timing, "restore", logged_restore)

    def launch(self, side):
        def run(args):
            self.side = side
            self.log.append(side)
            args[0].add_(1)  # in place: each repetition must see restored inputs

        return run

    def flush(self):
        self.log.append("flush")

    def start(self):
        self.log.append("start")

    def stop(self):
        self.log.append("stop")
        i = self.calls[self.side]
        self.calls[self.side] += 1
        return self.ms(self.side, i)


def rule(**sampling) -> PairRule:
    return PairRule().with_sampling(**sampling)


def run_recorded(rec: Recorder, r: PairRule, *, warmup=2, reps=3, target_ms=None):
    args = [torch.zeros(4)]
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    paired = time_paired(
        launch, args, rule=r, timer=rec, flush=rec.flush, warmup=warmup, reps=reps,
        target_ms=target_ms,
    )  # fmt: skip
    return args, paired.samples


def test_warmup_alternates_then_pairs_go_abba_with_restore_and_flush_before_each_timed_call(
    monkeypatch,
):
    rec = Recorder(monkeypatch)
    args, samples = run_recorded(rec, rule(min_pairs=5, max_pairs=8), warmup=2, reps=3)
    log = rec.log
    # warmup: each side twice, alternating, each on restored inputs, none timed or flushed
    assert log[:8] == ["restore", "pr", "restore", "base"] * 2
    timed = log[8:-1]
    assert log[-1] == "restore"  # the inputs are left restored
    # every timed call: restore, flush, start, the launch, stop
    calls = [timed[i : i + 5] for i in range(0, len(timed), 5)]
    assert all(c[:3] == ["restore", "flush", "start"] and c[4] == "stop" for c in calls)
    sides = [c[3] for c in calls]
    # each sample is reps=3 calls of one side; pair k: pr, base for even k, base, pr for odd
    per_sample = [sides[i : i + 3] for i in range(0, len(sides), 3)]
    assert all(len(set(s)) == 1 for s in per_sample)
    order = [s[0] for s in per_sample]
    assert order == [x["side"] for x in samples]
    expected = []
    for k in range(len(order) // 2):
        expected += ["pr", "base"] if k % 2 == 0 else ["base", "pr"]
    assert order == expected
    assert sides.count("pr") == sides.count("base")  # flushed and restored equally per side
    assert args[0].tolist() == [0.0] * 4
    for s in samples:
        PairSample.model_validate(s)  # the op path's sample model


def test_a_long_call_takes_fewer_calls_a_sample_by_the_slower_sides_probe(monkeypatch):
    """With target_ms, one timed call a side after the warmup (no sample) picks the
    calls per sample from the slower side: 2.4 ms against 5 ms -> 3 calls, for both
    sides and every sample; a short call keeps reps."""
    ms = {"pr": 1.0, "base": 2.4}
    rec = Recorder(monkeypatch, lambda side, i: ms[side])
    args = [torch.zeros(4)]
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    paired = time_paired(launch, args, rule=rule(min_pairs=5, max_pairs=5), timer=rec,
                         flush=rec.flush, warmup=1, reps=10, target_ms=5.0)  # fmt: skip
    assert paired.reps == 3
    assert len(paired.samples) == 10
    assert rec.calls == {"pr": 1 + 5 * 3, "base": 1 + 5 * 3}  # the probe, then 3 a sample
    log = rec.log
    assert log[:4] == ["restore", "pr", "restore", "base"]  # the warmup, untimed
    probe = ["restore", "flush", "start", "pr", "stop", "restore", "flush", "start", "base", "stop"]
    assert log[4:14] == probe
    rec = Recorder(monkeypatch, lambda side, i: 0.02)
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    paired = time_paired(launch, args, rule=rule(min_pairs=5, max_pairs=5), timer=rec,
                         flush=None, warmup=0, reps=10, target_ms=5.0)  # fmt: skip
    assert paired.reps == 10
    rec = Recorder(monkeypatch, lambda side, i: 50.0)
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    paired = time_paired(launch, args, rule=rule(min_pairs=5, max_pairs=5), timer=rec,
                         flush=None, warmup=0, reps=10)  # fmt: skip
    assert paired.reps == 10 and rec.calls["pr"] == 50  # no target: no probe, reps each


def test_settle_calls_precede_each_sample_untimed_and_restored_and_flushed(monkeypatch):
    """The first-sample probe: with settle 2 every sample starts with two untimed calls of
    its own side, each on restored inputs after a flush; without it none (the default)."""
    rec = Recorder(monkeypatch)
    args = [torch.zeros(4)]
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    samples = time_paired(launch, args, rule=rule(min_pairs=5, max_pairs=5), timer=rec,
                          flush=rec.flush, warmup=0, reps=3, settle=2).samples  # fmt: skip
    log = rec.log[:-1]  # the last restore leaves the inputs as given
    per_sample = 2 * 3 + 3 * 5  # two settle calls (restore, flush, launch), three timed
    assert len(log) == len(samples) * per_sample
    for i, s in enumerate(samples):
        chunk = log[i * per_sample : (i + 1) * per_sample]
        assert chunk[:6] == ["restore", "flush", s["side"]] * 2  # untimed: no start/stop
        assert chunk[6:] == ["restore", "flush", "start", s["side"], "stop"] * 3
    assert rec.calls == {"pr": 15, "base": 15}  # only the timed calls were timed
    assert args[0].tolist() == [0.0] * 4
    with pytest.raises(ReplayError, match="settle -1"):
        time_paired(launch, args, rule=rule(), timer=rec, flush=rec.flush, settle=-1)


def test_restored_once_a_sample_the_calls_of_a_sample_see_each_others_writes(monkeypatch):
    """The restore probe: each sample restores the inputs once, then its calls (settle
    and timed) run flushed but not restored; the last restore leaves them as given."""
    rec = Recorder(monkeypatch)
    args = [torch.zeros(4)]
    launch = {"pr": rec.launch("pr"), "base": rec.launch("base")}
    samples = time_paired(launch, args, rule=rule(min_pairs=5, max_pairs=5), timer=rec,
                          flush=rec.flush, warmup=0, reps=3, settle=1,
                          restore_each=False).samples  # fmt: skip
    log = rec.log[:-1]
    per_sample = 1 + 2 + 3 * 4  # a restore, a settle call (flush, launch), three timed
    assert len(log) == len(samples) * per_sample
    for i, s in enumerate(samples):
        chunk = log[i * per_sample : (i + 1) * per_sample]
        assert chunk == ["restore", "flush", s["side"]] + ["flush", "start", s["side"], "stop"] * 3
    assert args[0].tolist() == [0.0] * 4


def test_the_flush_is_zeroing_or_reading_and_nothing_else():
    from zlbench.plugins.replay.timing import FLUSH_BY, l2_flush

    assert FLUSH_BY[0] == "zero"  # the default
    assert l2_flush("cpu") is None and l2_flush("cpu", "read") is None  # no L2 to flush
    with pytest.raises(ReplayError, match="by 'write'"):
        l2_flush("cpu", "write")


@pytest.mark.parametrize(("min_pairs", "pairs"), [(5, 10), (7, 10), (11, 11)])
def test_equal_sides_stop_when_the_rule_decides(monkeypatch, min_pairs, pairs):
    # identical times: the pair rule decides PASS at its min_pairs, and once it has five
    # balanced blocks of two pairs (a 90 % interval over blocks: protocol.pairs)
    rec = Recorder(monkeypatch)
    _, samples = run_recorded(rec, rule(min_pairs=min_pairs, max_pairs=12))
    assert len(samples) == 2 * pairs


def test_an_undecided_row_stops_at_the_rules_budget(monkeypatch):
    # the PR is 9 % slower or faster by turns of two pairs (a balanced block each): the
    # interval straddles the threshold
    def ms(side, i):
        if side == "base":
            return 1.1
        return 1.2 if (i // 6) % 2 else 1.0

    rec = Recorder(monkeypatch, ms)
    _, samples = run_recorded(rec, rule(min_pairs=5, max_pairs=9))
    assert len(samples) == 18


def test_a_first_sample_slower_whichever_side_is_cancelled_and_the_row_decides(monkeypatch):
    """The H100's position effect (protocol.pairs): the first sample of every pair 8 %
    slower, whichever side. Per pair the change swings +-8 % and would never decide; the
    balanced blocks read 0 and the row PASSes at 10 pairs."""

    def ms(side, i):  # pair k = the side's sample i // 3; the PR goes first in even k
        first = (i // 3) % 2 == (0 if side == "pr" else 1)
        return 1.08 if first else 1.0

    rec = Recorder(monkeypatch, ms)
    _, samples = run_recorded(rec, rule(min_pairs=5, max_pairs=16))
    assert len(samples) == 20
    firsts = [samples[i]["ms"] for i in range(0, 20, 2)]
    assert firsts == [1.08] * 10  # the effect was there, in every pair


def test_each_sample_is_the_median_of_its_reps(monkeypatch):
    ms = {"pr": [5.0, 1.0, 3.0], "base": [2.0, 9.0, 4.0]}
    rec = Recorder(monkeypatch, lambda side, i: ms[side][i % 3] if i < 3 else 1.0)
    _, samples = run_recorded(rec, rule(min_pairs=5, max_pairs=5))
    assert samples[0] == {"side": "pr", "ms": 3.0}
    assert samples[1] == {"side": "base", "ms": 4.0}


def test_a_clock_goes_with_each_sample(monkeypatch):
    rec = Recorder(monkeypatch)
    args = [torch.zeros(2)]
    samples = time_paired(
        {"pr": rec.launch("pr"), "base": rec.launch("base")},
        args,
        rule=rule(min_pairs=5, max_pairs=5),
        timer=rec,
        flush=None,
        reps=1,
        clock=lambda: (1980, 4),
    ).samples
    assert all(s["mhz"] == 1980 and s["reasons"] == 4 for s in samples)
    assert "flush" not in rec.log  # no flush for either side


def test_a_launch_that_raises_or_a_device_error_is_one_replay_error(monkeypatch):
    def boom(args):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")

    rec = Recorder(monkeypatch)
    with pytest.raises(ReplayError, match=r"^base launch failed: RuntimeError: CUDA error") as e:
        time_paired(
            {"pr": rec.launch("pr"), "base": boom},
            [torch.zeros(2)],
            rule=rule(),
            timer=rec,
            flush=None,
        )
    assert "\n" not in str(e.value)

    class FaultyTimer(Recorder):
        def stop(self):
            raise RuntimeError("CUDA error: unspecified launch failure")

    rec = FaultyTimer(monkeypatch)
    with pytest.raises(ReplayError, match="pr launch failed: RuntimeError: CUDA error"):
        time_paired(
            {"pr": rec.launch("pr"), "base": rec.launch("base")},
            [torch.zeros(2)],
            rule=rule(),
            timer=rec,
            flush=None,
        )
    with pytest.raises(ReplayError, match="both sides"):
        time_paired({"pr": rec.launch("pr")}, [], rule=rule(), timer=rec, flush=None)


def test_compare_outputs_catches_a_difference_and_accepts_bf16_rounding():
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0))
    idx = torch.arange(8)
    base = [x.to(torch.bfloat16), idx, 3]
    pr = [(x * (1 + 2e-3)).to(torch.bfloat16), idx.clone(), 3]
    ok, err = compare_outputs(pr, base, rtol=1e-5, atol=1e-5)
    assert ok and 0 < err < 0.05  # bf16: a rounding step apart, within the widened rtol
    # the same relative noise in float32 is a difference at that rtol
    ok, err = compare_outputs([x * (1 + 2e-3)], [x], rtol=1e-5, atol=1e-5)
    assert not ok and err > 1e-4
    # a real difference in bf16
    ok, _ = compare_outputs([(x + 1).to(torch.bfloat16)], [base[0]], rtol=1e-5, atol=1e-5)
    assert not ok
    # integers exactly
    ok, err = compare_outputs([idx + (idx == 3)], [idx], rtol=1, atol=1)
    assert not ok and err > 0
    assert compare_outputs([idx], [idx.clone()], rtol=0, atol=0) == (True, 0.0)


def test_compare_outputs_nan_inf_shape_and_dtype():
    a = torch.tensor([float("nan"), float("inf"), 1.0])
    assert compare_outputs([a], [a.clone()]) == (True, 0.0)
    ok, err = compare_outputs([torch.tensor([float("nan"), float("inf"), 1.0])], [a.nan_to_num()])
    assert not ok and math.isinf(err)
    assert compare_outputs([a], [a[:2]]) == (False, math.inf)
    assert compare_outputs([a], [a.double()]) == (False, math.inf)
    assert compare_outputs([a], [1.0]) == (False, math.inf)


def test_side_outputs_runs_each_side_once_on_restored_inputs():
    args = [torch.ones(3), 2.0]
    seen = []

    def pr(a):
        seen.append(a[0].tolist())
        a[0].mul_(a[1])

    def base(a):
        seen.append(a[0].tolist())
        a[0].add_(a[1])

    out = side_outputs({"pr": pr, "base": base}, args)
    assert seen == [[1.0] * 3, [1.0] * 3]
    assert out["pr"][0].tolist() == [2.0] * 3 and out["base"][0].tolist() == [3.0] * 3
    assert args[0].tolist() == [1.0] * 3
    assert compare_outputs(out["pr"], out["base"])[0] is False


# -- a real Triton kernel, replayed under the interpreter (CPU) -------------------------


def test_an_interpreted_kernel_replays_as_both_sides_and_outputs_compare(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl

    @triton.jit
    def add_pr(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(
            x_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m
        )

    @triton.jit
    def add_base(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(x_ptr + offs, x + y, mask=m)

    @triton.jit
    def add_twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(x_ptr + offs, x + 2 * y, mask=m)

    n, block = 100, 32  # the mask matters: 4 programs, the last one partial
    stats = TensorStats(min=-2.0, max=2.0, mean=0.0, std=1.0)
    spec = LaunchSpec(
        kernel_id="k",
        kernel="add_",
        grid=[triton.cdiv(n, block), 1, 1],
        args=[
            *(
                ArgSpec(
                    name=name,
                    kind="tensor",
                    dtype="float32",
                    shape=[n],
                    strides=[1],
                    storage=n,
                    buffer=i,
                    stats=stats,
                )
                for i, name in enumerate(("x_ptr", "y_ptr"))
            ),
            ArgSpec(name="n", kind="int", value=n),
            ArgSpec(name="BLOCK", kind="int", value=block),
        ],
    )
    args = materialize(spec, "cpu", seed=11)
    before = args[0].clone()
    snap = snapshot(args)
    grid = tuple(spec.grid)

    def side(kernel):
        return lambda a: kernel[grid](*a)

    r = rule(min_pairs=1, max_pairs=2)
    same = {"pr": side(add_pr), "base": side(add_base)}
    samples = time_paired(
        same, args, rule=r, timer=PerfCounterTimer(), flush=None, warmup=1, reps=2, snap=snap
    ).samples
    assert [s["side"] for s in samples][:2] == ["pr", "base"]
    assert all(s["ms"] > 0 for s in samples)
    assert torch.equal(args[0], before)  # the in-place kernel's input restored
    out = side_outputs(same, args, snap)
    assert torch.allclose(out["pr"][0], before + args[1])
    assert compare_outputs(out["pr"], out["base"]) == (True, 0.0)

    differ = {"pr": side(add_pr), "base": side(add_twice)}
    time_paired(
        differ, args, rule=r, timer=PerfCounterTimer(), flush=None, warmup=1, reps=1, snap=snap
    )
    out = side_outputs(differ, args, snap)
    ok, err = compare_outputs(out["pr"], out["base"])
    assert not ok and err > 0


def test_an_interpreted_kernel_on_tensor_descriptors_replays_and_its_tma_store_compares(
    monkeypatch,
):
    """A Hopper matmul's TMA arguments (``a_desc``, ``c_desc``) rebuilt as triton's host
    descriptors: the kernel runs on them, the inputs restored between calls, and what a
    side stores through ``c_desc`` (into its base) is the output compared."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl

    @triton.jit
    def double(a_desc, c_desc, B: tl.constexpr):
        pid = tl.program_id(0)
        c_desc.store([pid * B, 0], a_desc.load([pid * B, 0]) * 2)

    @triton.jit
    def double_sum(a_desc, c_desc, B: tl.constexpr):
        pid = tl.program_id(0)
        x = a_desc.load([pid * B, 0])
        c_desc.store([pid * B, 0], x + x)

    @triton.jit
    def triple(a_desc, c_desc, B: tl.constexpr):
        pid = tl.program_id(0)
        c_desc.store([pid * B, 0], a_desc.load([pid * B, 0]) * 3)

    def tma(name, buffer, stats):
        return ArgSpec(
            name=name, kind="tensordesc", dtype="float32", shape=[64, 16], strides=[16, 1],
            storage=64 * 16, buffer=buffer, stats=stats, desc_shape=[64, 16],
            desc_strides=[16, 1], block_shape=[16, 16], padding="zero",
        )  # fmt: skip

    spec = LaunchSpec(
        kernel_id="k",
        kernel="double",
        grid=[4, 1, 1],
        args=[
            tma("a_desc", 0, TensorStats(min=-2.0, max=2.0, mean=0.0, std=1.0)),
            tma("c_desc", 1, TensorStats(min=0.0, max=0.0, mean=0.0)),
            ArgSpec(name="B", kind="int", value=16),
        ],
    )
    args = materialize(spec, "cpu", seed=5)
    a, c = args[0].base, args[1].base
    assert a.abs().sum() > 0 and not c.any()
    snap = snapshot(args)

    def side(kernel):
        return lambda x: kernel[tuple(spec.grid)](*x)

    same = {"pr": side(double), "base": side(double_sum)}
    out = side_outputs(same, args, snap)
    assert torch.equal(out["pr"][1], 2 * a) and not c.any()  # stored, then restored
    assert compare_outputs(out["pr"], out["base"]) == (True, 0.0)
    out = side_outputs({"pr": side(double), "base": side(triple)}, args, snap)
    ok, err = compare_outputs(out["pr"], out["base"])
    assert not ok and err > 0
