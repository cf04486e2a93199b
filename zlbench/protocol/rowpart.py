"""Which rows a row part measures: shared by the runner, which cuts an op into parts
(:mod:`zlbench.runner.batch.parts`), and the plugins, which skip the other rows."""

from __future__ import annotations

from collections.abc import Sequence


def keeps_row(index: int, part: Sequence[int] | None) -> bool:
    """Whether the row at ``index`` (0-based, within its benchmark op and dtype) belongs
    to ``part`` (``(k, n)``, k 1-based; None: the whole op)."""
    if not part:
        return True
    k, n = part
    return index % n == k - 1
