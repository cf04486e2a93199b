"""Two sides of an interleaved A/B meeting in one dir (zlbench.plugins.pairing): real
threads, real files, the real stopping rule; only the sample and the clock are fakes."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from zlbench.models.timing import PairSampling
from zlbench.plugins import pairing
from zlbench.plugins.pairing import Pairing, read_stats
from zlbench.protocol.pairs import PairRule, decide, read_samples, slot_side
from zlbench.protocol.turn import GpuTurn

KEY = {"repo": "main", "run_name": "add", "op": "add", "dtype": "float32", "shape": "[64]"}
RULE = PairRule(threshold=0.03, floor_us=0.05, sampling=PairSampling(min_pairs=5, max_pairs=10))


class FixedClock:
    def __init__(self, reasons: int = 0) -> None:
        self.reasons = reasons

    def read(self):
        return 1980, self.reasons


def side(tmp_path, name: str, rule: PairRule = RULE, **kw) -> Pairing:
    p = Pairing(tmp_path, name, rule, turn=GpuTurn(None), clock=FixedClock(), **kw)
    p.row_key = lambda: dict(KEY, occurrence=0)  # the row in flight, without a pytest session
    return p


def run_both(tmp_path, pr_ms, base_ms, plain_sides=(), **kw):
    """Both sides measure one row at once; (pr samples, base samples, row dir).
    ``plain_sides``: the sides whose timing fell back to plain (no CUDA graph)."""
    got: dict[str, list[float] | None] = {}
    log: list[str] = []

    def one(name, values):
        it = iter(values)

        def sample():
            log.append(name)
            return next(it)

        plain = name in plain_sides
        got[name] = side(tmp_path, name, **kw).measure(sample, plain=plain)

    threads = [
        threading.Thread(target=one, args=("pr", pr_ms)),
        threading.Thread(target=one, args=("base", base_ms)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    (row,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    return got, log, row


def test_the_two_sides_take_turns_in_the_balanced_order_and_stop_together(tmp_path):
    got, log, row = run_both(tmp_path, itertools.repeat(0.110), itertools.repeat(0.100))
    samples = read_samples(row)
    key = (row / "key.json").read_text()
    assert [s["side"] for s in samples] == [slot_side(key, i) for i in range(len(samples))]
    assert log == [s["side"] for s in samples]  # measured in exactly that order
    assert len(got["pr"]) == len(got["base"]) == len(samples) // 2 == RULE.min_pairs
    assert decide(read_stats(row, RULE), RULE) == "REGRESSION"  # +10 % of 100 µs
    assert all(s["mhz"] == 1980 for s in samples)


def test_an_undecided_row_takes_more_pairs_up_to_its_budget(tmp_path):
    pr = itertools.cycle([0.100, 0.106, 0.101, 0.105])  # 0 to +6 %: straddles 3 %
    got, _, row = run_both(tmp_path, pr, itertools.repeat(0.100))
    assert len(got["pr"]) == len(got["base"]) == RULE.max_pairs
    assert decide(read_stats(row, RULE), RULE) is None


def test_a_side_whose_partner_never_comes_times_alone_after_the_wait(tmp_path):
    p = side(tmp_path, "pr", wait_s=0.2, short_wait_s=0.05)
    t0 = time.monotonic()
    assert p.measure(lambda: 1.0, plain=False) is None
    assert 0.2 <= time.monotonic() - t0 < 5
    (row,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    assert (row / "alone.pr").exists() and p.lagging
    # the partner arriving late sees it and does not wait either
    late = side(tmp_path, "base", wait_s=30)
    t0 = time.monotonic()
    assert late.measure(lambda: 1.0, plain=False) is None
    assert time.monotonic() - t0 < 5


def test_a_partner_that_stops_mid_row_costs_one_sample_wait(tmp_path):
    calls = {"n": 0}

    def dies_after_two():
        calls["n"] += 1
        if calls["n"] > 2:
            raise SystemExit  # the process is gone
        return 0.1

    done: dict[str, list[float] | None] = {}

    def base():
        try:
            side(tmp_path, "base").measure(dies_after_two, plain=False)
        except SystemExit:
            pass

    def pr():
        done["pr"] = side(tmp_path, "pr", sample_wait_s=0.3).measure(lambda: 0.1, plain=False)

    threads = [threading.Thread(target=base), threading.Thread(target=pr)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert done["pr"] is not None and 1 <= len(done["pr"]) <= 3


def test_active_reads_the_side_from_the_environment(tmp_path, monkeypatch):
    pairing.reset()
    monkeypatch.setenv("ZLBENCH_PAIR_DIR", str(tmp_path))
    monkeypatch.setenv("ZLBENCH_PAIR_SIDE", "base")
    monkeypatch.setenv("ZLBENCH_PAIR_RULE", PairRule(sampling=PairSampling(max_pairs=7)).to_json())
    try:
        p = pairing.active()
        assert p is not None and p.side == "base" and p.rule.max_pairs == 7
    finally:
        pairing.reset()
    monkeypatch.setenv("ZLBENCH_PAIR_SIDE", "neither")
    try:
        assert pairing.active() is None
    finally:
        pairing.reset()


@pytest.mark.parametrize("reasons", [0x40])
def test_throttled_pairs_are_left_out_of_the_statistic(tmp_path, reasons):
    got: dict[str, list[float] | None] = {}

    def one(name, ms, clock):
        p = side(tmp_path, name)
        p.clock = clock
        got[name] = p.measure(lambda: ms, plain=False)

    threads = [
        threading.Thread(target=one, args=("pr", 0.1, FixedClock(reasons))),
        threading.Thread(target=one, args=("base", 0.1, FixedClock())),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    (row,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    st = read_stats(row, RULE)
    assert st.pairs == 0  # every pair had a throttled PR sample
    assert len(got["pr"]) == 2 * RULE.max_pairs  # the cap on pairs taken, dropped included


def test_a_side_whose_partners_batch_has_ended_does_not_wait(tmp_path):
    (tmp_path / "done.base").touch()  # the runner: the base side's whole batch is over
    p = side(tmp_path, "pr", wait_s=60)
    t0 = time.monotonic()
    assert p.measure(lambda: 1.0, plain=False) is None
    assert time.monotonic() - t0 < 5


def test_a_row_plain_on_one_side_is_plain_for_both_and_both_stop_at_the_same_pair(tmp_path):
    sampling = PairSampling(min_pairs=5, max_pairs=6, max_pairs_plain=24)
    rule = PairRule(threshold=0.03, floor_us=0.05, sampling=sampling)
    pr = itertools.repeat(0.150)  # +50 % throughout: decided once it has five blocks

    got, _, row = run_both(tmp_path, pr, itertools.repeat(0.100), plain_sides=("pr",), rule=rule)
    samples = read_samples(row)
    assert [bool(s.get("plain")) for s in samples] == [s["side"] == "pr" for s in samples]
    # graph rows would stop at 5 pairs; a plain row needs 5 blocks of 4 pairs
    assert len(got["pr"]) == len(got["base"]) == 20
    st = read_stats(row, rule)
    assert st.blocks == 5 and decide(st, rule) == "REGRESSION"
