"""models.replay.holds_addresses: a 64-bit integer tensor whose values all lie where a
device pointer does is a table of addresses (block_diag's ptrs_ptr), which a replay in
another process cannot rebuild; index tensors, other dtypes and garbage outputs with
one value outside the range are not."""

from __future__ import annotations

import pytest

from zlbench.models.replay import ADDRESS_RANGE, ArgSpec, TensorStats, holds_addresses

PTRS = [0x7F4D99E0BE00, 0x7F4D99E3BE00, 0x7F4DA4F84000]


def arg(dtype="int64", data=None, stats=None) -> ArgSpec:
    n = len(data) if data is not None else 8
    return ArgSpec(kind="tensor", dtype=dtype, shape=[n], strides=[1], storage=n,
                   data=data, stats=stats, digest="d" if data is not None else "")  # fmt: skip


def test_exact_pointers_are_a_table_in_either_64_bit_dtype():
    assert holds_addresses(arg(data=PTRS))
    assert holds_addresses(arg("uint64", data=PTRS))


@pytest.mark.parametrize(
    "data",
    [
        [],  # nothing to point anywhere
        [0, 1, 2, 3],  # an index tensor
        [*PTRS, 7],  # one value a pointer never is
        [*PTRS, 1 << 48],  # beyond 48 bits: a bit pattern, not an address
        [-PTRS[0]],
        [True, False],
    ],
)
def test_values_outside_the_address_range_are_no_table(data):
    assert not holds_addresses(arg(data=data))


def test_the_range_bounds():
    lo, hi = ADDRESS_RANGE
    assert holds_addresses(arg(data=[lo, hi - 1]))
    assert not holds_addresses(arg(data=[lo - 1]))
    assert not holds_addresses(arg(data=[hi]))


def test_other_dtypes_are_no_table():
    assert not holds_addresses(arg("int32", data=[5, 6]))
    assert not holds_addresses(arg("float64", data=[float(p) for p in PTRS]))


def test_statistics_of_a_large_table_and_of_a_garbage_buffer():
    table = TensorStats(min=PTRS[0], max=PTRS[-1], mean=PTRS[1], integral=True)
    assert holds_addresses(arg(stats=table))
    garbage = TensorStats(min=-4548635623644200960, max=4801284754941404160, mean=0.0)
    assert not holds_addresses(arg(stats=garbage))  # argsort's y_ptr before it is written
    assert not holds_addresses(arg())  # no values at all
