"""A row's usual noise across commits (pure): rustc-perf's significance threshold.

The threshold of a series is ``Q3 + 3 * IQR`` of the absolute relative changes
between consecutive commits' values, over the last :data:`WINDOW` of them
(rustc-perf's ``comparison.rs``: an outlier fence on the deltas). A change is then
read as ``change / threshold``, rustc-perf's "significance factor": above 1, beyond
what the row usually moves from one commit to the next. docs/history.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 30  # the last deltas the threshold is over
MIN_POINTS = 10  # a row with fewer points has no usual noise (too little history)


@dataclass(frozen=True)
class Noise:
    """A row's usual noise: ``threshold`` (relative, 0.02 = 2 %) over ``deltas``
    commit-to-commit changes of ``points`` values."""

    threshold: float
    deltas: int
    points: int

    def factor(self, change: float | None) -> float | None:
        """``change / threshold`` (+ slower), None without a change; a threshold of
        0 (a row that never moved) gives None rather than infinity."""
        if change is None or self.threshold <= 0:
            return None
        return change / self.threshold


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, type 7)."""
    pos = (len(sorted_xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def deltas(values: Sequence[float | None]) -> list[float]:
    """|v[i] / v[i-1] - 1| for consecutive known, positive values (a missing value
    joins its neighbours: the next known value is compared with the last one)."""
    out, prev = [], None
    for v in values:
        if v is None or v <= 0:
            continue
        if prev is not None:
            out.append(abs(v / prev - 1.0))
        prev = v
    return out


def usual_noise(values: Sequence[float | None], min_points: int = MIN_POINTS) -> Noise | None:
    """The usual noise of a series of values in commit order (oldest first), or None
    when fewer than ``min_points`` values are known."""
    known = [v for v in values if v is not None and v > 0]
    if len(known) < min_points:
        return None
    ds = sorted(deltas(known)[-WINDOW:])
    q1, q3 = _quantile(ds, 0.25), _quantile(ds, 0.75)
    return Noise(threshold=q3 + 3.0 * (q3 - q1), deltas=len(ds), points=len(known))
