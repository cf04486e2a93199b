"""zlbench.codegen.chunks: kernels dealt into chunks of about equal compile time."""

from __future__ import annotations

import pytest

from zlbench.codegen.chunks import DEFAULT_COMPILE_S, n_chunks, pool_eta, split


def test_every_id_in_exactly_one_chunk():
    est = {f"k{i}": float(i % 7) for i in range(50)}
    chunks = split(est, 6)
    flat = [k for c in chunks for k in c]
    assert sorted(flat) == sorted(est) and len(chunks) == 6 and all(chunks)


def test_slow_kernel_gets_a_chunk_of_its_own():
    est = {"slow": 10.0} | {f"f{i}": 1.0 for i in range(10)}
    chunks = split(est, 2)
    assert ["slow"] in chunks
    other = next(c for c in chunks if c != ["slow"])
    assert len(other) == 10


def test_loads_are_balanced():
    est = {f"k{i}": float(1 + i % 5) for i in range(40)}
    loads = [sum(est[k] for k in c) for c in split(est, 4)]
    assert max(loads) - min(loads) <= 5


def test_unknown_estimates_count_as_default():
    chunks = split({"a": None, "b": 0.0, "c": DEFAULT_COMPILE_S}, 3)
    assert sorted(len(c) for c in chunks) == [1, 1, 1]


def test_split_is_deterministic_and_input_order_free():
    est = {f"k{i}": 1.0 for i in range(9)}
    assert split(est, 4) == split(dict(reversed(list(est.items()))), 4)


def test_never_more_chunks_than_kernels():
    assert len(split({"a": 1.0, "b": 1.0}, 8)) == 2
    assert n_chunks(3, jobs=16) == 3
    assert n_chunks(100, jobs=4) == 8
    assert n_chunks(0, jobs=4) == 1
    # a whole inventory on a small machine: chunks of at most 300 kernels, so that a
    # progress line comes every few minutes, not after half the screen
    assert n_chunks(6000, jobs=2) == 20
    assert n_chunks(6001, jobs=2) == 22  # 21 rounded up to a multiple of the slots
    assert n_chunks(2456, jobs=2) == 10  # not 9: the last round would leave a slot idle
    assert n_chunks(6000, jobs=16) == 32  # enough already: 2 per slot
    with pytest.raises(ValueError):
        split({"a": 1.0}, 0)


def test_the_pools_eta_counts_a_first_round_whole_from_its_first_chunk():
    """The base rebuild of an H100 gate (2026-12-06): 30 chunks 15 at a time, the first
    ending 23 s in (the workers' start), the last 47 s in. The mean-chunk ETA said
    3290 s there; a round's pace says 23 s."""
    assert pool_eta(23.0, 1, 30, 15) == pytest.approx(23.0)
    assert pool_eta(27.0, 15, 30, 15) == pytest.approx(27.0)  # one round of two left
    assert pool_eta(45.0, 22, 30, 15) == pytest.approx(45.0 * (2 - 22 / 15) / (22 / 15))
    assert pool_eta(40.0, 30, 30, 15) == 0.0 and pool_eta(5.0, 0, 30, 15) == 0.0
    # fewer chunks than slots: one round, nothing left to estimate once it ends
    assert pool_eta(10.0, 1, 3, 15) == pytest.approx(0.0)
    assert pool_eta(10.0, 1, 4, 1) == pytest.approx(30.0)  # one slot: by chunks
