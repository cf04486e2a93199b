"""A judged row's history for the gate's report: its usual noise across the commits
the store holds and its change divided by it (rustc-perf's significance factor).

:func:`row_context` is pure (a row's past values and its change in); :func:`gate_context`
reads the series of the judged rows from a store. The renderers get the result as
optional data (:class:`zlbench.models.history.RowHistory` by row label).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from zlbench.gate.accept import judged_change
from zlbench.gate.noise import MIN_POINTS, WINDOW, usual_noise
from zlbench.history.record import row_name
from zlbench.models.history import DEFAULT_BRANCH, RowHistory, SeriesPoint
from zlbench.models.verdict import RowVerdict


def row_context(
    past: Sequence[SeriesPoint], change: float | None, min_points: int = MIN_POINTS
) -> RowHistory | None:
    """The row's usual noise over ``past`` (oldest first) and ``change`` / noise;
    None with fewer than ``min_points`` known values."""
    noise = usual_noise([p.value_us for p in past], min_points)
    if noise is None:
        return None
    return RowHistory(
        points=noise.points,
        noise=noise.threshold,
        factor=noise.factor(change),
        first_commit=past[0].commit,
        last_commit=past[-1].commit,
    )


def gate_context(
    store, rows: Iterable[RowVerdict], *, branch: str = DEFAULT_BRANCH
) -> dict[str, RowHistory]:
    """Row label -> its history context, for the judged rows with enough history
    (the last :data:`~zlbench.gate.noise.WINDOW` + 1 points of each row's series)."""
    out = {}
    for r in rows:
        change = judged_change(r)
        if r.current_us is None and change is None:
            continue  # nothing measured to compare
        name = row_name(r)
        ctx = row_context(store.series(name, branch=branch, last=WINDOW + 1), change)
        if ctx is not None:
            out[name] = ctx
    return out
