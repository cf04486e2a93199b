"""The replay tier's arguments rebuilt from a capture (zlbench.plugins.replay.materialize):
exact data round-trips with its digest checked, aliasing shares one storage, offset
views, out-of-bounds strides and other alignments refused, stand-in values drawn from
statistics, and snapshot/restore undoing an in-place kernel."""

from __future__ import annotations

import pytest
import torch

from zlbench.models.base import dump_json_model, load_json_model
from zlbench.models.replay import ArgSpec, LaunchSpec, TensorStats
from zlbench.plugins.replay.materialize import (
    ReplayError,
    materialize,
    materialize_row,
    restore,
    snapshot,
    values_digest,
    viewed_positions,
)


def exact(values, dtype="float32", shape=None, strides=None, offset=0, storage=None, **kw):
    """An exact tensor spec whose data are ``values`` in storage order."""
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    shape = [len(values)] if shape is None else shape
    strides = [1] if strides is None else strides
    storage = offset + len(values) if storage is None else storage
    return ArgSpec(
        kind="tensor",
        dtype=dtype,
        shape=shape,
        strides=strides,
        offset=offset,
        storage=storage,
        data=list(values),
        digest=values_digest(t),
        align16=(offset * t.element_size()) % 16 == 0,
        **kw,
    )


def stats_spec(n, dtype="float32", buffer=0, **stats):
    return ArgSpec(
        kind="tensor",
        dtype=dtype,
        shape=[n],
        strides=[1],
        storage=n,
        buffer=buffer,
        stats=TensorStats(**stats),
    )


def launch(*args: ArgSpec) -> LaunchSpec:
    return LaunchSpec(kernel_id="k0", kernel="kern", grid=[1, 1, 1], args=list(args))


def test_exact_data_and_scalars_round_trip_in_parameter_order():
    out = materialize(
        launch(
            exact([1.5, -2.0, 3.25]),
            ArgSpec(kind="int", value=7),
            ArgSpec(kind="float", value=0.5),
            ArgSpec(kind="bool", value=True),
            ArgSpec(kind="none"),
            exact([3, 1, 4, 1, 5], dtype="int64", buffer=1),
            exact([True, False], dtype="bool", buffer=2),
            ArgSpec(kind="dtype", value="bf16"),
        ),
        "cpu",
        seed=0,
    )
    assert out[0].dtype == torch.float32 and out[0].tolist() == [1.5, -2.0, 3.25]
    assert out[1:5] == [7, 0.5, True, None]
    assert out[5].dtype == torch.int64 and out[5].tolist() == [3, 1, 4, 1, 5]
    assert out[6].tolist() == [True, False]
    import triton.language as tl

    assert out[7] == tl.bfloat16


def test_bf16_exact_data_round_trips_bit_for_bit():
    vals = torch.randn(8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    spec = exact(vals.tolist(), dtype="bfloat16")
    (t,) = materialize(launch(spec), "cpu", seed=0)
    assert torch.equal(t, vals)


def test_non_finite_values_survive_the_plan_file_and_their_digest(tmp_path):
    """A flash-attention row's 0-d float tensor held -inf: pydantic wrote it as null, and
    the gate's plan.json was refused on reading (H100, 2026-12-06); every float the
    capture keeps now reads back as it was."""
    vals = [float("-inf"), float("nan"), float("inf"), 0.5]
    plan = launch(
        exact(vals),
        ArgSpec(kind="float", value=float("-inf")),
        stats_spec(1 << 20, min=-1.0, max=1.0, mean=0.0, std=0.5, nonfinite=3),
    )
    dump_json_model(tmp_path / "plan.json", plan)
    back = load_json_model(tmp_path / "plan.json", LaunchSpec)
    t, scalar, _ = materialize(back, "cpu", seed=0)
    assert scalar == float("-inf")
    assert t[0].item() == float("-inf") and t[1].isnan() and t[2].item() == float("inf")
    assert values_digest(t) == plan.args[0].digest


def test_two_args_of_one_buffer_share_one_storage():
    x = exact([1.0, 2.0, 3.0, 4.0], buffer=0)
    y = exact([1.0, 2.0, 3.0, 4.0], buffer=0)
    z = exact([1.0, 2.0, 3.0, 4.0], buffer=1)
    a, b, c = materialize(launch(x, y, z), "cpu", seed=0)
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert a.untyped_storage().data_ptr() != c.untyped_storage().data_ptr()
    a.add_(10)  # in place through one alias: the other sees it
    assert b.tolist() == [11.0, 12.0, 13.0, 14.0]


def test_a_rows_launches_share_a_buffer_number_as_one_storage():
    out = exact([1.0, 2.0, 3.0, 4.0], buffer=1)
    first = launch(exact([5.0, 6.0, 7.0, 8.0], buffer=0), out)
    second = launch(exact([1.0, 2.0, 3.0, 4.0], buffer=1), stats_spec(4, buffer=2, min=0.0,
                    max=1.0, mean=0.5, std=0.1))  # fmt: skip
    (x, o), (i, y) = materialize_row([first, second], "cpu", seeds=[0, 1])
    assert o.untyped_storage().data_ptr() == i.untyped_storage().data_ptr()
    assert x.untyped_storage().data_ptr() != o.untyped_storage().data_ptr()
    o.copy_(x)  # the first launch writes its output: the second reads it
    assert i.tolist() == [5.0, 6.0, 7.0, 8.0]
    assert y.untyped_storage().data_ptr() not in {t.untyped_storage().data_ptr() for t in (x, o)}
    ((x1, o1),) = materialize_row([first], "cpu", seeds=[0])  # one launch: as materialize
    (x2, o2) = materialize(first, "cpu", seed=0)
    assert torch.equal(x1, x2) and torch.equal(o1, o2)


def test_a_later_launchs_tensor_without_values_shares_its_buffers_earlier_values():
    """Past a capture's first 64 distinct launches (ormqr: a launch per reflector on one
    matrix), a tensor on a buffer an earlier launch valued has no values of its own: it
    is that buffer, filled from the earlier launch. One on a buffer no earlier launch
    values has nothing to be filled from and is refused."""
    first = launch(exact([1.0, 2.0, 3.0, 4.0], buffer=0), ArgSpec(kind="int", value=3))
    bare = ArgSpec(kind="tensor", dtype="float32", shape=[4], strides=[1], storage=4)
    later = launch(bare, ArgSpec(kind="int", value=2))
    (c0, i0), (c1, i1) = materialize_row([first, later], "cpu", seeds=[0, 1])
    assert c0.untyped_storage().data_ptr() == c1.untyped_storage().data_ptr()
    assert c1.tolist() == [1.0, 2.0, 3.0, 4.0] and (i0, i1) == (3, 2)
    with pytest.raises(ReplayError, match="argument 0 '' of launch 0: tensor without data or "
                       "statistics, its buffer valued by no earlier launch"):  # fmt: skip
        materialize_row([later, first], "cpu", seeds=[0, 1])


def test_offset_and_strided_views_address_the_captured_elements():
    # a transposed 2x3 view at offset 4 of a storage of 10: data in storage order
    spec = exact([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], shape=[2, 3], strides=[1, 2], offset=4, storage=10)
    (t,) = materialize(launch(spec), "cpu", seed=0)
    assert t.storage_offset() == 4 and t.stride() == (1, 2)
    assert t.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    assert t.untyped_storage().nbytes() >= 10 * 4
    # a second view of the same buffer at offset 0 sees the zeroed prefix and the data
    whole = ArgSpec(
        kind="tensor",
        dtype="float32",
        shape=[10],
        strides=[1],
        storage=10,
        stats=TensorStats(min=9.0, max=9.0, mean=9.0),
    )
    t, w = materialize(launch(spec, whole), "cpu", seed=0)
    assert w.tolist() == [9.0] * 4 + [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # exact data wins


def test_storage_order_of_a_broadcast_view_keeps_each_element_once():
    assert viewed_positions([3, 2], [0, 1], 5).tolist() == [5, 6]
    spec = exact([7, 8], dtype="int32", shape=[3, 2], strides=[0, 1], offset=0, storage=2)
    (t,) = materialize(launch(spec), "cpu", seed=0)
    assert t.tolist() == [[7, 8]] * 3


def test_a_digest_mismatch_is_refused():
    spec = exact([1.0, 2.0]).model_copy(update={"data": [1.0, 2.5]})
    with pytest.raises(ReplayError, match="tensor data digest mismatch"):
        materialize(launch(spec), "cpu", seed=0)
    with pytest.raises(ReplayError, match="without a digest"):
        materialize(launch(exact([1.0]).model_copy(update={"digest": ""})), "cpu", seed=0)


def test_wrong_data_length_is_refused():
    spec = exact([1.0, 2.0, 3.0]).model_copy(update={"shape": [2], "storage": 3})
    with pytest.raises(ReplayError, match="3 data values for a view of 2 elements"):
        materialize(launch(spec), "cpu", seed=0)


@pytest.mark.parametrize(
    ("shape", "strides", "offset", "storage"),
    [([4], [1], 1, 4), ([2, 3], [3, 1], 0, 5), ([3], [4], 0, 8), ([2], [-1], 1, 2)],
)
def test_strides_outside_the_storage_are_refused(shape, strides, offset, storage):
    spec = ArgSpec(
        kind="tensor",
        dtype="float32",
        shape=shape,
        strides=strides,
        offset=offset,
        storage=storage,
        stats=TensorStats(min=0.0, max=1.0, mean=0.5),
        align16=offset == 0,
    )
    with pytest.raises(ReplayError, match="outside its storage|negative"):
        materialize(launch(spec), "cpu", seed=0)


def test_unknown_dtype_other_kind_why_not_and_valueless_tensors_are_refused():
    bad = stats_spec(4, min=0.0, max=1.0, mean=0.5).model_copy(update={"dtype": "float77"})
    with pytest.raises(ReplayError, match="unknown tensor dtype 'float77'"):
        materialize(launch(bad), "cpu", seed=0)
    with pytest.raises(ReplayError, match="unsupported argument"):
        materialize(launch(ArgSpec(name="fn", kind="other", value="<fn>")), "cpu", seed=0)
    with pytest.raises(ReplayError, match="not replayable: graph"):
        spec = launch(exact([1.0])).model_copy(update={"why_not": "graph"})
        materialize(spec, "cpu", seed=0)
    empty = ArgSpec(kind="tensor", dtype="float32", shape=[4], strides=[1], storage=4)
    with pytest.raises(ReplayError, match="without data or statistics"):
        materialize(launch(empty), "cpu", seed=0)


def test_an_alignment_other_than_the_captures_is_refused():
    # offset 1 float32 = 4 bytes: not 16-byte aligned, but the capture said it was
    spec = exact([1.0, 2.0], offset=1, storage=3).model_copy(update={"align16": True})
    with pytest.raises(ReplayError, match="is not 16-byte aligned, the capture's was"):
        materialize(launch(spec), "cpu", seed=0)
    # and the other way round; the honest one replays
    spec = exact([1.0, 2.0], offset=4, storage=6).model_copy(update={"align16": False})
    with pytest.raises(ReplayError, match="another specialisation"):
        materialize(launch(spec), "cpu", seed=0)
    (t,) = materialize(launch(exact([1.0, 2.0], offset=1, storage=3)), "cpu", seed=0)
    assert t.data_ptr() % 16 == 4


def test_stats_drawn_values_stay_in_range_integral_and_deterministic():
    f = stats_spec(5000, min=-1.0, max=3.0, mean=0.5, std=2.0)
    i = stats_spec(5000, dtype="int32", buffer=1, min=0, max=9, mean=4.0, std=3.0, integral=True)
    g = stats_spec(5000, dtype="float16", buffer=2, min=0.0, max=100.0, mean=50.0, std=30.0)
    g = g.model_copy(update={"stats": g.stats.model_copy(update={"integral": True})})
    a, b, c = materialize(launch(f, i, g), "cpu", seed=3)
    assert a.dtype == torch.float32 and float(a.min()) >= -1.0 and float(a.max()) <= 3.0
    assert float(a.std()) > 0.5  # drawn, not a constant
    assert abs(float(a.mean()) - 0.5) < 0.3
    assert b.dtype == torch.int32 and int(b.min()) >= 0 and int(b.max()) <= 9
    assert c.dtype == torch.float16 and torch.equal(c, c.round())
    assert torch.isfinite(a).all()  # nonfinite values are not re-injected
    again = materialize(launch(f, i, g), "cpu", seed=3)
    assert all(torch.equal(x, y) for x, y in zip((a, b, c), again, strict=True))
    other = materialize(launch(f, i, g), "cpu", seed=4)
    assert not torch.equal(a, other[0])


def test_stand_in_values_are_drawn_on_the_tensors_own_device(monkeypatch):
    """The draws are made where the tensor lives (a host draw of a 4096x4096 tensor took
    0.4 s on the CI machine, then a copy to the GPU): the generator is made for the
    storage's device, and every draw (normal and Bernoulli) is made on it. A storage
    that says it is on ``cuda`` (a CPU tensor behind it: this machine has no GPU)."""
    from zlbench.plugins.replay import materialize as mat

    cuda = torch.device("cuda")
    asked = []
    real_gen, real_empty, real_full = torch.Generator, torch.empty, torch.full

    def on_cpu(make):
        def made(*a, device=None, **kw):
            asked.append(torch.device(device) if device is not None else None)
            return make(*a, **kw)

        return made

    class Storage:  # a flat storage reporting the GPU it would be on
        def __init__(self, n):
            self.t, self.device = torch.zeros(n), cuda

        def __getitem__(self, s):
            return self.t[s]

    monkeypatch.setattr(torch, "Generator", on_cpu(real_gen))
    monkeypatch.setattr(torch, "empty", on_cpu(real_empty))
    monkeypatch.setattr(torch, "full", on_cpu(real_full))
    f = stats_spec(100, min=-1.0, max=1.0, mean=0.0, std=0.5)
    flat = Storage(100)
    mat._fill_stats(flat, f, torch.float32, 100, seed=1)
    assert asked == [cuda, cuda]  # the generator, then the normal draw's buffer
    assert float(flat.t.abs().max()) <= 1.0 and float(flat.t.std()) > 0.1  # drawn, in range
    asked.clear()
    m = stats_spec(100, dtype="bool", min=0, max=1, mean=0.5, integral=True)
    mat._fill_stats(Storage(100), m, torch.bool, 100, seed=1)
    assert asked == [cuda, cuda]  # the generator, then the Bernoulli's probabilities


def test_stats_of_a_constant_or_all_nan_tensor_and_bool_tensors():
    const = stats_spec(16, min=2.0, max=2.0, mean=2.0)
    nan = stats_spec(16, buffer=1, min=float("nan"), max=float("nan"), mean=float("nan"))
    mask = stats_spec(4000, dtype="bool", buffer=2, min=0, max=1, mean=0.25, integral=True)
    c, n, m = materialize(launch(const, nan, mask), "cpu", seed=0)
    assert c.tolist() == [2.0] * 16
    assert n.isnan().all()
    assert m.dtype == torch.bool and 0.15 < float(m.float().mean()) < 0.35


def test_snapshot_restore_undoes_an_in_place_kernel_on_aliased_args():
    x = exact([1.0, 2.0, 3.0, 4.0])
    alias = exact([1.0, 2.0, 3.0, 4.0])  # same buffer 0: the kernel's output is its input
    idx = exact([0, 2], dtype="int64", buffer=1)
    a, b, i = materialize(launch(x, alias, idx), "cpu", seed=0)
    snap = snapshot([a, b, i])
    assert len(snap) == 2  # one copy per storage, not per argument

    def kernel(args):  # in place, through the alias, and on the index tensor
        args[1].add_(args[0])
        args[2].add_(1)

    kernel([a, b, i])
    assert a.tolist() == [2.0, 4.0, 6.0, 8.0] and i.tolist() == [1, 3]
    restore(snap)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0] and b.tolist() == a.tolist()
    assert i.tolist() == [0, 2]
    kernel([a, b, i])  # a second repetition sees the same inputs
    restore(snap)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]


def desc_spec(values, rows, cols, block, **kw):
    """A tensor descriptor over an exact row-major ``rows`` x ``cols`` float32 base."""
    base = exact(values, shape=[rows, cols], strides=[cols, 1])
    own = dict(desc_shape=[rows, cols], desc_strides=[cols, 1], block_shape=block,
               padding="zero") | kw  # fmt: skip
    return base.model_copy(update={"kind": "tensordesc", **own})


def test_a_tensor_descriptor_is_rebuilt_over_its_base():
    pytest.importorskip("triton")
    values = [float(i) for i in range(16)]
    d, plain = materialize(launch(desc_spec(values, 4, 4, [2, 4]), exact(values)), "cpu", 0)
    assert type(d).__name__ == "TensorDescriptor"
    assert d.base.tolist() == torch.tensor(values).view(4, 4).tolist()
    assert (list(d.shape), list(d.strides), list(d.block_shape), d.padding) == (
        [4, 4], [4, 1], [2, 4], "zero",
    )  # fmt: skip
    assert d.base.untyped_storage().data_ptr() == plain.untyped_storage().data_ptr()  # buffer 0
    snap = snapshot([d, 7])
    d.base.zero_()  # a TMA store into it
    restore(snap)
    assert d.base.flatten().tolist() == values


@pytest.mark.parametrize(
    "change, says",
    [
        (dict(block_shape=[2]), "rank mismatch"),  # the block's rank is not the shape's
        (dict(block_shape=[3, 4]), "power of 2"),
        (dict(desc_strides=[4, 2]), "contiguous"),
    ],
)
def test_a_descriptor_triton_refuses_is_one_replay_error(change, says):
    pytest.importorskip("triton")
    spec = desc_spec([float(i) for i in range(16)], 4, 4, [2, 4], **change)
    with pytest.raises(ReplayError) as e:
        materialize(launch(spec), "cpu", 0)
    line = str(e.value)
    assert "\n" not in line and "triton refuses its tensor descriptor" in line and says in line


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_unsigned_exact_data_round_trips(dtype):
    """torch has no index_copy for uint16/32/64: isin's and unique2's uint32 buffers
    failed to materialize on an H100 (2026-12-07) and their rows fell back."""
    top = torch.iinfo(getattr(torch, dtype)).max
    vals = [0, 1, 7, top, top - 1]
    (t,) = materialize(launch(exact(vals, dtype=dtype)), "cpu", seed=0)
    assert t.dtype == getattr(torch, dtype)
    assert t.view(-1).tolist() == vals
    strided = exact([5, 6], dtype=dtype, shape=[2], strides=[2], offset=1, storage=4)
    (s,) = materialize(launch(strided), "cpu", seed=0)
    assert s.tolist() == [5, 6]


def test_unsigned_stats_draw_in_range():
    u = stats_spec(1000, dtype="uint32", min=0, max=4000000000, mean=2e9, std=1e9, integral=True)
    (t,) = materialize(launch(u), "cpu", seed=1)
    assert t.dtype == torch.uint32 and t.numel() == 1000
    vals = t.tolist()  # torch has no max for uint32 either
    assert max(vals) <= 4000000000 and max(vals) > 2**31  # the top bit kept
