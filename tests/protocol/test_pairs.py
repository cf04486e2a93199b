"""The interleaved A/B's order, statistic and stopping rule (zlbench.protocol.pairs)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from zlbench.models.timing import PairSampling
from zlbench.protocol.pairs import (
    INCONCLUSIVE,
    PASS,
    REGRESSION,
    REPLAY_BLOCK_PAIRS,
    REPLAY_REPS,
    PairRule,
    block_stats,
    complete_pairs,
    decide,
    final_decision,
    median_ci,
    pair_stats,
    row_stats,
    sample_reps,
    samples_plain,
    should_stop,
    slot_side,
)


def test_each_pair_holds_one_sample_of_each_side():
    for key in ("a", "main/add|float32|[64]", "x" * 50):
        for pair in range(40):
            sides = {slot_side(key, 2 * pair), slot_side(key, 2 * pair + 1)}
            assert sides == {"pr", "base"}


def test_blocks_of_two_pairs_are_ab_ba_or_ba_ab_so_each_side_leads_half_the_pairs():
    for key in (f"row-{i}" for i in range(50)):
        firsts = [slot_side(key, 2 * p) for p in range(32)]
        for b in range(16):
            assert firsts[2 * b] != firsts[2 * b + 1]  # balanced within every block
        assert firsts.count("pr") == firsts.count("base") == 16


def test_the_order_is_random_across_rows_and_blocks_yet_the_same_for_both_sides():
    leads = {slot_side(f"row-{i}", 0) for i in range(40)}
    assert leads == {"pr", "base"}  # not always the same side first
    blocks = {slot_side("one-row", 4 * b) for b in range(40)}
    assert blocks == {"pr", "base"}
    assert [slot_side("k", s) for s in range(20)] == [slot_side("k", s) for s in range(20)]


@pytest.mark.parametrize(
    ("n", "confidence", "k"),
    [(4, 0.9, None), (5, 0.9, 1), (6, 0.95, 1), (8, 0.95, 1), (9, 0.95, 2), (16, 0.9, 5)],
)
def test_the_median_interval_is_the_widest_order_statistic_pair_with_the_coverage(n, confidence, k):
    values = [float(i) for i in range(1, n + 1)]
    ci = median_ci(values, confidence)
    if k is None:
        assert ci is None
        return
    assert ci == (values[k - 1], values[n - k])
    miss = 2 * sum(math.comb(n, j) for j in range(k)) / 2**n
    assert miss <= 1 - confidence  # the coverage holds ...
    wider_miss = 2 * sum(math.comb(n, j) for j in range(k + 1)) / 2**n
    assert wider_miss > 1 - confidence  # ... and a narrower interval would lose it


def _stats(changes, base_ms=0.1, confidence=0.9):
    base = [base_ms] * len(changes)
    return pair_stats([b * (1 + c) for b, c in zip(base, changes, strict=True)], base, confidence)


RULE = PairRule(threshold=0.03, floor_us=0.05, sampling=PairSampling(min_pairs=5, max_pairs=8))


def test_a_row_clearly_slower_beyond_threshold_and_floor_is_a_regression():
    s = _stats([0.10, 0.11, 0.09, 0.12, 0.10])  # 100 µs kernel, +10 %
    assert s.change == pytest.approx(0.10)
    assert s.change_lo == pytest.approx(0.09) and s.change_hi == pytest.approx(0.12)
    assert s.delta_us == pytest.approx(10.0)
    assert decide(s, RULE) == "REGRESSION"


def test_a_row_within_the_threshold_passes_and_fewer_than_min_pairs_decide_nothing():
    assert decide(_stats([0.004, -0.002, 0.01, 0.0, -0.01]), RULE) == "PASS"
    assert decide(_stats([0.10, 0.11, 0.09, 0.12]), RULE) is None


def test_a_small_kernel_slower_by_less_than_the_floor_passes_on_the_floor():
    # a 0.2 µs kernel 20 % slower is +0.04 µs: inside the 0.05 µs floor
    s = _stats([0.2, 0.19, 0.21, 0.2, 0.2], base_ms=0.0002)
    assert s.change_lo > RULE.threshold and s.delta_hi_us <= RULE.floor_us
    assert decide(s, RULE) == "PASS"


def test_a_1_4us_kernel_20_percent_slower_is_caught_at_the_floor():
    s = _stats([0.2, 0.19, 0.21, 0.2, 0.2], base_ms=0.0014)  # +0.28 µs
    assert decide(s, RULE) == "REGRESSION"


def test_an_interval_straddling_the_threshold_is_undecided_then_inconclusive_at_the_budget():
    s = _stats([0.0, 0.06, 0.01, 0.05, 0.03])
    assert decide(s, RULE) is None
    assert not should_stop(s, RULE, plain=False)
    s8 = _stats([0.0, 0.06, 0.01, 0.05, 0.03, 0.0, 0.06, 0.02])
    assert should_stop(s8, RULE, plain=False)  # the graph budget: 8 pairs
    assert not should_stop(s8, RULE, plain=True)  # the plain fallback gets more
    assert final_decision(s8, RULE) == INCONCLUSIVE


def test_faster_beyond_both_is_an_improvement_only_when_asked():
    s = _stats([-0.2, -0.21, -0.19, -0.2, -0.22])
    assert decide(s, RULE, full=True) == "IMPROVEMENT"
    assert decide(s, RULE, full=False) == "PASS"


def test_dropped_pairs_count_towards_a_cap_so_a_throttled_gpu_cannot_loop_forever():
    s = _stats([])
    assert not should_stop(s, RULE, plain=False, taken=15)
    assert should_stop(s, RULE, plain=False, taken=16)


def test_complete_pairs_leave_out_a_pair_with_a_throttled_sample_and_an_unfinished_pair():
    samples = [
        {"side": "pr", "ms": 2.0, "reasons": 4},  # power cap: kept
        {"side": "base", "ms": 1.0, "reasons": 0},
        {"side": "base", "ms": 1.0, "reasons": 0x40},  # HW thermal slowdown: dropped
        {"side": "pr", "ms": 9.0, "reasons": 0},
        {"side": "base", "ms": 1.5, "reasons": None},
        {"side": "pr", "ms": 3.0, "reasons": None},
        {"side": "pr", "ms": 7.0, "reasons": 0},  # no partner yet
    ]
    pr, base, dropped = complete_pairs(samples)
    assert (pr, base, dropped) == ([2.0, 3.0], [1.0, 1.5], 1)


def test_the_rule_round_trips_through_the_environment_and_ignores_unknown_keys():
    rule = PairRule(threshold=0.05, floor_us=0.1, sampling=PairSampling(max_pairs=12))
    assert PairRule.from_json(rule.to_json()) == rule
    assert PairRule.from_json('{"threshold": 0.02, "future": 1}') == PairRule(threshold=0.02)


# A row timed by the plain fallback in an interleaved A/A on the H200 (aafull-pr-1,
# 2026-12-01, flash_attention_forward with dropout, µs per pair in pair order): one
# process ran ~17 % above the other for ten pairs on end after the two had swapped.
PLAIN_AA_PR = [246, 425, 406, 244, 242, 284, 284, 334, 343, 338, 352, 327, 313, 312]
PLAIN_AA_PR += [312, 311, 311, 311, 311, 298, 293, 283, 280, 280, 290, 283, 283, 287]
PLAIN_AA_BASE = [411, 430, 244, 237, 451, 455, 443, 445, 405, 250, 440, 243, 248, 253]
PLAIN_AA_BASE += [249, 239, 281, 244, 252, 382, 238, 241, 237, 242, 242, 242, 243, 244]


def _ms(us):
    return [x / 1000.0 for x in us]


def test_a_plain_rows_lasting_state_decides_pairs_but_not_block_medians():
    rule = PairRule()
    pr, base = _ms(PLAIN_AA_PR), _ms(PLAIN_AA_BASE)
    # as independent pairs the A/A reads slower beyond 2 % (the gate at 1dd781b, on the
    # unrounded samples: REGRESSION, +17.1 % [+3.1, +23.0])
    loose = replace(rule, threshold=0.02)
    assert decide(pair_stats(pr, base, rule.confidence), loose) == REGRESSION
    s = row_stats(pr, base, rule, plain=True)
    assert s.blocks == 7 and s.pairs == 28
    assert s.change_lo is not None and s.change_lo < 0 < rule.threshold < s.change_hi
    assert final_decision(s, rule) == final_decision(s, loose) == INCONCLUSIVE
    # a graph row's statistic is the pairs' own
    assert row_stats(pr, base, rule, plain=False) == pair_stats(pr, base, rule.confidence)


def test_a_plain_row_slower_in_every_block_is_a_regression_from_five_blocks():
    rule = PairRule()
    base = [0.240 + 0.004 * (i % 3) for i in range(32)]
    pr = [b * 1.40 for b in base]  # +40 % throughout
    assert decide(row_stats(pr[:19], base[:19], rule, True), rule) is None  # 4 blocks
    s = row_stats(pr[:20], base[:20], rule, True)
    assert s.blocks == 5 and decide(s, rule) == REGRESSION
    assert s.change_lo == pytest.approx(0.40) and s.delta_lo_us > 50
    # both sides stop there: decided, well inside the plain budget
    assert should_stop(s, rule, plain=True)
    assert not should_stop(row_stats(pr[:19], base[:19], rule, True), rule, plain=True)


def test_block_medians_leave_a_shorter_last_run_out_and_one_pair_blocks_are_pairs():
    pr, base = [0.11] * 10 + [0.5], [0.10] * 11
    s = block_stats(pr, base, 5, 0.9)
    assert s.pairs == 11 and s.blocks == 2 and s.change == pytest.approx(0.1)
    assert block_stats(pr, base, 1, 0.9) == pair_stats(pr, base, 0.9)


def test_a_row_is_plain_when_any_sample_says_so():
    assert not samples_plain([{"side": "pr", "ms": 1.0}, {"side": "base", "ms": 1.0}])
    assert samples_plain([{"side": "pr", "ms": 1.0}, {"side": "base", "ms": 1.0, "plain": True}])
    assert PairRule().block(True) == 4 and PairRule().block(False) == 1


# Another plain row of a full A/A on the H200 (aafull-v4-1, 2026-12-01, at 7d55b3f's
# block rule): the PR process's samples sat in the slower modes for the whole row.
WHOLE_ROW_PR = [334, 306, 308, 311, 455, 353, 435, 441, 448, 347]
WHOLE_ROW_PR += [467, 398, 441, 256, 264, 352, 451, 425, 398, 252]
WHOLE_ROW_BASE = [257, 341, 263, 250, 362, 321, 434, 396, 317, 262]
WHOLE_ROW_BASE += [255, 261, 313, 324, 257, 258, 255, 255, 255, 250]


def test_a_plain_row_is_judged_at_its_own_threshold_so_a_whole_row_state_is_no_regression():
    rule = PairRule()
    pr, base = _ms(WHOLE_ROW_PR), _ms(WHOLE_ROW_BASE)
    s = row_stats(pr, base, rule, plain=True)
    # every block slower beyond 3 %: the block rule alone called it a REGRESSION
    assert s.blocks == 5 and s.change_lo > 0.10
    assert decide(s, replace(rule, threshold_plain=rule.threshold)) == REGRESSION
    # at the plain threshold (25 %) the interval straddles: more pairs, then INCONCLUSIVE
    assert rule.threshold_for(True) == 0.25 and rule.threshold_for(False) == 0.03
    assert decide(s, rule) is None and final_decision(s, rule) == INCONCLUSIVE
    # a graph row's statistic never takes the plain threshold
    assert decide(row_stats(pr, base, rule, plain=False), rule) == REGRESSION
    # a plain threshold below the row's own threshold does not loosen it
    assert replace(rule, threshold=0.3).threshold_for(True) == 0.3


# A replay A/A on an H100 (2026-12-06, thirty-second session, aa-1): amax's two-launch
# row, PR and base the same binary, pairs AB BA AB BA ...; the first sample of each pair
# is ~7 % slower, whichever side (µs per call).
REPLAY_AA_PR = [8.32, 7.90, 8.45, 7.71, 8.53, 7.74, 8.53, 7.84]
REPLAY_AA_PR += [8.32, 7.90, 8.42, 7.90, 8.32, 7.73, 8.35, 7.82]
REPLAY_AA_BASE = [7.92, 8.30, 7.82, 8.30, 7.82, 8.34, 8.02, 8.32]
REPLAY_AA_BASE += [7.90, 8.29, 7.82, 8.48, 7.81, 8.30, 7.73, 8.45]


def test_a_replayed_rows_balanced_blocks_cancel_the_first_sample_and_decide_it():
    rule = PairRule()
    pr, base = _ms(REPLAY_AA_PR), _ms(REPLAY_AA_BASE)
    # per pair: +-7 % by turns, still undecided after 16 pairs (INCONCLUSIVE on the H100)
    per_pair = row_stats(pr, base, rule, plain=False)
    assert per_pair.change_lo < -0.03 and per_pair.change_hi > 0.03
    assert final_decision(per_pair, rule) == INCONCLUSIVE
    # over blocks of AB + BA: decided PASS at 10 pairs, the interval within +-1 %
    assert decide(row_stats(pr[:9], base[:9], rule, False, replayed=True), rule) is None
    s = row_stats(pr[:10], base[:10], rule, False, replayed=True)
    assert REPLAY_BLOCK_PAIRS == 2 and s.pairs == 10 and s.blocks == 5
    assert -0.01 < s.change_lo < s.change_hi < 0.01
    assert decide(s, rule) == PASS and should_stop(s, rule, plain=False)


def test_a_replayed_row_is_judged_at_the_graph_threshold_not_the_plain_one():
    rule = PairRule()
    base = [0.010] * 20
    pr = [0.0108] * 20  # +8 %: a REGRESSION at 3 %, a PASS at the plain 25 %
    s = row_stats(pr, base, rule, False, replayed=True)
    assert s.blocks == 10 and not s.plain
    assert decide(s, rule) == REGRESSION
    plain = row_stats(pr, base, rule, True)
    assert plain.plain and plain.blocks == 5 and decide(plain, rule) == PASS


@pytest.mark.parametrize(
    ("call_ms", "reps"),
    [(0.01, 10), (0.5, 10), (0.6, 9), (1.0, 5), (2.4, 3), (2.5, 2), (5.0, 1), (700.0, 1)],
)
def test_a_replayed_sample_takes_calls_spanning_the_target_within_one_and_ten(call_ms, reps):
    assert sample_reps(call_ms) == reps
    assert sample_reps(call_ms, target_ms=None) == REPLAY_REPS  # no target: always reps
    assert sample_reps(call_ms, 3) == min(3, reps)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_a_probe_that_is_no_positive_time_keeps_every_call(bad):
    assert sample_reps(bad) == REPLAY_REPS
