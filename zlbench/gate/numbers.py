"""The numbers a row verdict carries besides the judged ratio (pure): latencies in
µs, the uncorrected kernel time change and the judged change, all with one sign
(+ = more time, slower), and the rule that a current latency must be a usable
number (docs/reports.md)."""

from __future__ import annotations

from zlbench.gate.estimators import positive
from zlbench.models import Row, RowVerdict


def pct(x: float | None, digits: int = 1) -> str:
    """A signed relative change: ``+20.0 %``."""
    return "n/a" if x is None else f"{x * 100:+.{digits}f} %"


def counted(n: int, word: str) -> str:
    """``1 round``, ``3 rounds``: a count with its noun (plural by ``s``)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000.0


def change(new: float | None, old: float | None) -> float | None:
    """``new / old - 1`` (+ = more time), None unless both are usable."""
    return new / old - 1.0 if positive(new) and positive(old) else None


def inverse_change(ratio: float | None) -> float | None:
    """The time change of a speed ratio: ``1 / ratio - 1``."""
    return 1.0 / ratio - 1.0 if positive(ratio) else None


def with_latencies(v: RowVerdict, base: Row | None, cur: Row | None) -> RowVerdict:
    """``v`` with the rows' latencies in µs, the uncorrected kernel time change and
    whether either row was timed by the plain fallback (``Row.no_cudagraph``)."""
    if base is not None:
        v.baseline_us, v.baseline_torch_us = us(base.latency_ms), us(base.latency_base_ms)
    if cur is not None:
        v.current_us, v.current_torch_us = us(cur.latency_ms), us(cur.latency_base_ms)
    v.kernel_change = change(v.current_us, v.baseline_us)
    sides = [
        side
        for side, row in (("baseline", base), ("current", cur))
        if row is not None and row.no_cudagraph
    ]
    v.plain_timed, v.plain_timed_in = bool(sides), sides
    return v


def unusable_latency(cur: Row) -> str:
    """Why ``cur``'s latencies are no measurement ("" when both are positive and finite):
    such a row is FAILED whatever its speedup says."""
    for name, x in (("FlagGems", cur.latency_ms), ("torch", cur.latency_base_ms)):
        if not positive(x):
            return f"current {name} latency not usable ({x})"
    return ""
