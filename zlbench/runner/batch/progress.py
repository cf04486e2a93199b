"""Progress lines of a batch and its final count table (strings), and :func:`say`,
which writes one to the batch's progress stream."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from zlbench.models import OpStatus, RunStatus
from zlbench.models.batch import SystemicFailure

FAILING = (RunStatus.FAIL, RunStatus.TIMEOUT, RunStatus.CRASH, RunStatus.ERROR)
MAX_LISTED = 40  # failing ops named at the end of a batch


def say(stream: TextIO | None, line: str) -> None:
    """Write ``line`` to ``stream`` at once (None: silent)."""
    if stream is not None:
        stream.write(line + "\n")
        stream.flush()


def fmt_seconds(seconds: float) -> str:
    """``75.2`` -> ``"1m15s"``; ``3725`` -> ``"1h02m05s"``; below a minute ``"12.3s"``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


def eta(elapsed_s: float, done: int, total: int) -> float | None:
    """Remaining seconds, from the mean wall time per finished op so far."""
    if done <= 0 or done > total:
        return None
    return elapsed_s / done * (total - done)


def corrected_eta(elapsed_s: float, done_expected_s: float, left_expected_s: float) -> float | None:
    """Remaining wall seconds that correct themselves from what was measured: the
    expected seconds of the ops left (the baseline's recorded op seconds, or an
    estimate), scaled by the wall seconds the done ops took per expected second
    (``elapsed_s / done_expected_s``). Recorded seconds that undercount 3x (an H100
    gate's flash_attention_forward: 110.7 s measured, 35.1 s recorded) make the
    ETA 3x the recorded one after the first ops, where an ETA from the recorded seconds
    alone stays 3x short; several GPUs or processes at once are in the wall time.
    None before any expected second is done."""
    if done_expected_s <= 0 or left_expected_s < 0 or elapsed_s < 0:
        return None
    return left_expected_s * elapsed_s / done_expected_s


@dataclass
class Expected:
    """What the done lines' ETA is corrected from: each op's expected seconds
    (:class:`zlbench.runner.batch.costs.OpCosts`), and of the ops done so far their
    expected and measured seconds."""

    seconds: dict[str, float] = field(default_factory=dict)
    done_expected_s: float = 0.0
    done_measured_s: float = 0.0

    @property
    def left_s(self) -> float:
        """The expected seconds of the ops left."""
        return max(0.0, sum(self.seconds.values()) - self.done_expected_s)

    def op_done(self, key: str, measured_s: float) -> None:
        self.done_expected_s += self.seconds.get(key, 0.0)
        self.done_measured_s += measured_s

    def eta(self, elapsed_s: float) -> float | None:
        return corrected_eta(elapsed_s, self.done_expected_s, self.left_s)

    def ratio(self) -> float | None:
        """Measured op seconds per expected one, of the ops done (None: none)."""
        if self.done_expected_s <= 0:
            return None
        return self.done_measured_s / self.done_expected_s


SLOWER_NOTE = 1.25  # a measured/recorded ratio this far from 1 is named on the line


def done_line(
    st: OpStatus, done: int, total: int, elapsed_s: float, expected: Expected | None = None
) -> str:
    """``[3/40] PASS    main/abs 12.3s rows=5 ETA 1m20s``; with ``expected`` the ETA
    is :func:`corrected_eta`'s and a measured/recorded ratio far from 1 is named
    (``ETA 11m58s, ops x3.1 their recorded seconds``), else the mean per done op's."""
    width = len(str(total))
    rest = expected.eta(elapsed_s) if expected is not None else None
    if rest is None:
        rest = eta(elapsed_s, done, total)
    ratio = expected.ratio() if expected is not None else None
    far = ratio is not None and (ratio >= SLOWER_NOTE or ratio <= 1 / SLOWER_NOTE)
    note = f", ops x{ratio:.1f} their recorded seconds" if far and done < total else ""
    tail = f" ETA {fmt_seconds(rest)}{note}" if rest else ""
    retry = f" attempts={st.attempts}" if st.attempts > 1 else ""
    dtype = f" dtype={st.dtype_used}" if st.dtype_used else ""
    return (
        f"[{done:>{width}}/{total}] {st.status.value:<7} {st.repo}/{st.run_name} "
        f"{st.seconds:.1f}s rows={st.rows}{dtype}{retry}{tail}"
    )


def merged_line(st: OpStatus, parts: int) -> str:
    """``        PASS    main/topk rows=14 from 4 row parts, 41.0s of op time``."""
    return (
        f"        {st.status.value:<7} {st.repo}/{st.run_name} rows={st.rows} "
        f"from {parts} row parts, {st.seconds:.1f}s of op time"
    )


def retry_line(repo: str, run_name: str, status: OpStatus, what: str, why: str) -> str:
    return f"        {status.status.value:<7} {repo}/{run_name} -> {what} ({why})"


def count_table(statuses: list[OpStatus], rows: int, wall_s: float) -> str:
    """Final table: one line per status that occurred, then the totals."""
    counts = count_statuses(statuses)
    lines = ["status    ops"]
    lines += [f"{k:<8} {v:>4}" for k, v in counts.items() if v]
    lines.append(f"{'total':<8} {len(statuses):>4}   rows={rows}   wall {fmt_seconds(wall_s)}")
    return "\n".join(lines)


def count_statuses(statuses: list[OpStatus]) -> dict[str, int]:
    counts = {s.value: 0 for s in RunStatus}
    for st in statuses:
        counts[st.status.value] += 1
    return counts


def ending_lines(statuses: list[OpStatus], systemic: list[SystemicFailure]) -> list[str]:
    """After the count table: the systemic failures, then the failing ops by name."""
    lines = [f"SYSTEMIC: {f.line}" for f in systemic]
    bad = [s for s in statuses if s.status in FAILING]
    if bad:
        lines.append(f"failing ops ({len(bad)}):")
        for st in bad[:MAX_LISTED]:
            why = st.signature or st.note
            lines.append(f"  {st.status.value:<7} {st.repo}/{st.run_name}  {why[:120]}")
        if len(bad) > MAX_LISTED:
            lines.append(f"  ... and {len(bad) - MAX_LISTED} more (ops_status.csv)")
    return lines
