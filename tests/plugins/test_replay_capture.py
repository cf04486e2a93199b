"""The kernel-replay tier's capture at record time (zlbench.plugins.replay_capture):
argument descriptions, the per-row accumulation, graph and side-stream launches, the
file. On CPU, with fake kernels; tests/plugins/test_replay_capture_hook.py drives the
real launch_metadata hook."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from zlbench.models import PlanEntry, RowKey, WorkerPlan, load_json_model  # noqa: E402
from zlbench.models.replay import (  # noqa: E402
    EXACT_INT_MAX,
    EXACT_MAX,
    LAUNCHES_JSON,
    CaptureRowAt,
    LaunchCapture,
    LaunchSpec,
    RowLaunches,
    capture_rows_at,
    order_unknown,
    unvalued,
)
from zlbench.plugins import codegen, state  # noqa: E402
from zlbench.plugins import replay_capture as rc  # noqa: E402

FIRST = CaptureRowAt(occurrence=0, expected=frozenset({0}))  # a row's only occurrence

# --------------------------------------------------------------------------- helpers


def kernel(name: str = "k", names=("x", "y", "n"), h: str | None = None):
    """A stand-in for triton's CompiledKernel: what the capture reads of one."""
    return SimpleNamespace(
        hash=h or f"hash-{name}",
        name=name,
        src=SimpleNamespace(fn=SimpleNamespace(arg_names=list(names))),
    )


@pytest.fixture
def op(monkeypatch, tmp_path):
    """An op in flight with a row (bfloat16, "[8]"), no graph capture."""
    entry = PlanEntry(op="abs", run_name="abs", run_dir=str(tmp_path / "abs"), nodeids=["t::a"])
    session = state.Session(plan=WorkerPlan(entries=[entry]))
    session.current = state.OpState(entry=entry, dtype="bfloat16", shape="[8]")
    monkeypatch.setattr(state, "_ACTIVE", session)
    return session.current


def recorder(**kw) -> rc.LaunchRecorder:
    return rc.LaunchRecorder(in_graph=lambda: False, **kw)


def launch(rec, k, args, grid=(4,), stream=0, kernel_id=None, warn=None):
    rec.on_launch(k, grid, stream, args, f"id-{k.name}" if kernel_id is None else kernel_id,
                  warn or (lambda line: None))  # fmt: skip


def timed_call(fn):
    with state.timed_region():
        fn()


def rows(rec, run="abs"):
    return rec.capture_for(run).rows


def desc(t, name="x"):
    spec = rc.describe_arg(name, t, {})
    if spec.kind == "tensor":
        rc.add_values(spec, t)
    return spec


# --------------------------------------------------------------------------- arguments


def test_small_float_tensor_keeps_exact_values_and_their_digest():
    t = torch.arange(EXACT_MAX, dtype=torch.float32) / 4
    spec = desc(t)
    assert spec.kind == "tensor" and spec.dtype == "float32" and spec.stats is None
    assert spec.data == [i / 4 for i in range(EXACT_MAX)]
    assert spec.digest == hashlib.sha256(t.numpy().tobytes()).hexdigest()[:16]
    assert (spec.shape, spec.strides, spec.offset, spec.storage) == ([EXACT_MAX], [1], 0, EXACT_MAX)


def test_float_tensor_above_exact_max_keeps_statistics_only():
    t = torch.arange(EXACT_MAX + 1, dtype=torch.float32) - 3.5
    spec = desc(t)
    assert spec.data is None and spec.digest == ""
    s = spec.stats
    assert (s.min, s.max, s.integral, s.nonfinite) == (-3.5, 12.5, False, 0)
    assert s.mean == pytest.approx(float(t.double().mean()), rel=1e-6)
    assert s.std == pytest.approx(float(t.double().std(unbiased=False)), rel=1e-6)


def test_integer_tensors_are_exact_up_to_exact_int_max_then_integral_stats():
    small = torch.arange(EXACT_INT_MAX, dtype=torch.int64) * 3
    spec = desc(small)
    assert spec.data == [3 * i for i in range(EXACT_INT_MAX)] and spec.dtype == "int64"
    assert all(type(v) is int for v in spec.data)
    big = desc(torch.arange(EXACT_INT_MAX + 1, dtype=torch.int32))
    assert big.data is None
    assert (big.stats.min, big.stats.max, big.stats.integral) == (0, EXACT_INT_MAX, True)
    assert type(big.stats.min) is int


def test_bool_tensors_are_integers_too():
    mask = torch.tensor([True, False, True] * 10)  # 30 > EXACT_MAX: kept, bool
    spec = desc(mask)
    assert spec.dtype == "bool" and spec.data == [True, False, True] * 10
    assert all(type(v) is bool for v in spec.data)
    assert spec.digest == hashlib.sha256(mask.numpy().tobytes()).hexdigest()[:16]
    big = desc(torch.ones(EXACT_INT_MAX + 1, dtype=torch.bool))
    assert big.stats.integral and big.stats.min == 1 and big.stats.max == 1


def test_view_with_offset_gives_its_storage_offset_size_and_storage_order_values():
    base = torch.arange(20, dtype=torch.float32)
    view = base.view(4, 5)[1:3, 1:3]  # elements 6, 7, 11, 12 of a 20-element storage
    spec = desc(view)
    assert (spec.shape, spec.strides, spec.offset, spec.storage) == ([2, 2], [5, 1], 6, 20)
    assert spec.data == [6.0, 7.0, 11.0, 12.0]
    assert spec.digest == hashlib.sha256(base[[6, 7, 11, 12]].numpy().tobytes()).hexdigest()[:16]
    assert not desc(base[1:]).align16  # 4 bytes past a 16-byte boundary
    assert desc(base[4:]).align16


def test_non_contiguous_and_expanded_views_list_each_storage_element_once():
    t = torch.arange(6, dtype=torch.int16).view(2, 3).t()  # shape [3, 2], strides [1, 3]
    spec = desc(t)
    assert (spec.shape, spec.strides) == ([3, 2], [1, 3])
    assert spec.data == [0, 1, 2, 3, 4, 5]  # storage order, not the view's
    wide = torch.tensor([7.0, 8.0]).view(2, 1).expand(2, 5)  # stride 0: 10 viewed, 2 stored
    assert desc(wide).data == [7.0, 8.0] and desc(wide).strides == [1, 0]
    positions = pytest.importorskip("zlbench.plugins.replay.materialize").viewed_positions
    assert positions([3, 2], [1, 3], 0).tolist() == [0, 1, 2, 3, 4, 5]
    assert positions([2, 0], [1, 1], 5).tolist() == []


def test_statistics_count_nan_and_inf_and_describe_the_finite_values():
    t = torch.linspace(-1, 1, 101, dtype=torch.float16)
    t[3], t[50], t[70] = float("nan"), float("inf"), float("-inf")
    s = desc(t).stats
    assert s.nonfinite == 3
    assert (s.min, s.max) == (-1.0, 1.0)
    finite = t.double()[torch.isfinite(t)]
    assert s.mean == pytest.approx(float(finite.mean()), abs=1e-6)
    allnan = desc(torch.full((40,), float("nan"))).stats
    assert allnan.nonfinite == 40 and allnan.mean == 0.0


def test_statistics_of_a_large_tensor_are_the_same_in_chunks(monkeypatch):
    t = torch.randn(1000, dtype=torch.float32)
    whole = rc.tensor_stats(t)
    monkeypatch.setattr(rc, "STATS_CHUNK", 64)
    chunked = rc.tensor_stats(t)
    assert chunked.min == whole.min and chunked.max == whole.max
    assert chunked.mean == pytest.approx(whole.mean, abs=1e-6)
    assert chunked.std == pytest.approx(whole.std, rel=1e-5)


def test_small_float_tensor_with_nan_keeps_it_exact():
    spec = desc(torch.tensor([1.0, float("nan"), float("inf")]))
    assert spec.data[0] == 1.0 and spec.data[1] != spec.data[1] and spec.data[2] == float("inf")


def test_scalars_by_value_triton_dtypes_by_name_anything_else_other():
    tl = pytest.importorskip("triton.language")
    cases = {
        "i": (7, "int", 7),
        "f": (0.5, "float", 0.5),
        "b": (True, "bool", True),
        "n": (None, "none", None),
        "s": ("max", "str", "max"),
        "d": (tl.float32, "dtype", "fp32"),
    }
    for name, (v, kind, value) in cases.items():
        spec = rc.describe_arg(name, v, {})
        assert (spec.name, spec.kind, spec.value) == (name, kind, value)
        assert type(spec.value) is type(value)
    other = rc.describe_arg("desc", object(), {})
    assert other.kind == "other" and other.value.startswith("<object object")


def test_without_torch_nothing_is_a_tensor(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert not rc._is_tensor(torch.ones(2)) and not rc.capturing()
    assert rc.describe_arg("n", 3, {}).kind == "int"


# --------------------------------------------------------------------------- per row


def test_identical_launches_are_captured_once_and_counted_per_timed_call(op):
    rec, k = recorder(), kernel()
    reads = []
    rec.read_values = lambda spec, t: reads.append(spec.name) or rc.add_values(spec, t)
    x, y = torch.ones(8), torch.zeros(8)
    for _ in range(3):
        timed_call(lambda: [launch(rec, k, [x, y, 8]) for _ in range(2)])
    [row] = rows(rec)
    assert (row.run_name, row.op, row.dtype, row.shape, row.occurrence) == (
        "abs", "abs", "bfloat16", "[8]", 0)  # fmt: skip
    [spec] = row.launches
    assert (spec.kernel_id, spec.kernel, spec.grid, spec.count) == ("id-k", "k", [4, 1, 1], 2)
    assert [a.name for a in spec.args] == ["x", "y", "n"] and spec.args[2].value == 8
    assert spec.args[0].data == [1.0] * 8 and not spec.why_not
    assert reads == ["x", "y"]  # values read once, at the first launch


def test_values_are_read_as_zlbench_own_work_and_only_then(op):
    """FlagGems serves the torch ops that read values with its own tuned kernels: their
    tuner calls must not count as the op's (state.own_work, plugins._tuners)."""
    rec, k = recorder(), kernel()
    seen = []
    rec.read_values = lambda spec, t: seen.append(state.in_own_work()) or rc.add_values(spec, t)
    timed_call(lambda: launch(rec, k, [torch.ones(8), torch.zeros(8), 8]))
    assert seen == [True, True] and not state.in_own_work()


def test_another_grid_or_layout_or_scalar_is_another_launch(op):
    rec, k = recorder(), kernel()
    x = torch.ones(8)

    def call():
        launch(rec, k, [x, x, 8])
        launch(rec, k, [x, x, 8], grid=(2, 2))
        launch(rec, k, [x[1:], x, 7])
        launch(rec, k, [x, x, 9])
        launch(rec, k, [x.view(2, 4), x, 8])

    timed_call(call)
    assert len(rows(rec)[0].launches) == 5


def test_launches_outside_the_timed_region_or_without_a_row_are_ignored(op):
    rec, k = recorder(), kernel()
    launch(rec, k, [torch.ones(2), torch.ones(2), 2])  # input generation, reference
    op.dtype = None
    timed_call(lambda: launch(rec, k, [torch.ones(2), torch.ones(2), 2]))
    assert rec.capture_for("abs").rows == []


def test_only_the_last_timed_calls_launches_are_kept_an_autotune_sweep_is_dropped(op):
    rec = recorder()
    x = torch.ones(8)
    configs = [kernel("mm", h=f"cfg{i}") for i in range(20)]  # more than the cap

    def first():  # the sweep times every config, then the winner runs
        for k in configs:
            launch(rec, k, [x, x, 8], kernel_id=f"id-{k.hash}")
        launch(rec, configs[3], [x, x, 8], kernel_id="id-cfg3")

    timed_call(first)
    timed_call(lambda: launch(rec, configs[3], [x, x, 8], kernel_id="id-cfg3"))
    [row] = rows(rec)
    assert [(s.kernel_id, s.count) for s in row.launches] == [("id-cfg3", 1)]
    assert not row.truncated  # the first call overflowed, the last did not


def test_more_distinct_launches_than_the_cap_in_the_last_call_truncate_the_row(op):
    rec, x = recorder(), torch.ones(4)
    n = rc.MAX_LAUNCHES_PER_ROW
    timed_call(lambda: [launch(rec, kernel(f"k{i}"), [x, x, 4]) for i in range(n)])
    assert not rows(rec)[0].truncated and len(rows(rec)[0].launches) == n
    timed_call(lambda: [launch(rec, kernel(f"k{i}"), [x, x, 4]) for i in range(n + 1)])
    row = rows(rec)[0]
    assert row.truncated and len(row.launches) == n


def test_a_launch_per_reflector_past_the_valued_launches_reads_only_new_buffers(op):
    """ormqr's shape (v7, an H100): two copies, then one kernel per reflector ``i`` on
    the same matrix, tau and input, 4,096 of them for a 4096² row (truncated at 64
    until 2026-12-08). Past VALUED_LAUNCHES a launch's tensors on buffers an earlier
    launch of the call valued are not read again; one on a new buffer is."""
    rec, apply = recorder(), kernel("apply", names=("C", "tau", "i"))
    reads = []
    rec.read_values = lambda spec, t: reads.append(spec.name) or rc.add_values(spec, t)
    c, tau, late = torch.ones(16), torch.ones(4), torch.zeros(8)
    n = rc.VALUED_LAUNCHES + 6

    def call():
        launch(rec, kernel("copy", names=("x", "y", "n")), [c, c, 16])
        for i in range(n - 1, -1, -1):
            launch(rec, apply, [c, tau, i])
        launch(rec, kernel("tail", names=("z", "n")), [late, 8])  # a buffer not valued yet

    timed_call(call)
    [row] = rows(rec)
    assert not row.truncated and len(row.launches) == n + 2
    assert [a.value for a in row.launches[-2].args if a.kind == "int"] == [0]
    valued = [(a.data is not None) for s in row.launches for a in s.args if a.kind == "tensor"]
    # copy (2) and the first 63 applies (2 each) read their values; then only `late`
    assert valued == [True] * (2 + 2 * (rc.VALUED_LAUNCHES - 1)) + [False] * 14 + [True]
    assert reads.count("z") == 1 and reads.count("C") == rc.VALUED_LAUNCHES - 1
    assert unvalued(row.launches) == []  # every buffer has a launch that values it first
    timed_call(lambda: (call(), launch(rec, apply, [c, tau, n])))  # one reflector more
    assert len(reads) == 2 + 2 * (rc.VALUED_LAUNCHES - 1) + 1  # its buffers valued before
    assert len(rows(rec)[0].launches) == n + 3 and unvalued(rows(rec)[0].launches) == []


def test_buffers_number_distinct_storages_across_the_rows_launches(op):
    rec = recorder()
    x, tmp, out = torch.ones(32), torch.empty(32), torch.empty(32)

    def call():
        launch(rec, kernel("a"), [x, tmp, 32])  # writes an intermediate buffer
        launch(rec, kernel("b"), [tmp, out, 32])  # reads it
        launch(rec, kernel("c"), [out, out[16:], 16])  # in place, on a view

    timed_call(call)
    a, b, c = rows(rec)[0].launches
    assert [x.buffer for x in a.args[:2]] == [0, 1]
    assert [x.buffer for x in b.args[:2]] == [1, 2]
    assert [x.buffer for x in c.args[:2]] == [2, 2] and c.args[1].offset == 16


def test_the_last_calls_run_order_is_kept_by_launch_index(op):
    """A radix sort's shape: a counter reset (z) before each pass, the passes (p1, p2)
    counting into the counters: z p1 z p2 in every call. The order is the last call's,
    each run by its launch's index, as often as its count."""
    rec = recorder()
    a, counts = torch.ones(16), torch.zeros(4)
    z, p1, p2 = kernel("z"), kernel("p1"), kernel("p2")

    def call():
        launch(rec, z, [counts, counts, 4])
        launch(rec, p1, [a, counts, 1])
        launch(rec, z, [counts, counts, 4])
        launch(rec, p2, [a, counts, 2])

    timed_call(lambda: launch(rec, kernel("sweep"), [a, a, 16]))  # dropped: not the last call
    timed_call(call)
    timed_call(call)
    [row] = rows(rec)
    assert [(s.kernel, s.count) for s in row.launches] == [("z", 2), ("p1", 1), ("p2", 1)]
    assert row.order == [0, 1, 0, 2]
    assert not order_unknown(row.launches, row.order)  # replayed in that order
    assert order_unknown(row.launches)  # without it, as before: the counters pass between


def test_a_run_on_other_storages_than_its_launchs_first_gives_up_the_order(op):
    """Two runs of one launch key on other buffers (a ping-pong the key cannot tell):
    replaying the first run's storages twice would read other data, so no order."""
    rec = recorder()
    a, b = torch.ones(8), torch.ones(8)
    k, r = kernel("k"), kernel("r")
    timed_call(lambda: [launch(rec, k, [a, b, 8]), launch(rec, r, [b, b, 8]),
                        launch(rec, k, [b, a, 8])])  # fmt: skip
    [row] = rows(rec)
    assert row.launches[0].count == 2 and row.order is None
    assert order_unknown(row.launches, row.order)
    # the next call runs on the first storages again: its order is kept
    timed_call(lambda: [launch(rec, k, [a, b, 8]), launch(rec, r, [b, b, 8])])
    assert rows(rec)[0].order == [0, 1]


def test_storages_that_move_from_call_to_call_keep_the_order(op):
    """An allocator may hand a call other storages than the call before: within the
    last call every run of a key is on its first run's storages, so the order holds."""
    rec, k, r = recorder(), kernel("k"), kernel("r")
    alive = []  # each call's tensors kept: the next call's are other storages
    for _ in range(2):
        x, out = torch.ones(8), torch.empty(8)  # new storages every call
        alive += [x, out]
        timed_call(lambda x=x, out=out: [launch(rec, k, [x, out, 8]),
                                         launch(rec, r, [out, out, 8])])  # fmt: skip
    assert alive[0].data_ptr() != alive[2].data_ptr()
    assert rows(rec)[0].order == [0, 1]


def test_more_runs_than_the_cap_give_up_the_order(op, monkeypatch):
    monkeypatch.setattr(rc, "MAX_RUNS_PER_ROW", 3)
    rec, k, x = recorder(), kernel(), torch.ones(4)
    timed_call(lambda: [launch(rec, k, [x, x, 4]) for _ in range(3)])
    assert rows(rec)[0].order == [0, 0, 0]
    timed_call(lambda: [launch(rec, k, [x, x, 4]) for _ in range(4)])
    [row] = rows(rec)
    assert row.launches[0].count == 4 and row.order is None


def test_buffers_are_renumbered_densely_over_the_kept_launches(op):
    rec = recorder()
    dropped, kept = torch.ones(4), torch.ones(4)
    timed_call(lambda: launch(rec, kernel("sweep"), [dropped, dropped, 4]))
    timed_call(lambda: launch(rec, kernel("k"), [kept, kept, 4]))
    [spec] = rows(rec)[0].launches
    assert [a.buffer for a in spec.args[:2]] == [0, 0]


def test_a_launch_first_seen_during_a_graph_capture_has_no_values(op):
    rec, k = recorder(), kernel()
    rec.in_graph = lambda: True
    rec.read_values = lambda spec, t: pytest.fail("values read during a graph capture")
    timed_call(lambda: launch(rec, k, [torch.ones(4), torch.ones(4), 4]))
    [spec] = rows(rec)[0].launches
    assert spec.why_not == "graph"
    assert all(a.data is None and a.stats is None for a in spec.args)
    assert spec.args[0].shape == [4]  # the structure is there


def test_the_capturing_check_is_torchs(op, monkeypatch):
    """The default ``in_graph`` asks torch whether the current stream is capturing."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    rec = rc.LaunchRecorder()
    timed_call(lambda: launch(rec, kernel(), [torch.ones(4), torch.ones(4), 4]))
    assert rows(rec)[0].launches[0].why_not == "graph"


def test_an_eager_launch_then_its_graph_captured_repeats_keeps_values(op):
    rec, k = recorder(), kernel()
    x = torch.ones(4)
    timed_call(lambda: launch(rec, k, [x, x, 4]))
    rec.in_graph = lambda: True
    timed_call(lambda: launch(rec, k, [x, x, 4], stream=99))  # the capture's own stream
    [spec] = rows(rec)[0].launches
    assert not spec.why_not and spec.args[0].data == [1.0] * 4


def test_a_graph_launch_that_repeats_an_eager_one_with_other_integers_takes_its_values(op):
    """A random kernel's philox seed and offset advance at every call: the graph's launch
    is a new key, first seen during the capture. It takes the values the same launch
    read eagerly a call before (tensors of the same layout) and keeps its own scalars."""
    rec, k = recorder(), kernel("rand", ("out", "n", "seed", "offset"))
    out = torch.arange(16.0) + 0.5
    timed_call(lambda: launch(rec, k, [out, 16, 7, 100]))
    timed_call(lambda: launch(rec, k, [out, 16, 7, 116]))  # an eager warmup call
    rec.in_graph = lambda: True
    rec.read_values = lambda spec, t: pytest.fail("values read during a graph capture")
    timed_call(lambda: launch(rec, k, [out, 16, 7, 132], stream=99))
    [spec] = rows(rec)[0].launches
    assert not spec.why_not and spec.count == 1
    assert spec.args[0].data == [i + 0.5 for i in range(16)] and spec.args[0].digest
    assert [a.value for a in spec.args[1:]] == [16, 7, 132]  # its own scalars


@pytest.mark.parametrize(
    "graph_args",
    [
        lambda out: [out, 16, 7.5, 132],  # a float other: not a counter
        lambda out: [out[:8], 16, 7, 132],  # a tensor of another layout
        lambda out: [out, 16, 7, 100],  # the same key: a repeat, not a twin (kept: eager)
    ],
    ids=["float", "layout", "same"],
)
def test_only_a_launch_other_in_integers_alone_is_a_twin(op, graph_args):
    rec, k = recorder(), kernel("rand", ("out", "n", "seed", "offset"))
    out = torch.arange(16.0)
    timed_call(lambda: launch(rec, k, [out, 16, 7, 100]))
    rec.in_graph = lambda: True
    args = graph_args(out)
    timed_call(lambda: launch(rec, k, args))
    [spec] = rows(rec)[0].launches
    same = args[1:] == [16, 7, 100] and args[0] is out
    assert (spec.why_not == "") == same and (spec.why_not == "graph") == (not same)


def test_a_twin_of_a_launch_that_had_no_values_stays_graph(op):
    rec, k = recorder(), kernel("rand", ("x", "desc", "offset"))
    x = torch.ones(4)
    timed_call(lambda: launch(rec, k, [x, object(), 1]))  # unsupported: no values
    rec.in_graph = lambda: True
    timed_call(lambda: launch(rec, k, [x, object(), 2]))
    assert rows(rec)[0].launches[0].why_not == "graph"


def test_a_launch_on_another_stream_than_the_rows_is_a_side_stream(op):
    rec, x = recorder(), torch.ones(4)

    def call():
        launch(rec, kernel("main"), [x, x, 4], stream=0)
        launch(rec, kernel("side"), [x, x, 4], stream=7)

    timed_call(call)
    timed_call(lambda: (call(), launch(rec, kernel("main"), [x, x, 4], stream=7)))
    main, side = rows(rec)[0].launches
    assert side.why_not == "side stream" and side.args[0].data is None
    assert main.why_not == "side stream"  # it ran on the side stream too


def test_unsupported_arguments_and_unrecorded_kernels_name_why(op):
    rec, x = recorder(), torch.ones(4)

    def call():
        launch(rec, kernel("d", ("x", "desc")), [x, object()])
        launch(rec, kernel("u"), [x, x, 4], kernel_id="")

    timed_call(call)
    d, u = rows(rec)[0].launches
    assert d.why_not == "unsupported argument desc" and d.args[0].data is None
    assert u.why_not == "unrecorded kernel"


def test_a_rows_second_occurrence_is_numbered(op):
    rec, x = recorder(), torch.ones(4)
    for shape in ("[8]", "[16]", "[8]"):
        op.shape = shape
        timed_call(lambda: launch(rec, kernel(), [x, x, 4]))
    assert [(r.shape, r.occurrence) for r in rows(rec)] == [("[8]", 0), ("[16]", 0), ("[8]", 1)]


def test_an_exception_while_capturing_marks_the_row_and_warns_once(op, capsys):
    rec, x = recorder(), torch.ones(4)

    def broken(spec, t):
        raise RuntimeError("device lost\nmore")

    rec.read_values = broken
    lines = []
    timed_call(lambda: launch(rec, kernel(), [x, x, 4], warn=lines.append))
    timed_call(lambda: launch(rec, kernel("other"), [x, x, 4], warn=lines.append))
    [row] = rows(rec)
    assert row.why_not == "capture failed: RuntimeError: device lost"
    assert lines == ["launch capture of k: capture failed: RuntimeError: device lost"]
    assert not rec.busy


def test_launches_while_values_are_read_are_not_the_rows(op):
    """Reading values runs torch ops, which FlagGems may serve with its own kernels."""
    rec, x = recorder(), torch.ones(4)
    cg = codegen.Recorder(launches=rec)

    def reentrant(spec, t):
        launch(rec, kernel("fill"), [t, t, 4])
        cg.note("hash-fill")
        rc.add_values(spec, t)

    rec.read_values = reentrant
    timed_call(lambda: launch(rec, kernel(), [x, x, 4]))
    assert [s.kernel for s in rows(rec)[0].launches] == ["k"]
    assert cg.unrecorded == {} and cg.dirty == set()


class LibEntry:
    """FlagGems' ``LibEntry`` as the capture meets it: a kernel's first run of a
    specialisation holds the kernel's lock, a lock its own thread cannot take again."""

    def __init__(self, body):
        self.lock, self.body = multiprocessing.Lock(), body

    def run(self, *args):
        with self.lock:
            return self.body(*args)

    def served(self):  # a torch op FlagGems serves with this same kernel
        if not self.lock.acquire(timeout=0.5):
            pytest.fail("values read under the kernel's own first-run lock: a deadlock")
        self.lock.release()


def test_the_lock_is_seen_only_while_a_libentry_on_this_stack_holds_it():
    held = LibEntry(lambda: rc.flaggems_lock_held())
    assert held.run() is True
    assert rc.flaggems_lock_held() is False  # none on the stack
    free = LibEntry(lambda: None)
    assert LibEntry(lambda: free.run() or rc.flaggems_lock_held()).run() is True
    nested = SimpleNamespace(run=lambda: rc.flaggems_lock_held())  # not a LibEntry
    assert nested.run() is False


def test_a_first_run_under_flaggems_lock_is_counted_and_read_at_the_next_launch(op):
    """argsort, sort, isin and index_select hung in the capture pass on an H100: the values
    were read under the launched kernel's own first-run lock. Now they are read at the
    key's next launch, outside it."""
    rec, x = recorder(), torch.arange(4.0)  # the default lock_held: the real check
    reads = []
    entry = LibEntry(lambda: launch(rec, kernel(), [x, x, 4]))

    def read(spec, t):
        entry.served()
        reads.append(spec.name)
        rc.add_values(spec, t)

    rec.read_values = read
    timed_call(lambda: [entry.run(), launch(rec, kernel(), [x, x, 4])])
    [spec] = rows(rec)[0].launches
    assert reads == ["x", "y"] and spec.count == 2 and not spec.why_not
    assert spec.args[0].data == [0.0, 1.0, 2.0, 3.0]


def test_an_untimed_measurement_keeps_its_second_calls_launch_with_values_read_there(op):
    """``baseline capture --untimed`` (``--zl-timing capture``): a measurement is two
    eager calls. A new specialisation's first launch runs under FlagGems' lock in the
    first; the capture reads its values at the second and keeps that call's launch."""
    from zlbench.plugins.timing import TimingSettings, measure
    from zlbench.plugins.timing_backends import CpuBackend

    held = iter([True, False])
    rec, x = recorder(lock_held=lambda: next(held)), torch.arange(4.0)
    k = kernel()
    measure(lambda: launch(rec, k, [x, x, 4]), CpuBackend(), TimingSettings(capture_only=True),
            rep_ms=1.0)  # fmt: skip
    [spec] = rows(rec)[0].launches
    assert not spec.why_not and spec.count == 1 and spec.args[0].data == [0.0, 1.0, 2.0, 3.0]


def test_a_key_whose_every_launch_held_the_lock_says_its_values_were_not_read(op):
    rec = recorder(lock_held=lambda: True)
    rec.read_values = lambda spec, t: pytest.fail("values read under the lock")
    x = torch.ones(4)
    timed_call(lambda: [launch(rec, kernel(), [x, x, 4]) for _ in range(2)])
    [spec] = rows(rec)[0].launches
    assert spec.why_not == rc.VALUES_NOT_READ and spec.count == 2


# --------------------------------------------------------------------------- the file


def test_the_file_is_written_atomically_and_validates_as_a_launch_capture(op, tmp_path):
    rec = recorder()
    small = torch.tensor([1.0, float("nan")])
    timed_call(lambda: launch(rec, kernel(), [small, torch.randn(100), 2]))
    cg = tmp_path / "codegen"
    rec.write("abs", cg)
    assert sorted(os.listdir(cg)) == [LAUNCHES_JSON]  # no temp file left
    loaded = load_json_model(cg / LAUNCHES_JSON, LaunchCapture)
    assert loaded.model_dump_json() == rec.capture_for("abs").model_dump_json()
    assert loaded.rows[0].launches[0].args[0].data[1] != loaded.rows[0].launches[0].args[0].data[1]
    text = (cg / LAUNCHES_JSON).read_text()
    assert text.count("\n") == 1 and '"align16"' not in text  # compact: defaults left out
    rec.write("other-run", cg)  # a run without timed launches: an empty capture
    assert load_json_model(cg / LAUNCHES_JSON, LaunchCapture).rows == []


class Wrapped:
    """A tensor-like wrapper as FlagGems' pointwise fast path passes to its kernels (its
    StridedBuffer's interface): another shape, strides, dtype or start over a base."""

    def __init__(self, base, shape, strides, dtype=None, offset=0):
        self._base, self.dtype = base, dtype or base.dtype
        self.shape, self._strides = tuple(shape), tuple(strides)
        self._ptr = base.data_ptr() + offset * self.dtype.itemsize

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr

    def untyped_storage(self):
        return self._base.untyped_storage()


def test_a_tensor_like_wrapper_is_described_as_the_view_of_its_storage_it_is(op):
    base = torch.arange(24, dtype=torch.float32)
    flat = Wrapped(base, (24,), (1,))
    spec = desc(flat)
    assert (spec.kind, spec.dtype, spec.shape, spec.strides, spec.offset, spec.storage) == (
        "tensor", "float32", [24], [1], 0, 24)  # fmt: skip
    assert spec.stats.max == 23
    part = desc(Wrapped(base, (2, 3), (6, 2), offset=5))
    assert (part.shape, part.strides, part.offset) == ([2, 3], [6, 2], 5)
    assert part.data == [5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
    as_int = desc(Wrapped(base, (4,), (1,), dtype=torch.int32))  # a reinterpretation
    assert as_int.dtype == "int32" and as_int.data == base[:4].view(torch.int32).tolist()
    rec = recorder()
    timed_call(lambda: launch(rec, kernel(), [flat, base, 24]))
    timed_call(lambda: launch(rec, kernel(), [Wrapped(base, (24,), (1,)), base, 24]))
    [spec] = rows(rec)[0].launches  # the same launch: a new wrapper, the same layout
    assert spec.count == 1 and [a.buffer for a in spec.args[:2]] == [0, 0]


def test_a_wrapper_with_a_negative_stride_is_an_unsupported_argument(op):
    base = torch.arange(8, dtype=torch.float32)
    flipped = Wrapped(base, (8,), (-1,), offset=7)
    assert rc.describe_arg("x", flipped, {}).kind == "other"
    rec = recorder()
    timed_call(lambda: launch(rec, kernel(), [flipped, base, 8]))
    assert rows(rec)[0].launches[0].why_not == "unsupported argument x"


def test_exact_values_are_in_the_order_and_digest_the_replay_reads():
    """The replay (zlbench.plugins.replay.materialize) writes ``data`` into the storage
    positions it computes and checks ``digest`` with its own function: a captured view
    materializes as the tensor it was."""
    materialize = pytest.importorskip("zlbench.plugins.replay.materialize")
    for t in (
        torch.arange(20, dtype=torch.bfloat16).view(4, 5)[1:3, 1:4],
        torch.arange(6, dtype=torch.int16).view(2, 3).t(),
        torch.tensor([True, False]).view(2, 1).expand(2, 3),
    ):
        spec = desc(t)
        positions = materialize.viewed_positions(spec.shape, spec.strides, spec.offset)
        values = t.detach().as_strided((spec.storage,), (1,), 0)[positions]
        assert spec.digest == materialize.values_digest(values)
        one = LaunchSpec(kernel_id="k", kernel="k", grid=[1, 1, 1], args=[spec])
        [again] = materialize.materialize(one, "cpu", seed=0)
        assert again.stride() == t.stride() and torch.equal(again, t)


# --------------------------------------------------------------------------- every row listed


@pytest.fixture
def hooked(op):
    """A recorder told of each timed call's start, as ``codegen.install`` makes it."""
    rec = recorder()
    state.on_timed_call(rec.on_timed_call)
    yield rec
    state.on_timed_call(rec.on_timed_call, add=False)


def test_a_row_whose_timed_calls_launch_nothing_is_listed_without_launches(op, hooked):
    x = torch.ones(4)
    timed_call(lambda: None)  # [8]: the benchmark's function ran no Triton kernel
    op.shape = "[16]"
    timed_call(lambda: launch(hooked, kernel(), [x, x, 4]))
    op.shape = "[8]"
    timed_call(lambda: None)
    cap = hooked.capture_for("abs")
    assert cap.lists_every_row and cap.unnamed_calls == 0 and cap.every_launch_hooked
    assert [(r.shape, r.occurrence, len(r.launches)) for r in cap.rows] == [
        ("[8]", 0, 0), ("[16]", 0, 1), ("[8]", 1, 0)]  # fmt: skip
    assert [cap.launched_nothing(r) for r in cap.rows] == [True, False, True]
    # the baseline's rows, measured in that order, numbered as the recorder numbers them
    measured = (("[8]", 0), ("[16]", 0), ("[8]", 1))
    keys = [RowKey(repo="main", run_name="abs", op="abs", dtype="bfloat16", shape=sh,
                   occurrence=occ) for sh, occ in measured]  # fmt: skip
    at = capture_rows_at(keys)
    assert [cap.row_of("abs", "bfloat16", k.shape, at[k]) for k in keys] == cap.rows
    assert cap.proves_no_launch("abs", "bfloat16", "[8]", at[keys[0]])
    assert cap.proves_no_launch("abs", "bfloat16", "[8]", at[keys[2]])
    assert not cap.proves_no_launch("abs", "bfloat16", "[16]", at[keys[1]])
    third = CaptureRowAt(occurrence=2, expected=frozenset({0, 1, 2}))
    assert not cap.proves_no_launch("abs", "bfloat16", "[8]", third)  # not listed: not known
    assert not cap.proves_no_launch("abs", "bfloat16", "[32]", FIRST)  # not listed: not known


def test_with_flaggems_c_extension_loaded_a_row_without_launches_proves_nothing(
    op, hooked, monkeypatch
):
    timed_call(lambda: None)  # its kernels could have launched from C++, past the hook
    monkeypatch.setitem(sys.modules, rc.C_EXTENSION_MODULE, SimpleNamespace())
    cap = hooked.capture_for("abs")
    assert not cap.every_launch_hooked and cap.lists_every_row
    assert not cap.launched_nothing(cap.rows[0])
    assert not cap.proves_no_launch("abs", "bfloat16", "[8]", FIRST)


def test_the_capture_names_the_gpu_it_ran_on(op, hooked, monkeypatch):
    timed_call(lambda: None)
    none = SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=none))
    assert hooked.capture_for("abs").gpu_model == ""  # no CUDA device
    monkeypatch.delitem(sys.modules, "torch")
    assert rc.device_name() == ""  # no torch loaded
    cuda = SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                           get_device_name=lambda i: f"NVIDIA H100 80GB HBM3 #{i}")  # fmt: skip
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    assert hooked.capture_for("abs").gpu_model == "NVIDIA H100 80GB HBM3 #0"
    broken = SimpleNamespace(is_available=lambda: 1 / 0)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=broken))
    assert rc.device_name() == ""  # never raises


def test_the_c_extension_is_told_by_its_module_or_flaggems_config():
    assert not rc.c_extension_loaded({})
    assert not rc.c_extension_loaded({"flag_gems": 1, "flag_gems.c_operators_x": 1})
    assert rc.c_extension_loaded({"flag_gems.c_operators": 1})
    assert rc.c_extension_loaded({"flag_gems.c_operators.sub": 1})
    off = SimpleNamespace(use_c_extension=False, c_operators=None)  # config.py's default
    assert not rc.c_extension_loaded({"flag_gems.config": off})
    on = SimpleNamespace(use_c_extension=True, c_operators=object())
    assert rc.c_extension_loaded({"flag_gems.config": on})


def test_a_timed_call_before_the_row_is_named_is_counted_and_proves_nothing(op, hooked):
    x = torch.ones(4)
    timed_call(lambda: None)  # [8], named: launched nothing
    op.shape = None  # a benchmark that names its shape after measuring
    timed_call(lambda: launch(hooked, kernel(), [x, x, 4]))  # attributed to no row
    timed_call(lambda: None)
    cap = hooked.capture_for("abs")
    assert cap.unnamed_calls == 2 and [len(r.launches) for r in cap.rows] == [0]
    assert not cap.launched_nothing(cap.rows[0])  # its launches may have gone unnamed
    assert hooked.capture_for("other").unnamed_calls == 0  # counted per run


def test_nested_timed_regions_are_one_call_and_an_unhooked_recorder_lists_launches_only(op):
    calls = []

    def seen():
        calls.append(state.timed_calls())

    state.on_timed_call(seen)
    try:
        with state.timed_region(), state.timed_region():
            pass
        timed_call(lambda: None)
    finally:
        state.on_timed_call(seen, add=False)
    assert len(calls) == 2 and calls[1] == calls[0] + 1  # once per outermost entry
    timed_call(lambda: None)
    assert len(calls) == 2  # removed: no longer called
    rec = recorder()  # an older capture's behaviour: no hook, no listed row, no flag
    timed_call(lambda: None)
    assert rec.capture_for("abs").rows == []


def test_a_row_that_launched_nothing_but_is_not_whole_or_an_older_capture_proves_nothing():
    row = RowLaunches(run_name="abs", op="abs", dtype="bfloat16", shape="[8]")
    every = LaunchCapture(rows=[row], lists_every_row=True, every_launch_hooked=True)
    assert every.launched_nothing(row)
    assert not LaunchCapture(rows=[row]).launched_nothing(row)  # lists rows with launches
    assert not LaunchCapture(rows=[row], lists_every_row=True).launched_nothing(row)  # hook?
    for bad in ({"truncated": True}, {"why_not": "capture failed: X"}):
        assert not every.launched_nothing(row.model_copy(update=bad))
    spec = LaunchSpec(kernel_id="id", kernel="k", grid=[1, 1, 1])
    assert not every.launched_nothing(row.model_copy(update={"launches": [spec]}))


def test_the_flags_are_written_and_read_back(op, hooked, tmp_path):
    timed_call(lambda: None)
    op.shape = None
    timed_call(lambda: None)
    hooked.write("abs", tmp_path)
    text = (tmp_path / LAUNCHES_JSON).read_text()
    assert '"lists_every_row":true' in text and '"unnamed_calls":1' in text
    assert '"every_launch_hooked":true' in text
    back = LaunchCapture.model_validate_json(text)
    assert back == hooked.capture_for("abs")


# --------------------------------------------------------------------------- tensor descriptors


def _tensor_descriptor():
    return pytest.importorskip("triton.tools.tensor_descriptor").TensorDescriptor


def test_a_host_tensor_descriptor_is_its_base_and_its_own_fields():
    """The TMA argument of FlagGems' Hopper matmuls (``a_desc``): the base described as
    a tensor (its buffer shared with the same tensor passed beside it), and the
    descriptor's shape, strides, block shape and padding."""
    TensorDescriptor = _tensor_descriptor()
    a = torch.zeros(64, 32, dtype=torch.float16)
    buffers: dict[int, int] = {}
    d = rc.describe_arg("a_desc", TensorDescriptor.from_tensor(a[16:], [16, 32]), buffers)
    assert (d.kind, d.dtype, d.shape, d.strides, d.offset, d.storage) == (
        "tensordesc", "float16", [48, 32], [32, 1], 16 * 32, 64 * 32,
    )  # fmt: skip
    own = (d.desc_shape, d.desc_strides, d.block_shape, d.padding)
    assert own == ([48, 32], [32, 1], [16, 32], "zero")
    assert rc.describe_arg("a", a, buffers).buffer == d.buffer == 0


def test_a_descriptors_launch_key_is_its_layout_not_its_values():
    TensorDescriptor = _tensor_descriptor()
    a = torch.zeros(64, 32)
    key = rc.arg_key(TensorDescriptor.from_tensor(a, [16, 32]))
    assert key == rc.arg_key(TensorDescriptor.from_tensor(torch.ones(64, 32), [16, 32]))
    assert key != rc.arg_key(TensorDescriptor.from_tensor(a, [32, 32]))  # another block
    assert key != rc.arg_key(TensorDescriptor.from_tensor(a[:32], [16, 32]))  # another shape
    assert key != rc.arg_key(TensorDescriptor(a, [64, 32], [32, 1], [16, 32], "nan"))


def test_a_launch_with_a_descriptor_is_captured_with_its_bases_values(op):
    TensorDescriptor = _tensor_descriptor()
    rec, k = recorder(), kernel("mm", ("a_desc", "c", "n"))
    a, c = torch.arange(64 * 32, dtype=torch.float32).view(64, 32), torch.zeros(64, 32)
    timed_call(lambda: launch(rec, k, [TensorDescriptor.from_tensor(a, [16, 32]), c, 64]))
    [spec] = rows(rec)[0].launches
    assert spec.why_not == ""
    base = spec.args[0]
    assert base.kind == "tensordesc" and base.stats is not None
    assert (base.stats.min, base.stats.max) == (0, 64 * 32 - 1)
    assert spec.args[1].buffer != base.buffer


def test_a_descriptor_whose_base_is_no_tensor_is_an_unsupported_argument(op):
    rec, k = recorder(), kernel("mm", ("a_desc", "c", "n"))
    fake = type("TensorDescriptor", (), {"base": object(), "shape": [4], "strides": [1],
                                         "block_shape": [4], "padding": "zero"})()  # fmt: skip
    timed_call(lambda: launch(rec, k, [fake, torch.zeros(4), 4]))
    assert rows(rec)[0].launches[0].why_not == "unsupported argument a_desc"
