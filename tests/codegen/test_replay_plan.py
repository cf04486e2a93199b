"""The kernel-replay tier's plan (zlbench.codegen.replay_plan, issue 51): which changed
rows are replayed, in what order (the ordering rule), within the budget, which fall
back to the op path and why, which are deferred with the command that times them, and
one sentinel op per family. Hand-built screens and captures."""

from __future__ import annotations

import pytest

from zlbench.codegen.replay_plan import (
    BUILD_CPU_S,
    BUILD_EXTRA_S,
    BUILD_START_S,
    BUILD_WORKER_S,
    CALL_OVERHEAD_US,
    HIT_CPU_S,
    HITS_PER_WORKER,
    KERNEL_SCALE,
    PAIRS,
    ROW_SETUP_S,
    WARM_FIRST_ROW_S,
    WORKER_START_S,
    deferred_command,
    forecast,
    kernel_scale,
    op_path_ops,
    plan_replay,
    replay_cost_s,
    replay_costs,
    row_score,
    worker_start_s,
)
from zlbench.codegen.select import DEFAULT_OP_COST_S
from zlbench.models import BaselineResult, BaselineRow, RowKey
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen
from zlbench.models.replay import ArgSpec, LaunchCapture, LaunchSpec, RowLaunches, TensorStats
from zlbench.models.timing import PairSampling
from zlbench.protocol.pairs import AB_SIDE_FACTOR
from zlbench.report.replay_text import (
    FALLBACK_ADDRESSES,
    FALLBACK_GRAPH,
    FALLBACK_INTERMEDIATE,
    FALLBACK_LAUNCHED_NOTHING,
    FALLBACK_NO_CAPTURE,
    FALLBACK_NO_RECORDS,
    FALLBACK_NO_ROW,
    FALLBACK_NOT_CAPTURED,
    FALLBACK_NOT_NAMED,
    FALLBACK_OCCURRENCES,
    FALLBACK_OVER_BUDGET,
    FALLBACK_SIDE_STREAM,
    FALLBACK_TRUNCATED,
    FALLBACK_UNSUPPORTED,
)

T, C, S = CodegenClass.IDENTICAL, CodegenClass.TTGIR, CodegenClass.SASS
SH = "[torch.Size([64])]"


def row(op: str, shape: str = SH, occurrence: int = 0) -> RowKey:
    return RowKey(
        repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape, occurrence=occurrence
    )


def kernel(kid: str, status=C, rows=(), lines=None, **deltas) -> KernelScreen:
    return KernelScreen(
        kernel_id=kid,
        name=f"{kid}_kernel",
        status=status,
        ops=sorted({f"main/{r.run_name}" for r in rows}),
        rows=list(rows),
        deltas={k: float(v) for k, v in deltas.items()},
        changed_lines=lines,
        error="ptxas fatal" if status is CodegenClass.FAILED else None,
    )


def screen(*kernels: KernelScreen, **kw) -> CodegenScreen:
    return CodegenScreen(baseline_dir="b", kernels=list(kernels), **kw)


def tensor(buffer: int = 0, name: str = "x", **kw) -> ArgSpec:
    spec = dict(name=name, kind="tensor", dtype="bfloat16", shape=[64], strides=[1])
    spec |= dict(storage=64, buffer=buffer, stats=TensorStats(min=-1.0, max=1.0, mean=0.0))
    return ArgSpec(**(spec | kw))


def launch(kid: str, *args: ArgSpec, why_not: str = "") -> LaunchSpec:
    args = args or (tensor(0), tensor(1, "y"))
    return LaunchSpec(kernel_id=kid, kernel=f"{kid}_kernel", grid=[1, 1, 1], args=list(args),
                      why_not=why_not)  # fmt: skip


def captured(key: RowKey, *launches: LaunchSpec, truncated: bool = False) -> RowLaunches:
    return RowLaunches(
        **key.model_dump(include={"run_name", "op", "dtype", "shape", "occurrence"}),
        launches=list(launches),
        truncated=truncated,
    )


def capture(*rows: RowLaunches) -> LaunchCapture:
    return LaunchCapture(rows=list(rows))


def one_row(launches, status=C, truncated=False, order=None, **deltas):
    """A plan of op ``a``'s one row launching kernel ``ka`` (changed) as ``launches``
    (``order``: the capture's run order of them)."""
    r = row("a")
    s = screen(kernel("ka", status, [r], **(deltas or {"sass_instructions": 4})))
    rl = captured(r, *launches, truncated=truncated).model_copy(update={"order": order})
    caps = {"main/a": capture(rl)}
    return r, plan_replay(s, [r], caps)


# --------------------------------------------------------------------------- ordering


def test_rows_are_taken_by_how_much_their_code_changed_largest_first():
    a, b, c, d = row("a"), row("b"), row("c"), row("d")
    s = screen(
        kernel("ka", S, [a], sass_instructions=-50),  # 50
        kernel("kb", C, [b], n_regs=8, lines=12),  # 80 + 12
        kernel("kc", C, [c], n_spills=1, n_regs=-2),  # 1000 + 20
        kernel("kd", C, [d]),  # no figure: 1
    )
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, c, d)}
    plan = plan_replay(s, [a, b, c, d], caps)
    assert [(p.key.op, p.score) for p in plan.replay] == [
        ("c", 1020.0),
        ("b", 92.0),
        ("a", 50.0),
        ("d", 1.0),
    ]
    assert plan.changed_rows == 4 and not plan.fallback and not plan.deferred


def test_equal_scores_are_ordered_by_row_label_whatever_the_input_order():
    rows = [row("z"), row("m"), row("b")]
    s = screen(*(kernel(f"k{r.op}", C, [r], sass_instructions=7) for r in rows))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in rows}
    for order in (rows, rows[::-1]):
        assert [p.key.op for p in plan_replay(s, order, caps).replay] == ["b", "m", "z"]


def test_the_score_sums_the_changed_kernels_of_the_row_only():
    r = row("a")
    ks = [
        kernel("k1", C, [r], sass_instructions=10, lines=5),
        kernel("k2", S, [r], n_regs=-3),
        kernel("k3", T, [r], sass_instructions=99),  # identical: does not score
    ]
    assert row_score(ks) == 15 + 30


def test_a_replayed_row_lists_its_changed_kernels_first_then_the_others_it_launched():
    r = row("a")
    s = screen(
        kernel("k1", T, [r]),
        kernel("k2", C, [r], sass_instructions=3),
        kernel("k3", C, [r], n_regs=8),
    )
    rl = captured(r, launch("k1", tensor(0)), launch("k2", tensor(1)), launch("k3", tensor(2)))
    plan = plan_replay(s, [r], {"main/a": capture(rl)})
    assert plan.replay[0].kernels == ("k3", "k2", "k1")
    assert plan.replay[0].launches == rl


# --------------------------------------------------------------------------- not replayed


def test_unchanged_rows_are_never_replayed():
    a, b = row("a"), row("b")
    s = screen(kernel("ka", T, [a]), kernel("kb", C, [b], sass_instructions=2))
    caps = {
        "main/a": capture(captured(a, launch("ka"))),
        "main/b": capture(captured(b, launch("kb"))),
    }
    plan = plan_replay(s, [a, b], caps)
    assert [p.key for p in plan.replay] == [b]
    assert a not in plan.fallback and plan.changed_rows == 1


def test_every_row_replays_the_unchanged_rows_too_after_the_changed_ones():
    a, b, c, d = row("a"), row("b"), row("c"), row("d")
    s = screen(
        kernel("ka", T, [a]),
        kernel("kb", C, [b], sass_instructions=2),
        kernel("kc", T, [c]),
        kernel("kd", C, [d], sass_instructions=1),
    )
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, d)}
    # c: unchanged and no capture: stays proven identical, no fallback
    fams = dict.fromkeys(["main/a", "main/b", "main/c", "main/d"], "F")
    op_costs = {"main/a": 0.1, "main/b": 5.0, "main/d": 9.0}
    plan = plan_replay(s, [a, b, c, d], caps, op_costs=op_costs, families=fams, every_row=True)
    assert [(p.key, p.changed) for p in plan.replay] == [(b, True), (d, True), (a, False)]
    assert plan.fallback == {} and plan.changed_rows == 2
    assert plan.sentinels == {"F": "main/b"}  # a changed op, never the cheaper unchanged a


def test_every_row_an_a_a_picks_no_sentinel_and_the_budget_drops_unchanged_rows_unlisted():
    a, b = row("a"), row("b")
    s = screen(kernel("ka", T, [a]), kernel("kb", T, [b]))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b)}
    plan = plan_replay(s, [a, b], caps, {a: 2.0, b: 2.0}, budget_s=3.0, every_row=True)
    assert [p.key for p in plan.replay] == [a] and plan.sentinels == {}
    assert plan.deferred == [] and plan.fallback == {} and plan.changed_rows == 0


def test_a_row_whose_kernel_does_not_compile_is_the_op_paths_failure_never_replayed():
    r, plan = one_row([launch("ka")], status=CodegenClass.FAILED)
    assert plan.replay == [] and plan.fallback == {}
    assert plan.failed == {r: "kernel `ka_kernel` does not compile: ptxas fatal"}
    assert plan.changed_rows == 0


def test_no_capture_for_the_op_falls_back():
    r = row("a")
    plan = plan_replay(screen(kernel("ka", C, [r])), [r], {"main/a": None})
    assert plan.fallback == {r: FALLBACK_NO_CAPTURE} == {r: "no capture for this op"}
    assert plan_replay(screen(kernel("ka", C, [r])), [r], {}).fallback == {r: FALLBACK_NO_CAPTURE}


def test_a_row_the_capture_does_not_hold_falls_back():
    r = row("a")
    other = captured(row("a", "[torch.Size([8])]"), launch("ka"))
    plan = plan_replay(screen(kernel("ka", C, [r])), [r], {"main/a": capture(other)})
    assert plan.fallback == {r: FALLBACK_NO_ROW}


def test_a_changed_kernel_the_replay_mode_run_did_not_time_is_no_reason_to_fall_back():
    """v7's record pass timed a fill kernel in upsample_nearest3d's autotune sweep; the
    capture's replay-mode run launched it outside the timed region only."""
    r = row("a")
    s = screen(kernel("ka", C, [r]), kernel("kf", C, [r]))  # both changed, kf not launched
    row_caps = captured(r, launch("ka"))
    cases = {
        None: FALLBACK_NOT_CAPTURED,  # not known: kf counts
        ("ka",): "",  # kf not timed where the gate measures: ka replays the row
        ("ka", "kf"): FALLBACK_NOT_CAPTURED,  # timed in some call, not the last: counts
        ("kf",): FALLBACK_NOT_CAPTURED,  # a launch outside what was timed: does not add up
    }
    for ran, expect in cases.items():
        got = row_caps.model_copy(update={"replay_timed": None if ran is None else list(ran)})
        plan = plan_replay(s, [r], {"main/a": capture(got)})
        if expect:
            assert expect in plan.fallback[r], ran
        else:
            assert not plan.fallback and [p.key for p in plan.replay] == [r], ran


def nothing(key: RowKey, **kw) -> RowLaunches:
    """``key``'s capture row with no launch."""
    return captured(key).model_copy(update=kw)


GPU = "NVIDIA H100 80GB HBM3"


def whole(*rows: RowLaunches, **kw) -> LaunchCapture:
    """A capture that can prove a row launched nothing: it lists every row it saw
    timed, saw no unnamed timed call and hooked every launch, on GPU."""
    return LaunchCapture(rows=list(rows), lists_every_row=True, every_launch_hooked=True,
                         gpu_model=GPU, **kw)  # fmt: skip


def proving(*args, **kw):
    """plan_replay on a runner of GPU (a capture taken there can prove a row)."""
    return plan_replay(*args, proof_gpu=GPU, **kw)


def test_a_row_whose_capture_proves_it_times_no_kernel_is_neither_timed_nor_changed():
    r = row("a")
    plan = proving(screen(kernel("ka", C, [r])), [r], {"main/a": whole(nothing(r))})
    assert plan.no_launch == [r] and plan.no_launch_ops() == {"main/a"}
    assert not plan.replay and not plan.fallback and not plan.deferred
    assert plan.changed_rows == 0  # no compiler changes a timed region without a kernel
    assert op_path_ops(plan, {"main/a"}) == set()  # nor is its op timed through FlagGems


def test_a_capture_proves_no_launch_only_on_the_gpu_model_it_ran_on():
    r = row("a")
    s = screen(kernel("ka", C, [r]))
    assert proving(s, [r], {"main/a": whole(nothing(r))}).no_launch == [r]
    other = whole(nothing(r)).model_copy(update={"gpu_model": "NVIDIA B200"})
    plan = proving(s, [r], {"main/a": other})
    assert not plan.no_launch and plan.changed_rows == 1
    assert plan.fallback[r] == (
        f"{FALLBACK_LAUNCHED_NOTHING} on NVIDIA B200, not on this runner's GPU"
    )
    unnamed = whole(nothing(r)).model_copy(update={"gpu_model": ""})
    assert "on a GPU it does not name" in proving(s, [r], {"main/a": unnamed}).fallback[r]
    # a runner whose GPU is not known (or that asks for FlagGems' C extension): no proof
    assert not plan_replay(s, [r], {"main/a": whole(nothing(r))}).no_launch


def test_a_changed_kernel_another_occurrence_launched_is_that_occurrences():
    """v7's div_scalar_mode: its rounding modes are occurrences of one dtype and shape,
    each launching its own kernel; the records (and replay_timed, from them) name every
    mode's kernel for each row. A capture taken on this runner's GPU that holds every
    launch of each occurrence shows whose each kernel is."""
    r0, r1 = row("a"), row("a", occurrence=1)
    mid = row("a", shape="[torch.Size([128])]")  # measured between them
    rows = [r0, mid, r1]
    s = screen(kernel("kt", C, [r0, r1]), kernel("kf", C, [r0, r1]), kernel("kb", T, [mid]))
    both = whole(
        captured(r0, launch("kt")), captured(mid, launch("kb")), captured(r1, launch("kf"))
    )
    lumped = both.model_copy(deep=True)
    for r in lumped.rows:
        r.replay_timed = ["kt", "kf"]  # the run's index, by dtype and shape
    for cap in (both, lumped):
        plan = proving(s, rows, {"main/a": cap})
        assert not plan.fallback and {p.key for p in plan.replay} == {r0, r1}
        assert {p.key: p.kernels for p in plan.replay} == {r0: ("kt",), r1: ("kf",)}
    # a changed kernel no occurrence launched still counts (timed in some call, not the
    # last, or not known)
    s3 = screen(kernel("kt", C, [r0, r1]), kernel("kf", C, [r0, r1]), kernel("kx", C, [r0]),
                kernel("kb", T, [mid]))  # fmt: skip
    assert FALLBACK_NOT_CAPTURED in proving(s3, rows, {"main/a": both}).fallback[r0]
    cases = [
        (plan_replay, both),  # the runner's GPU not known
        (proving, both.model_copy(update={"gpu_model": "NVIDIA B200"})),  # another GPU
        (proving, whole(captured(r0, launch("kt")), captured(mid, launch("kb")),
                        captured(r1, launch("kf")), unnamed_calls=1)),  # a launch of no row
    ]  # fmt: skip
    for plan_with, cap in cases:
        fell = plan_with(s, rows, {"main/a": cap}).fallback
        assert FALLBACK_NOT_CAPTURED in fell[r1], cap
    # a capture without r1's occurrence: which row is r1's is not known
    cap = whole(captured(r0, launch("kt")), captured(mid, launch("kb")))
    assert proving(s, rows, {"main/a": cap}).fallback[r1] == FALLBACK_OCCURRENCES


def test_a_row_is_matched_to_its_own_capture_row_in_a_run_of_several_benchmark_ops():
    """v7's to_copy: conversions from several dtypes are benchmark ops of one run whose
    rows share a dtype and shape, each the first occurrence of its own op; the capture
    numbers the run's rows by dtype and shape as they came. Each row replays its own
    conversion's launch, not the first one's (the baseline's occurrence would match
    every one to the capture's first)."""
    f32 = RowKey(repo="main", run_name="a", op="a_from_f32", dtype="bfloat16", shape=SH)
    mid = row("a", shape="[torch.Size([128])]")
    i8 = f32.model_copy(update={"op": "a_from_i8"})
    s = screen(kernel("kf32", C, [f32, i8]), kernel("ki8", C, [f32, i8]), kernel("kb", T, [mid]))
    second = captured(f32, launch("ki8")).model_copy(update={"occurrence": 1})
    cap = whole(captured(f32, launch("kf32")), captured(mid, launch("kb")), second)
    plan = proving(s, [f32, mid, i8], {"main/a": cap})
    assert not plan.fallback
    assert {p.key: p.kernels for p in plan.replay} == {f32: ("kf32",), i8: ("ki8",)}
    # measured one after the other, the capture would hold one row of them (its rows
    # continue while the dtype and shape stay): numbered otherwise, neither is matched
    fell = proving(s, [f32, i8], {"main/a": cap}).fallback
    assert fell == {f32: FALLBACK_OCCURRENCES, i8: FALLBACK_OCCURRENCES}


def test_a_capture_that_cannot_prove_no_launch_leaves_the_row_changed_on_the_op_path():
    r = row("a")
    cases = [
        whole(nothing(r)).model_copy(update={"lists_every_row": False}),  # an older capture
        whole(nothing(r), unnamed_calls=1),  # a timed call before the row was named
        whole(nothing(r)).model_copy(update={"every_launch_hooked": False}),  # C extension
        whole(nothing(r, truncated=True)),
        whole(nothing(r, why_not="capture failed: RuntimeError: x")),
    ]
    for cap in cases:
        plan = proving(screen(kernel("ka", C, [r])), [r], {"main/a": cap})
        assert not plan.no_launch and plan.changed_rows == 1, cap
        assert op_path_ops(plan, {"main/a"}) == {"main/a"}, cap
        assert plan.fallback[r] == FALLBACK_NO_ROW, cap  # a row without launches


def test_no_launch_is_the_rows_own_occurrences_when_the_capture_numbers_them_alike():
    """v7's einsum: equations of one dtype and shape, one served by Triton kernels, the
    others not. The row whose own occurrence launched nothing is proven; its sibling
    is replayed. A capture that numbers the rows otherwise proves nothing."""
    r, mid, r1 = row("a"), row("a", shape="[torch.Size([128])]"), row("a", occurrence=1)
    s = screen(kernel("ka", C, [r, r1]), kernel("kb", T, [mid]))  # mid: unchanged
    cap = whole(nothing(r), captured(mid, launch("kb")), captured(r1, launch("ka")))
    plan = proving(s, [r, mid, r1], {"main/a": cap})
    assert plan.no_launch == [r] and [p.key for p in plan.replay] == [r1]
    assert not plan.fallback
    # the two measured one after the other: the capture would hold one row of them
    plan = proving(s, [r, r1], {"main/a": cap})
    assert not plan.no_launch and plan.fallback[r] == FALLBACK_OCCURRENCES


def test_a_row_that_times_no_kernel_still_fails_when_its_kernel_does_not_compile():
    r = row("a")
    plan = proving(screen(kernel("ka", CodegenClass.FAILED, [r])), [r],
                       {"main/a": whole(nothing(r))})  # fmt: skip
    assert r in plan.failed and not plan.no_launch


def test_an_op_of_proven_and_replayed_rows_leaves_the_op_path_one_with_a_fallback_stays():
    a, b = row("a"), row("a", shape="[torch.Size([128])]")
    s = screen(kernel("ka", C, [a, b]))
    cap = whole(nothing(a), captured(b, launch("ka")))
    plan = proving(s, [a, b], {"main/a": cap}, op_costs={"main/a": 10.0})
    assert plan.no_launch == [a] and [p.key for p in plan.replay] == [b]
    assert plan.changed_rows == 1 and op_path_ops(plan, {"main/a"}) == set()
    cap = whole(nothing(a), captured(b, launch("ka", why_not="graph")))
    plan = proving(s, [a, b], {"main/a": cap}, op_costs={"main/a": 10.0})
    assert plan.no_launch == [a] and plan.fallback == {b: FALLBACK_GRAPH}
    assert op_path_ops(plan, {"main/a"}) == {"main/a"}
    assert plan.op_seconds("main/a", {"main/a": 10.0}) < 10.0  # its fallback row's share


def test_an_unchanged_row_that_times_no_kernel_is_not_listed_even_with_every_row():
    r = row("a")
    plan = proving(screen(kernel("ka", T, [r])), [r], {"main/a": whole(nothing(r))},
                       every_row=True)  # fmt: skip
    assert not plan.no_launch and not plan.replay and not plan.fallback


def test_the_capture_of_another_occurrence_stands_in_for_a_row():
    r = row("a", occurrence=1)
    rl = captured(row("a"), launch("ka"))
    plan = plan_replay(screen(kernel("ka", C, [row("a")])), [r], {"main/a": capture(rl)})
    assert [p.key for p in plan.replay] == [r]


def test_a_launch_captured_in_a_cuda_graph_falls_back():
    r, plan = one_row([launch("ka", why_not="graph")])
    assert plan.fallback == {r: FALLBACK_GRAPH} == {r: "launch captured in a CUDA graph"}


def test_a_launch_on_a_side_stream_falls_back():
    r, plan = one_row([launch("ka"), launch("ka", tensor(2), why_not="side stream")])
    assert plan.fallback == {r: FALLBACK_SIDE_STREAM} == {r: "side stream"}


def test_an_unsupported_argument_falls_back_with_its_name():
    r, plan = one_row([launch("ka", tensor(0), ArgSpec(name="fn", kind="other", value="<f>"))])
    assert plan.fallback == {r: "unsupported argument fn (other)"}
    r, plan = one_row([launch("ka", why_not="unsupported argument cb")])
    assert plan.fallback == {r: "unsupported argument cb"}


def test_a_tensor_descriptor_replays_unless_its_ranks_differ():
    """FlagGems' Hopper matmuls pass their TMA arguments as host tensor descriptors."""
    own = dict(kind="tensordesc", desc_shape=[64], desc_strides=[1], block_shape=[16])
    r, plan = one_row([launch("ka", tensor(0, "a_desc", **own), tensor(1, "c"))])
    assert [p.key for p in plan.replay] == [r] and not plan.fallback
    bad = own | dict(block_shape=[16, 16])
    r, plan = one_row([launch("ka", tensor(0, "a_desc", **bad), tensor(1, "c"))])
    assert plan.fallback == {
        r: "unsupported argument a_desc (tensor descriptor of ranks that differ)"
    }


def test_a_tensor_without_values_falls_back_an_empty_one_does_not():
    r, plan = one_row([launch("ka", tensor(0, stats=None))])
    assert plan.fallback == {r: "unsupported argument x (tensor without values)"}
    r, plan = one_row([launch("ka", tensor(0, stats=None, shape=[0], strides=[1]))])
    assert [p.key for p in plan.replay] == [r]


def test_a_tensor_without_values_replays_when_an_earlier_launch_values_its_buffer():
    """A capture reads values of a row's first 64 distinct launches only; past them a
    tensor on a buffer an earlier launch valued has none (ormqr's reflectors)."""
    r, plan = one_row([launch("ka", tensor(0)), launch("ka", tensor(0, stats=None))])
    assert [p.key for p in plan.replay] == [r] and not plan.fallback
    r, plan = one_row([launch("ka", tensor(1)), launch("ka", tensor(0, stats=None))])
    assert plan.fallback == {r: "unsupported argument x (tensor without values)"}
    empty = tensor(0, stats=None, shape=[0], strides=[1])  # values nothing: fills nothing
    r, plan = one_row([launch("ka", empty), launch("ka", tensor(0, stats=None))])
    assert plan.fallback == {r: "unsupported argument x (tensor without values)"}


def test_a_table_of_device_addresses_falls_back_an_index_tensor_does_not():
    """block_diag passes its inputs' data_ptr()s in an int64 tensor: replayed in another
    process they point nowhere, and the kernel faulted on an H100 (2026-12-07)."""
    ptrs = [0x7F4D99E0BE00, 0x7F4D99E3BE00, 0x7F4D99E6BE00, 0x7F4D99E83E00]
    table = dict(dtype="int64", shape=[4], storage=4, stats=None, data=ptrs, digest="d")
    r, plan = one_row([launch("ka", tensor(0, "ptrs_ptr", **table), tensor(1, "out"))])
    assert (
        plan.fallback
        == {r: "unsupported argument ptrs_ptr (a table of device addresses)"}
        == {r: f"{FALLBACK_UNSUPPORTED} ptrs_ptr ({FALLBACK_ADDRESSES})"}
    )
    big = dict(dtype="int64", stats=TensorStats(min=ptrs[0], max=ptrs[-1], mean=ptrs[1]))
    r, plan = one_row([launch("ka", tensor(0, "ptrs_ptr", **big), tensor(1, "out"))])
    assert list(plan.fallback.values()) == [
        f"{FALLBACK_UNSUPPORTED} ptrs_ptr ({FALLBACK_ADDRESSES})"
    ]
    index = table | dict(data=[0, 3, 1, 2])  # an index tensor: replayed
    r, plan = one_row([launch("ka", tensor(0, "idx", **index), tensor(1, "out"))])
    assert [p.key for p in plan.replay] == [r] and not plan.fallback


def test_a_buffer_passed_between_launches_that_run_once_replays_in_capture_order():
    first = launch("ka", tensor(0), tensor(1, "out"))
    second = launch("ka", tensor(1, "inp"), tensor(2, "out2"))  # reads the first's output
    r, plan = one_row([first, second])
    assert [p.key for p in plan.replay] == [r] and plan.fallback == {}


def test_a_buffer_passed_to_or_from_a_launch_that_runs_twice_is_an_intermediate_buffer():
    first = launch("ka", tensor(0), tensor(1, "out")).model_copy(update={"count": 2})
    second = launch("ka", tensor(1, "inp"), tensor(2, "out2"))
    r, plan = one_row([first, second])
    assert (
        plan.fallback
        == {r: FALLBACK_INTERMEDIATE}
        == {r: "intermediate buffer between launches that run more than once"}
    )
    apart = launch("ka", tensor(3), tensor(4, "o")).model_copy(update={"count": 2})
    r, plan = one_row([apart, second])  # runs twice, but shares no buffer: replays
    assert [p.key for p in plan.replay] == [r]
    # with the capture's run order (first, second, first) it replays in that order
    r, plan = one_row([first, second], order=[0, 1, 0])
    assert [p.key for p in plan.replay] == [r] and plan.fallback == {}
    assert plan.replay[0].launches.order == [0, 1, 0]
    # an order that is not the launches' runs is none: first ran twice, not once
    for bad in ([0, 1], [0, 1, 0, 0], [0, 1, 2]):
        r, plan = one_row([first, second], order=bad)
        assert plan.fallback == {r: FALLBACK_INTERMEDIATE}, bad


def test_a_buffer_shared_within_one_launch_is_in_place_and_replays():
    r, plan = one_row([launch("ka", tensor(0, "x"), tensor(0, "out"))])
    assert [p.key for p in plan.replay] == [r] and plan.fallback == {}


def test_a_truncated_capture_falls_back():
    r, plan = one_row([launch("ka")], truncated=True)
    assert plan.fallback == {r: FALLBACK_TRUNCATED} == {r: "truncated capture"}


def test_a_row_whose_capture_failed_falls_back_with_its_words():
    r = row("a")
    rl = captured(r, launch("ka")).model_copy(update={"why_not": "capture failed: boom"})
    plan = plan_replay(screen(kernel("ka", C, [r])), [r], {"main/a": capture(rl)})
    assert plan.fallback == {r: "capture failed: boom"}


def test_a_capture_naming_a_kernel_the_baseline_does_not_hold_is_never_replayed():
    r, plan = one_row([launch("ka"), launch("forged", tensor(5))])
    assert plan.replay == []
    assert plan.fallback == {r: "kernel forged not in the baseline's codegen records"}


def test_a_kernel_of_another_op_is_not_the_baseline_record_of_this_one():
    a, b = row("a"), row("b")
    s = screen(kernel("ka", C, [a]), kernel("kb", C, [b]))
    plan = plan_replay(
        s, [a], {"main/a": capture(captured(a, launch("ka"), launch("kb", tensor(3))))}
    )
    assert plan.fallback == {a: "kernel kb not in the baseline's codegen records"}


def test_the_unknown_kernel_is_named_before_any_other_reason():
    r, plan = one_row([launch("ka", why_not="graph"), launch("forged", tensor(5))])
    assert plan.fallback == {r: "kernel forged not in the baseline's codegen records"}


def test_a_changed_kernel_missing_from_the_launches_falls_back():
    r = row("a")
    s = screen(kernel("k1", C, [r], sass_instructions=1), kernel("k2", C, [r]))
    plan = plan_replay(s, [r], {"main/a": capture(captured(r, launch("k1")))})
    assert plan.fallback == {r: "changed kernel `k2_kernel` not among its captured launches"}


def test_a_kernel_the_screen_did_not_rebuild_falls_back():
    r, plan = one_row([launch("ka")], status=CodegenClass.MISSING)
    assert plan.fallback == {r: "kernel `ka_kernel` not rebuilt by the screen"}


def test_rows_the_screen_cannot_read_fall_back():
    a, b, c = row("a"), row("b"), row("c")
    named = row("c", "[torch.Size([1])]")
    s = screen(kernel("kc", T, [named]), ops_without_records=["main/a"],
               ops_with_unrecorded={"main/b": 2})  # fmt: skip
    plan = plan_replay(s, [a, b, c], {})
    assert plan.fallback == {
        a: FALLBACK_NO_RECORDS,
        b: "2 kernel(s) its record pass ran without a record",
        c: FALLBACK_NOT_NAMED,
    }


def test_an_op_that_launches_no_kernel_is_proven_and_not_in_the_plan():
    r = row("a")
    plan = plan_replay(screen(ops_without_kernels=["main/a"]), [r], {})
    assert plan.changed_rows == 0 and plan.failed == {}


# --------------------------------------------------------------------------- budget


def _three_ops():
    a, b, c = row("a"), row("b"), row("c")
    s = screen(
        kernel("ka", C, [a], sass_instructions=300),
        kernel("kb", C, [b], sass_instructions=200),
        kernel("kc", C, [c], sass_instructions=100),
    )
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, c)}
    return (a, b, c), s, caps


def test_the_budget_replays_the_largest_changes_and_defers_the_rest_with_commands():
    (a, b, c), s, caps = _three_ops()
    costs = {a: 4.0, b: 4.0, c: 1.0}
    fams = {"main/a": "F", "main/b": "F", "main/c": "F"}
    op_costs = {"main/a": 9.0, "main/b": 2.0, "main/c": 5.0}
    rerun = "zlbench gate --baseline baselines/v7"
    # op path: the sentinel of F, b (cheapest), 2 s; replay gets 10 - 2 = 8 s
    plan = plan_replay(s, [c, b, a], caps, costs, op_costs, 10.0, fams, rerun)
    assert plan.sentinels == {"F": "main/b"} and plan.op_path_s == 2.0
    assert [p.key for p in plan.replay] == [a, b] and plan.replay_s == 8.0
    assert [(d.key, d.score, d.command) for d in plan.deferred] == [
        (c, 100.0, "zlbench gate --baseline baselines/v7 --ops c --time changed")
    ]
    assert plan.changed_rows == 3


def test_a_row_too_large_for_what_is_left_does_not_stop_smaller_ones():
    (a, b, c), s, caps = _three_ops()
    costs = {a: 2.0, b: 9.0, c: 2.0}
    fams = dict.fromkeys(["main/a", "main/b", "main/c"], "F")
    plan = plan_replay(s, [a, b, c], caps, costs, {"main/a": 1.0}, 6.0, fams)
    assert [p.key for p in plan.replay] == [a, c]
    assert [d.key for d in plan.deferred] == [b]


def test_a_row_beyond_the_budget_whose_op_is_on_the_op_path_falls_back_not_deferred():
    (a, b, c), s, caps = _three_ops()
    fams = dict.fromkeys(["main/a", "main/b", "main/c"], "F")
    plan = plan_replay(s, [a, b, c], caps, {a: 5.0, b: 5.0, c: 5.0}, {"main/c": 1.0}, 6.0, fams)
    assert plan.sentinels == {"F": "main/c"}
    assert [p.key for p in plan.replay] == [a]
    assert plan.fallback == {c: FALLBACK_OVER_BUDGET}
    assert [d.key for d in plan.deferred] == [b]


def test_without_a_budget_every_replayable_row_is_replayed():
    (a, b, c), s, caps = _three_ops()
    plan = plan_replay(s, [a, b, c], caps, {a: 1e6, b: 1e6, c: 1e6})
    assert [p.key for p in plan.replay] == [a, b, c] and plan.deferred == []


def test_the_deferred_command_names_the_op_as_a_person_types_it():
    assert deferred_command("main/bmm__at__test_bmm.py") == (
        "zlbench gate --ops bmm@test_bmm.py --time changed"
    )
    assert deferred_command("vllm/mm", "zlbench gate --baseline 'my dir'") == (
        "zlbench gate --baseline 'my dir' --ops vllm:mm --time changed"
    )


def test_the_kernel_scale_of_the_recorders_gpu_model_on_the_runners():
    """v7's H200 latencies replayed on an H100: 1.39 (forty-fifth session's fit); the
    same model, an unknown one, a mixed recorder or a pair not measured: 1.0."""
    h200, h100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    assert kernel_scale(h200, h100) == KERNEL_SCALE[("h200", "h100")] == 1.39
    assert kernel_scale(h200, h200) == kernel_scale(h100, h100) == 1.0
    assert kernel_scale(h100, h200) == 1.0  # not measured: not guessed from the inverse
    assert kernel_scale(None, h100) == kernel_scale(h200, None) == 1.0
    assert kernel_scale("NVIDIA A100-SXM4-80GB", h100) == 1.0
    assert kernel_scale(f"{h200}, 22 op(s) replayed on {h100}", h100) == 1.0  # mixed
    res = BaselineResult(repo="main", run_name="a", op="a", timing="cudagraph", rows=[
        BaselineRow(op="a", dtype="bfloat16", shape=SH, latency_ms=0.04),
        BaselineRow(op="a", dtype="bfloat16", shape="[torch.Size([8])]"),
    ])  # fmt: skip
    scaled = replay_costs([res], pairs=16, scale=1.39)
    assert scaled[row("a")] == pytest.approx(replay_cost_s(40.0 * 1.39, 16))
    assert scaled[row("a", "[torch.Size([8])]")] == replay_cost_s(None, 16)  # no latency


def test_the_replay_cost_model():
    assert replay_cost_s(40.0, pairs=16, reps=10) == pytest.approx(
        ROW_SETUP_S + 2 * 16 * 10 * (40.0 + CALL_OVERHEAD_US) / 1e6
    )
    assert replay_cost_s(None) > replay_cost_s(0.0)
    # by default the pairs a replayed row takes (the blocks' least), not the rule's budget
    assert replay_cost_s(40.0) == pytest.approx(replay_cost_s(40.0, pairs=PAIRS))
    assert PAIRS < PairSampling().max_pairs
    # a long call: the worker's fewer calls a sample (protocol.pairs.sample_reps), 2 at 2.5 ms
    assert replay_cost_s(2500.0, pairs=16) == pytest.approx(
        ROW_SETUP_S + 2 * 16 * 2 * (2500.0 + CALL_OVERHEAD_US) / 1e6
    )
    res = BaselineResult(repo="main", run_name="a", op="a", timing="cudagraph", rows=[
        BaselineRow(op="a", dtype="bfloat16", shape=SH, latency_ms=0.04),
        BaselineRow(op="a", dtype="bfloat16", shape="[torch.Size([8])]"),
    ])  # fmt: skip
    costs = replay_costs([res], pairs=16)
    assert costs == {
        row("a"): pytest.approx(replay_cost_s(40.0, 16)),
        row("a", "[torch.Size([8])]"): replay_cost_s(None, 16),
    }


# --------------------------------------------------------------------------- sentinels


def test_one_sentinel_op_per_family_of_the_replayed_rows():
    a, b, c, d = row("a"), row("b"), row("c"), row("d")
    s = screen(*(kernel(f"k{r.op}", C, [r]) for r in (a, b, c, d)))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, c)}
    fams = {"main/a": "Unary", "main/b": "Unary", "main/c": "Norm", "main/d": "Norm"}
    op_costs = {"main/a": 8.0, "main/b": 3.0, "main/c": 1.0, "main/d": 7.0}
    plan = plan_replay(s, [a, b, c, d], caps, op_costs=op_costs, families=fams)
    # d has no capture: it is on the op path already, but no replayed row is its op's;
    # Norm has one replayed op (c): no sentinel of its own (the gate's sentinels stand)
    assert plan.fallback == {d: FALLBACK_NO_CAPTURE}
    assert plan.sentinels == {"Unary": "main/b"}
    assert plan.op_path() == {
        "main/b": "sentinel of op family Unary",
        "main/d": "1 changed row(s) not replayed: no capture for this op",
    }


def test_a_sentinel_prefers_a_replayed_op_already_on_the_op_path():
    a1, a2, b = row("a"), row("a", "[torch.Size([8])]"), row("b")
    s = screen(kernel("ka", C, [a1, a2]), kernel("kb", C, [b]))
    caps = {
        "main/a": capture(captured(a1, launch("ka"), launch("ka", tensor(2), why_not="graph"))
                          , captured(a2, launch("ka"))),
        "main/b": capture(captured(b, launch("kb"))),
    }  # fmt: skip
    fams = {"main/a": "F", "main/b": "F"}
    plan = plan_replay(s, [a1, a2, b], caps, op_costs={"main/a": 50.0, "main/b": 1.0},
                       families=fams)  # fmt: skip
    assert plan.sentinels == {"F": "main/a"}
    assert plan.op_path() == {
        "main/a": "1 changed row(s) not replayed: launch captured in a CUDA graph; "
        "sentinel of op family F"
    }
    assert [r.model_dump(exclude_defaults=True) for r in plan.op_rows()] == [
        {"key": a1.model_dump(exclude_defaults=True), "instrument": "op", "why": FALLBACK_GRAPH}
    ]


def test_a_family_sentinel_is_timed_at_its_least_latency_row_and_charged_that_share():
    """A family sentinel's op-level time is one row's (its least replay cost: the least
    recorded latency), the replay judging its others; the budget and the forecast
    charge that row's share of the op's recorded seconds. So is an op the gate times
    anyway whose changed rows are replayed; with no changed row it is timed whole."""
    a1, a2, a3 = row("a"), row("a", "[torch.Size([8])]"), row("a", "[torch.Size([16])]")
    b = row("b")
    s = screen(kernel("ka", C, [a1, a2, a3]), kernel("kb", C, [b]))
    caps = {
        "main/a": capture(*(captured(r, launch("ka")) for r in (a1, a2, a3))),
        "main/b": capture(captured(b, launch("kb"))),
    }
    fams = {"main/a": "F", "main/b": "F"}
    costs = {a1: 0.5, a2: 0.2, a3: 0.9, b: 0.1}
    op_costs = {"main/a": 6.0, "main/b": 9.0}
    plan = plan_replay(s, [a1, a2, a3, b], caps, costs, op_costs, families=fams)
    assert plan.sentinels == {"F": "main/a"}  # the cheaper op (recorded seconds)
    assert plan.sentinel_rows == {"main/a": a2}  # its least-cost row, not b's
    assert {p.key for p in plan.replay} == {a1, a2, a3, b}  # every row still replayed
    assert plan.whole_ops() == set() and plan.kept_ops() == {"main/a"}
    assert plan.op_path_s == pytest.approx(2.0)  # one of a's 3 rows: 6 s / 3
    f = forecast(plan, {"main/a", "main/b"}, op_costs)
    assert f.op_path_ops == 1 and f.op_path_s == pytest.approx(2.0 * AB_SIDE_FACTOR)  # A/B
    # with a row of its own on the op path too, the op path times both rows (row picks)
    plan.fallback[a3] = FALLBACK_GRAPH
    assert plan.op_seconds("main/a", op_costs) == pytest.approx(4.0)
    anyway = plan_replay(s, [a1, a2, a3, b], caps, costs, op_costs, families=fams,
                         timed_anyway=["main/a"])  # fmt: skip
    assert anyway.sentinels == {"F": "main/a"} and anyway.sentinel_rows == {"main/a": a2}
    assert anyway.whole_ops() == set() and anyway.op_path_s == pytest.approx(2.0)
    # b timed anyway too: at its one row (its only one); both on the op path, a row each
    both = plan_replay(s, [a1, a2, a3, b], caps, costs, op_costs, families=fams,
                       timed_anyway=["main/a", "main/b"])  # fmt: skip
    assert both.sentinel_rows == {"main/a": a2, "main/b": b}
    assert both.whole_ops() == set() and both.op_path_s == pytest.approx(2.0 + 9.0)
    # its kernels identical (the drift check): no changed row, timed whole
    same = screen(kernel("ka", C, [a1, a2, a3]), kernel("kb", T, [b]))
    drift = plan_replay(same, [a1, a2, a3, b], caps, costs, op_costs, families=fams,
                        timed_anyway=["main/a", "main/b"])  # fmt: skip
    assert drift.sentinel_rows == {"main/a": a2} and drift.whole_ops() == {"main/b"}
    assert drift.op_path_s == pytest.approx(2.0 + 9.0)


def test_an_op_without_a_family_is_a_family_of_its_own_judged_by_replay_alone():
    a, b = row("a"), row("b")
    s = screen(kernel("ka", C, [a]), kernel("kb", C, [b]))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b)}
    assert plan_replay(s, [a, b], caps).sentinels == {}
    fams = {"main/a": "F", "main/b": "F"}  # one family of two: one sentinel
    assert plan_replay(s, [a, b], caps, families=fams).sentinels == {"F": "main/a"}


def test_a_family_of_one_ops_variants_has_no_sentinel_of_its_own():
    a, a_, b = row("abs"), row("abs_"), row("exp")
    s = screen(*(kernel(f"k{r.op}", C, [r]) for r in (a, a_, b)))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, a_, b)}
    fams = {"main/abs": "op:abs", "main/abs_": "op:abs", "main/exp": "op:exp"}
    plan = plan_replay(s, [a, a_, b], caps, families=fams)
    assert plan.sentinels == {} and len(plan.replay) == 3  # abs, abs_: one op's forms
    assert op_path_ops(plan, set(fams)) == set()  # nothing left to the op path
    classes = {k: "UnaryPointwiseBenchmark" for k in fams}  # a Benchmark class: one
    assert plan_replay(s, [a, a_, b], caps, families=classes).sentinels == {
        "UnaryPointwiseBenchmark": "main/abs"
    }
    # the gate's own sentinel of such a family stays its sentinel
    anyway = plan_replay(s, [a, a_, b], caps, families=fams, timed_anyway=["main/abs"])
    assert anyway.sentinels == {"op:abs": "main/abs"}


def test_a_family_of_one_replayed_op_keeps_the_gates_own_sentinel():
    a = row("a")
    s = screen(kernel("ka", C, [a]))
    caps = {"main/a": capture(captured(a, launch("ka")))}
    fams = {"main/a": "F", "main/s": "F"}
    plan = plan_replay(s, [a], caps, families=fams, timed_anyway=["main/s"])
    assert plan.sentinels == {"F": "main/s"}


def test_an_op_the_gate_times_anyway_is_its_familys_sentinel():
    """The gate's own sentinels (ops/sentinels.txt) are timed through FlagGems whatever
    the plan: a family with one needs no other op on the op path, replayed or not."""
    a, b = row("a"), row("b")
    s = screen(kernel("ka", C, [a]), kernel("kb", C, [b]))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b)}
    fam = {"main/a": "F", "main/b": "F", "main/s": "F", "main/t": "G"}
    plan = plan_replay(s, [a, b], caps, families=fam, timed_anyway=["main/s", "main/t"])
    assert plan.sentinels == {"F": "main/s"}
    assert [p.key.op for p in plan.replay] == ["a", "b"]
    without = plan_replay(s, [a, b], caps, families=fam)
    assert without.sentinels == {"F": "main/a"}  # the cheapest, then by key


# --------------------------------------------------------------------------- forecast


def test_build_workers_give_a_side_of_cache_hits_few_and_the_compiling_side_the_rest():
    from zlbench.codegen.replay_plan import build_workers

    # v5's broad change: the PR's 90 kernels the screen's (hits), the base's compiled
    assert build_workers(15, 90, {"pr": True, "base": False}) == {"pr": 1, "base": 14}
    assert build_workers(15, 90, {"pr": False, "base": False}) == {"pr": 8, "base": 7}
    # v7's: thousands of hits a side take workers by HITS_PER_WORKER, up to half each
    assert build_workers(15, 4939, {"pr": True, "base": True}) == {"pr": 7, "base": 7}
    n = 3 * HITS_PER_WORKER
    assert build_workers(15, n, {"pr": True, "base": True}) == {"pr": 3, "base": 3}
    assert build_workers(15, n, {"pr": True, "base": False}) == {"pr": 3, "base": 12}
    # one job still builds both sides, one worker each
    assert build_workers(1, 90, {"pr": False, "base": False}) == {"pr": 1, "base": 1}
    assert build_workers(1, 90, {"pr": True, "base": False}) == {"pr": 1, "base": 1}


def test_the_forecast_adds_builds_replay_and_both_sides_of_the_op_path():
    a, b, c, d = row("a"), row("b"), row("c"), row("d")
    s = screen(*(kernel(f"k{r.op}", C, [r]) for r in (a, b, c, d)))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, c)}
    fams = {"main/a": "F", "main/b": "F", "main/c": "G"}
    op_costs = {"main/a": 4.0, "main/b": 9.0, "main/d": 3.0}
    plan = plan_replay(s, [a, b, c, d], caps, {a: 1.0, b: 2.0, c: 0.5}, op_costs, None, fams)
    # a: F's sentinel (cheaper); b, c replayed whole; d: no capture; e: not in the plan
    f = forecast(plan, ["main/a", "main/b", "main/c", "main/d", "main/e"], op_costs, jobs=3)
    # ka, kb, kc built on both sides at once: the PR's on 2 workers, the base's on 1
    assert f.build_s == pytest.approx(BUILD_START_S + 3 * BUILD_WORKER_S + 3 * BUILD_CPU_S / 1)
    # one worker, started warm beside the builds: what they left of its start shows
    assert f.replay_s == pytest.approx(worker_start_s(f.build_s) + 3.5)
    assert worker_start_s(f.build_s) == max(WARM_FIRST_ROW_S, WORKER_START_S - f.build_s)
    assert worker_start_s(2.0) == WORKER_START_S - 2.0 and worker_start_s(60.0) == 1.0
    assert worker_start_s(60.0, warm=False) == WORKER_START_S
    assert f.op_path_ops == 3  # a, d, e
    assert f.op_path_s == pytest.approx(AB_SIDE_FACTOR * (4.0 + 3.0 + DEFAULT_OP_COST_S))
    assert f.total_s == pytest.approx(f.build_s + f.replay_s + f.op_path_s)
    # the op path's wall by the caller's rule, given both sides' seconds of its ops
    seen = []
    walled = forecast(
        plan, ["main/a", "main/d"], op_costs, op_path_wall=lambda s: seen.append(s) or 99.0
    )
    assert seen == [{"main/a": 4.0 * AB_SIDE_FACTOR, "main/d": 3.0 * AB_SIDE_FACTOR}]
    assert walled.op_path_s == 99.0
    none = forecast(plan, ["main/b", "main/c"], op_costs, op_path_wall=lambda s: 99.0)
    assert none.op_path_ops == 0 and none.op_path_s == 0.0  # no op path: no process start
    built = forecast(plan, ["main/a"], op_costs, jobs=3, pr_built=True)  # the screen's PR builds
    # the PR's side cache hits on 1 worker, the base's 3 kernels on the other 2
    assert built.build_s == pytest.approx(BUILD_START_S + 3 * BUILD_WORKER_S + 3 * BUILD_CPU_S / 2)
    nothing = forecast(plan_replay(s, [d], caps), ["main/d"], op_costs)  # d: no capture
    hits = forecast(plan, ["main/a"], op_costs, jobs=3, pr_built=True, base_built=True)
    # a worker a side
    assert hits.build_s == pytest.approx(BUILD_START_S + 2 * BUILD_WORKER_S + 3 * HIT_CPU_S)
    assert (nothing.build_s, nothing.replay_s) == (0.0, 0.0)  # nothing built or started
    # a kernel whose record holds its compile seconds is charged those and BUILD_EXTRA_S
    # (v7's part 1 on an H100: 0.40 s a kernel where BUILD_CPU_S said 0.75); one of
    # unknown seconds still BUILD_CPU_S; a side of hits none of it
    recorded = forecast(plan, ["main/a"], op_costs, jobs=3, compile_s={"ka": 0.2, "kb": 1.5})
    cold = 0.2 + 1.5 + 2 * BUILD_EXTRA_S + BUILD_CPU_S  # kc: unknown
    assert recorded.build_s == pytest.approx(BUILD_START_S + 3 * BUILD_WORKER_S + cold / 1)
    both = forecast(plan, ["main/a"], op_costs, jobs=3, pr_built=True, base_built=True,
                    compile_s={"ka": 0.2, "kb": 1.5})  # fmt: skip
    assert both.build_s == hits.build_s
    # a side whose cache notes some of the kernels built (an earlier part's): those are
    # hits, the rest compiled at their recorded seconds
    partly = forecast(plan, ["main/a"], op_costs, jobs=3, compile_s={"ka": 0.2, "kb": 1.5},
                      cached={"pr": {"kb", "k-other"}, "base": {"ka", "kb", "kc"}})  # fmt: skip
    pr_side = (0.2 + BUILD_EXTRA_S + BUILD_CPU_S + HIT_CPU_S) / 2  # kb a hit; ka, kc compiled
    base_side = 3 * HIT_CPU_S / 1  # every kernel held, though not built by the screen
    assert partly.build_s == pytest.approx(
        BUILD_START_S + 3 * BUILD_WORKER_S + max(pr_side, base_side)
    )
    assert partly.build_s < recorded.build_s
    none_held = forecast(plan, ["main/a"], op_costs, jobs=3, compile_s={"ka": 0.2, "kb": 1.5},
                         cached={"pr": set(), "base": {"k-other"}})  # fmt: skip
    assert none_held.build_s == recorded.build_s


def test_the_forecast_keeps_every_op_the_gate_times_anyway_on_the_op_path():
    a, b, c = row("a"), row("b"), row("c")
    s = screen(*(kernel(f"k{r.op}", C, [r]) for r in (a, b, c)))
    caps = {f"main/{r.op}": capture(captured(r, launch(f"k{r.op}"))) for r in (a, b, c)}
    fams = {"main/a": "F", "main/b": "F", "main/c": "F"}
    ops = ["main/a", "main/b", "main/c"]
    plan = plan_replay(s, [a, b, c], caps, families=fams, timed_anyway=["main/b", "main/c"])
    assert plan.sentinels == {"F": "main/b"} and plan.anyway == {"main/b", "main/c"}
    assert forecast(plan, ops, {}).op_path_ops == 2  # b and c; a replayed whole


def test_the_budget_charges_the_ops_the_gate_times_anyway_first():
    (a, b, c), s, caps = _three_ops()
    fams = {"main/a": "F", "main/b": "G", "main/c": "H"}
    op_costs = {"main/s": 5.0}
    plan = plan_replay(s, [a, b, c], caps, {a: 2.0, b: 2.0, c: 2.0}, op_costs, 8.0, fams,
                       timed_anyway=["main/s"])  # fmt: skip
    assert plan.op_path_s == 5.0  # s: timed through FlagGems whatever the plan
    assert [p.key for p in plan.replay] == [a] and [d.key for d in plan.deferred] == [b, c]


def test_an_op_replayed_in_part_is_charged_its_fallback_rows_share_and_one_not_replayed_whole():
    """The gate times an op some of whose rows replay at its fallback rows only (row
    picks): the plan charges their share of its recorded seconds; an op none of whose
    rows replays is timed whole, and charged whole."""
    a1, a2, a3, a4 = (row("a", f"[torch.Size([{n}])]") for n in (1, 2, 3, 4))
    b1, b2 = row("b"), row("b", "[torch.Size([8])]")
    s = screen(kernel("ka", C, [a1, a2, a3, a4]), kernel("kb", C, [b1, b2]))
    caps = {"main/a": capture(*(captured(r, launch("ka")) for r in (a1, a2, a3)))}
    op_costs = {"main/a": 8.0, "main/b": 3.0}
    plan = plan_replay(s, [a1, a2, a3, a4, b1, b2], caps, op_costs=op_costs)
    assert {p.key for p in plan.replay} == {a1, a2, a3}
    assert set(plan.fallback) == {a4, b1, b2}
    assert plan.op_seconds("main/a", op_costs) == pytest.approx(2.0)  # 1 of 4 rows
    assert plan.op_seconds("main/b", op_costs) == 3.0  # no row replays: whole
    assert plan.op_path_s == pytest.approx(5.0)
