"""Which rows a row part or a row pick measures: shared by the runner, which cuts an op
into parts or picks its rows (:mod:`zlbench.runner.batch.parts`), and the plugins,
which skip the other rows; and what share of an op's recorded seconds its picks cost
(the batch's forecast and the replay plan's)."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def picks_row(
    group: tuple[str, str], index: int, picks: Collection[tuple[str, str, int]] | None
) -> bool:
    """Whether the row at ``index`` of ``group`` (its benchmark op and dtype) is one of
    ``picks`` (``(op, dtype, index)``; None: every row is)."""
    return picks is None or (*group, index) in picks


def keeps_row(index: int, part: Sequence[int] | None) -> bool:
    """Whether the row at ``index`` (0-based, within its benchmark op and dtype) belongs
    to ``part`` (``(k, n)``, k 1-based; None: the whole op)."""
    if not part:
        return True
    k, n = part
    return index % n == k - 1


def picked_share(picked: int, rows: int) -> float:
    """The share of an op's recorded seconds that ``picked`` of its ``rows`` rows cost
    (by count: the rows' own seconds are not recorded); 1 for an op of no rows."""
    return min(1.0, picked / rows) if rows > 0 else 1.0
