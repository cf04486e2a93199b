"""gpu_turns.csv read back (zlbench.runner.batch.turns): parsing that survives torn
lines, the per-GPU sums, the overlap check and the progress line."""

from __future__ import annotations

import pytest

from zlbench.protocol.turn import TURN_LOG_HEADER
from zlbench.runner.batch.turns import GpuTurns, Turn, parse_turns, summarize_turns, turns_lines


def test_parse_turns_skips_the_header_and_malformed_or_partial_lines():
    text = "\n".join(
        [
            TURN_LOG_HEADER,
            "0,101,10.000000,10.500000,0.250000",
            "0,102,10.5,11.0",  # a process killed mid-write: 4 fields
            "0,10x,11.0,11.5,0.0",  # pid not a number
            "0,103,11.0,11.5,",  # the last field cut off
            "garbage",
            "",
            "1,104,12.0,12.25,0.0,extra",  # 6 fields
            "  1,105,12.5,13.0,1.5  ",  # surrounding blanks are fine
        ]
    )
    assert parse_turns(text) == [
        Turn("0", 101, 10.0, 10.5, 0.25),
        Turn("1", 105, 12.5, 13.0, 1.5),
    ]
    assert parse_turns("") == [] and parse_turns(TURN_LOG_HEADER + "\n") == []


def test_an_empty_gpu_field_is_the_default_gpu():
    (t,) = parse_turns(",7,1.0,2.0,0.5\n")
    assert t == Turn("", 7, 1.0, 2.0, 0.5)
    (g,) = summarize_turns([t])
    assert turns_lines([g], 4.0) == [
        "gpu turns: GPU default: 1 processes, 1 turns, timing 1.0 s of 4.0 s wall (25%), "
        "waited 0.5 s, 0 overlapping"
    ]


def test_summarize_sums_per_gpu_in_gpu_order():
    turns = [
        Turn("1", 7, 0.0, 2.0, 0.0),
        Turn("0", 5, 1.0, 1.5, 0.25),
        Turn("0", 6, 1.5, 2.5, 0.5),  # begins exactly as the previous ends: no overlap
        Turn("0", 5, 3.0, 3.25, 1.0),
    ]
    assert summarize_turns(turns) == [
        GpuTurns(gpu="0", turns=3, processes=2, busy_s=1.75, wait_s=1.75, overlaps=0),
        GpuTurns(gpu="1", turns=1, processes=1, busy_s=2.0, wait_s=0.0, overlaps=0),
    ]
    assert summarize_turns([]) == []


def test_an_overlapping_pair_of_turns_is_counted_whatever_the_log_order():
    a, b = Turn("0", 5, 1.0, 2.0, 0.0), Turn("0", 6, 1.9, 3.0, 0.0)
    other_gpu = Turn("1", 7, 1.5, 2.5, 0.0)  # overlaps in time, but on another GPU
    for turns in ([a, b, other_gpu], [other_gpu, b, a]):
        g0, g1 = summarize_turns(turns)
        assert (g0.gpu, g0.overlaps, g0.turns) == ("0", 1, 2)
        assert (g1.gpu, g1.overlaps) == ("1", 0)


def test_a_turn_inside_a_long_one_overlaps_it_and_so_does_the_next():
    long = Turn("0", 5, 0.0, 10.0, 0.0)
    inner = Turn("0", 6, 2.0, 3.0, 0.0)
    later = Turn("0", 7, 4.0, 5.0, 0.0)  # after inner, still inside long
    (g,) = summarize_turns([long, inner, later])
    assert g.overlaps == 2


def test_turns_lines_carry_the_numbers():
    summary = [
        GpuTurns(gpu="0", turns=98, processes=3, busy_s=41.2, wait_s=60.1, overlaps=0),
        GpuTurns(gpu="1", turns=12, processes=2, busy_s=5.0, wait_s=0.0, overlaps=1),
    ]
    lines = turns_lines(summary, 52.0)
    assert lines == [
        "gpu turns: GPU 0: 3 processes, 98 turns, timing 41.2 s of 52.0 s wall (79%), "
        "waited 60.1 s, 0 overlapping",
        "gpu turns: GPU 1: 2 processes, 12 turns, timing 5.0 s of 52.0 s wall (10%), "
        "waited 0.0 s, 1 overlapping",
    ]


@pytest.mark.parametrize("wall", [0.0, -1.0])
def test_turns_lines_without_a_wall_time_give_no_share(wall):
    (line,) = turns_lines([GpuTurns("0", 1, 1, 1.0, 0.0, 0)], wall)
    assert "wall," in line and "%" not in line


def test_lines_of_seven_fields_carry_the_kind_and_the_op_and_old_lines_are_timed():
    from zlbench.protocol.turn import OLD_TURN_LOG_HEADER

    text = "\n".join(
        [
            OLD_TURN_LOG_HEADER,  # a resumed batch: the old header, then both kinds of line
            "0,101,10.0,10.5,0.25",
            TURN_LOG_HEADER,
            "0,102,11.0,11.5,0.5,timed,abs",
            "0,103,12.0,140.0,0.0,shared,mm__at__test_mm.py",
            "0,104,12.0,13.0,0.0,other,abs",  # not a kind: skipped
            "0,105,13.0,14.0,0.0,shared",  # a torn line: 6 fields
        ]
    )
    assert parse_turns(text) == [
        Turn("0", 101, 10.0, 10.5, 0.25),
        Turn("0", 102, 11.0, 11.5, 0.5, "timed", "abs"),
        Turn("0", 103, 12.0, 140.0, 0.0, "shared", "mm__at__test_mm.py"),
    ]


def test_a_shared_hold_is_no_turn_and_the_longest_is_named():
    turns = [
        Turn("0", 5, 0.0, 1.0, 0.0),
        Turn("0", 6, 1.0, 3.0, 0.0, "shared", "abs"),
        Turn("0", 7, 3.0, 128.0, 0.0, "shared", "mm"),  # overlaps nothing it is not
        Turn("0", 5, 128.0, 129.0, 125.0, "timed", "sum"),
    ]
    (g,) = summarize_turns(turns)
    assert (g.turns, g.busy_s, g.wait_s, g.overlaps) == (2, 2.0, 125.0, 0)
    assert (g.shared_max_s, g.shared_max_op) == (125.0, "mm")
    assert turns_lines([g], 200.0) == [
        "gpu turns: GPU 0: 1 processes, 2 turns, timing 2.0 s of 200.0 s wall (1%), "
        "waited 125.0 s, 0 overlapping, longest shared hold 125.0 s (mm)"
    ]


def test_runs_are_cut_at_long_silences_and_idle_stretches_are_between_timings():
    from zlbench.runner.batch.turns import idle_stretches, split_runs

    a = [Turn("0", 5, 0.0, 1.0, 0.0), Turn("0", 6, 1.0, 40.0, 0.0, "shared", "mm")]
    a += [Turn("0", 5, 40.0, 41.0, 39.0), Turn("0", 7, 45.0, 46.0, 0.0)]
    b = [Turn("0", 8, 5000.0, 5001.0, 0.0)]  # the next device call, an hour later
    runs = split_runs(list(reversed(a + b)))
    assert [len(r) for r in runs] == [4, 1] and runs[0][0].start == 0.0
    assert idle_stretches(runs[0], 20.0) == [(1.0, 40.0)]  # the shared hold's stretch
    assert idle_stretches(runs[0], 3.0) == [(1.0, 40.0), (41.0, 45.0)]
    assert idle_stretches(runs[1], 1.0) == [] and split_runs([]) == []
