"""What the GPUs' turns of a shared batch show (``--gpu-share N``, docs/screening.md).

``<batch>/gpu_turns.csv`` holds one line per turn a benchmark process took
(:mod:`zlbench.protocol.turn`). Per GPU: the seconds some process was timing
(its **busy** share of the batch's wall: how close the batch came to the GPU's
limit), the turns, the seconds processes waited for one, and how many pairs of
turns overlapped (0 unless the turn is broken: the check that sharing never let
two processes time at once), and the longest shared hold the processes logged (one
second or more in the shared turn, during which no other process could time: the GPU
idle unless that process used it). Pure: parses text, returns values and a line. A
process killed in the middle of writing its line leaves a partial line that the
next process's line is appended to; that one line is skipped, so its turn is
missing from the sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from zlbench.protocol.turn import OLD_TURN_LOG_HEADER, SHARED, TIMED, TURN_LOG_HEADER

KINDS = (TIMED, SHARED)


@dataclass(frozen=True)
class Turn:
    gpu: str
    pid: int
    start: float
    end: float
    wait_s: float
    kind: str = TIMED  # SHARED: a long shared hold (no one else could time)
    op: str = ""  # the run name in flight ("" in logs before 2026-12-02)

    @property
    def held_s(self) -> float:
        """How long the turn (or the shared hold) was held."""
        return self.end - self.start


@dataclass(frozen=True)
class GpuTurns:
    gpu: str
    turns: int
    processes: int
    busy_s: float  # seconds some process held the turn
    wait_s: float  # seconds processes waited for it, summed over processes
    overlaps: int  # turns that began before the previous one ended (must be 0)
    shared_max_s: float = 0.0  # the longest shared hold logged (the GPU left idle)
    shared_max_op: str = ""  # whose it was


def parse_turns(text: str) -> list[Turn]:
    """The turns and long shared holds of a ``gpu_turns.csv`` (header optional; lines
    of 5 fields, as logs before 2026-12-02 wrote them, are timed turns); malformed lines
    (a process killed mid-write) are skipped."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(",")
        if line.strip() in (TURN_LOG_HEADER, OLD_TURN_LOG_HEADER) or len(parts) not in (5, 7):
            continue
        kind, op = (parts[5], parts[6]) if len(parts) == 7 else (TIMED, "")
        if kind not in KINDS:
            continue
        try:
            gpu, pid, start, end, wait = parts[0], int(parts[1]), *map(float, parts[2:5])
        except ValueError:
            continue
        out.append(Turn(gpu, pid, start, end, wait, kind, op))
    return out


def summarize_turns(turns: list[Turn]) -> list[GpuTurns]:
    """One :class:`GpuTurns` per GPU, in GPU order."""
    out = []
    for gpu in sorted({t.gpu for t in turns}):
        shared = [t for t in turns if t.gpu == gpu and t.kind == SHARED]
        longest = max(shared, key=lambda t: t.held_s, default=None)
        mine = sorted(
            (t for t in turns if t.gpu == gpu and t.kind == TIMED), key=lambda t: (t.start, t.end)
        )
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
                busy_s=sum(t.held_s for t in mine),
                wait_s=sum(t.wait_s for t in mine),
                overlaps=overlaps,
                shared_max_s=longest.held_s if longest else 0.0,
                shared_max_op=longest.op if longest else "",
            )
        )
    return out


def turns_lines(summary: list[GpuTurns], wall_s: float) -> list[str]:
    """``gpu turns: GPU 0: 3 processes, 98 turns, timing 41.2 s of 52.0 s wall (79 %),
    waited 60.1 s, 0 overlapping``: one line per GPU; ``, longest shared hold 4.2 s
    (mm)`` after it when one was logged."""
    lines = []
    for g in summary:
        share = f" ({g.busy_s / wall_s:.0%})" if wall_s > 0 else ""
        held = ""
        if g.shared_max_s:
            held = f", longest shared hold {g.shared_max_s:.1f} s ({g.shared_max_op or '-'})"
        lines.append(
            f"gpu turns: GPU {g.gpu or 'default'}: {g.processes} processes, {g.turns} turns, "
            f"timing {g.busy_s:.1f} s of {wall_s:.1f} s wall{share}, waited {g.wait_s:.1f} s, "
            f"{g.overlaps} overlapping{held}"
        )
    return lines


def split_runs(turns: list[Turn], gap_s: float = 600.0) -> list[list[Turn]]:
    """The log's turns (of all kinds) in start order, cut where no turn began or ended
    for ``gap_s``: one list per batch run (a resumed pass appends a device call's turns
    to the same file)."""
    out: list[list[Turn]] = []
    last_end = float("-inf")
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        if not out or t.start - last_end > gap_s:
            out.append([])
        out[-1].append(t)
        last_end = max(last_end, t.end)
    return out


def idle_stretches(turns: list[Turn], min_s: float) -> list[tuple[float, float]]:
    """(start, end) of each stretch of ``min_s`` or longer between the first and the last
    timed turn of ``turns`` in which no timed turn ran: the GPU not timing."""
    out, last_end = [], None
    for t in sorted((t for t in turns if t.kind == TIMED), key=lambda t: (t.start, t.end)):
        if last_end is not None and t.start - last_end >= min_s:
            out.append((last_end, t.start))
        last_end = t.end if last_end is None else max(last_end, t.end)
    return out


__all__ = [
    "GpuTurns",
    "Turn",
    "idle_stretches",
    "parse_turns",
    "split_runs",
    "summarize_turns",
    "turns_lines",
]
