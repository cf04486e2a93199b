"""What the GPUs' turns of a shared batch show (``--gpu-share N``, docs/screening.md).

``<batch>/gpu_turns.csv`` holds one line per turn a benchmark process took
(:mod:`zlbench.protocol.turn`). Per GPU: the seconds some process was timing
(its **busy** share of the batch's wall: how close the batch came to the GPU's
limit), the turns, the seconds processes waited for one, and how many pairs of
turns overlapped (0 unless the turn is broken: the check that sharing never let
two processes time at once). Pure: parses text, returns values and a line. A
process killed in the middle of writing its line leaves a partial line that the
next process's line is appended to; that one line is skipped, so its turn is
missing from the sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from zlbench.protocol.turn import TURN_LOG_HEADER


@dataclass(frozen=True)
class Turn:
    gpu: str
    pid: int
    start: float
    end: float
    wait_s: float


@dataclass(frozen=True)
class GpuTurns:
    gpu: str
    turns: int
    processes: int
    busy_s: float  # seconds some process held the turn
    wait_s: float  # seconds processes waited for it, summed over processes
    overlaps: int  # turns that began before the previous one ended (must be 0)


def parse_turns(text: str) -> list[Turn]:
    """The turns of a ``gpu_turns.csv`` (header optional); malformed lines (a
    process killed mid-write) are skipped."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(",")
        if len(parts) != 5 or line.strip() == TURN_LOG_HEADER:
            continue
        try:
            gpu, pid, start, end, wait = parts[0], int(parts[1]), *map(float, parts[2:])
        except ValueError:
            continue
        out.append(Turn(gpu, pid, start, end, wait))
    return out


def summarize_turns(turns: list[Turn]) -> list[GpuTurns]:
    """One :class:`GpuTurns` per GPU, in GPU order."""
    out = []
    for gpu in sorted({t.gpu for t in turns}):
        mine = sorted((t for t in turns if t.gpu == gpu), key=lambda t: (t.start, t.end))
        overlaps, last_end = 0, float("-inf")
        for t in mine:
            if t.start < last_end:
                overlaps += 1
            last_end = max(last_end, t.end)
        out.append(
            GpuTurns(
                gpu=gpu,
                turns=len(mine),
                processes=len({t.pid for t in mine}),
                busy_s=sum(t.end - t.start for t in mine),
                wait_s=sum(t.wait_s for t in mine),
                overlaps=overlaps,
            )
        )
    return out


def turns_lines(summary: list[GpuTurns], wall_s: float) -> list[str]:
    """``gpu turns: GPU 0: 3 processes, 98 turns, timing 41.2 s of 52.0 s wall (79 %),
    waited 60.1 s, 0 overlapping``: one line per GPU."""
    lines = []
    for g in summary:
        share = f" ({g.busy_s / wall_s:.0%})" if wall_s > 0 else ""
        lines.append(
            f"gpu turns: GPU {g.gpu or 'default'}: {g.processes} processes, {g.turns} turns, "
            f"timing {g.busy_s:.1f} s of {wall_s:.1f} s wall{share}, waited {g.wait_s:.1f} s, "
            f"{g.overlaps} overlapping"
        )
    return lines


__all__ = ["GpuTurns", "Turn", "parse_turns", "summarize_turns", "turns_lines"]
