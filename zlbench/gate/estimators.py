"""Estimators: the number a row is judged on (current vs baseline).

All pure functions over rows. The estimator in force comes from the thresholds
(``ThresholdDefaults.estimator`` in zlbench/models/baseline.py is the one default, chosen from the
H200 A/A runs: docs/judging.md).

* ``ratio``: current speedup / baseline speedup (speedup = torch latency /
  FlagGems latency, so a uniformly slower machine cancels out).
* ``torch_normalized``: baseline FlagGems latency / current FlagGems latency,
  times the run's overall torch drift (median over all matched rows of
  current / baseline torch latency). A single row's torch-side noise drops out;
  a machine-wide slowdown still cancels.
* median of repeats: when confirmation samples exist, a row is judged on the
  median of the estimator over all of its samples (:func:`median`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from enum import Enum
from statistics import median

from zlbench.models import Row, RowKey


class Estimator(str, Enum):
    RATIO = "ratio"
    TORCH_NORMALIZED = "torch_normalized"


def positive(x: float | None) -> bool:
    """A usable measurement: a finite number above zero."""
    return x is not None and math.isfinite(x) and x > 0


def plain_ratio(base: Row, cur: Row) -> float | None:
    if not (positive(base.speedup) and positive(cur.speedup)):
        return None
    return cur.speedup / base.speedup


def torch_drift(pairs: Iterable[tuple[Row, Row]]) -> float:
    """Median over the pairs of current / baseline torch latency (1.0 if none).

    The median, not a mean: one torch row that jumped (a host hiccup, a clock
    change in the middle of one measurement) must not move every other row."""
    drifts = [
        cur.latency_base_ms / base.latency_base_ms
        for base, cur in pairs
        if positive(base.latency_base_ms) and positive(cur.latency_base_ms)
    ]
    return median(drifts) if drifts else 1.0


def normalized_ratio(base: Row, cur: Row, drift: float) -> float | None:
    if not (positive(base.latency_ms) and positive(cur.latency_ms)):
        return plain_ratio(base, cur)
    return base.latency_ms / cur.latency_ms * drift


def estimate(
    estimator: Estimator | str,
    pairs: Mapping[RowKey, tuple[Row, Row]],
    drift: float | None = None,
) -> dict[RowKey, float | None]:
    """The estimator's value for every (baseline, current) pair of one run.

    ``drift``: the machine's torch drift to use instead of the one of ``pairs``.
    A confirmation pass re-measures only the flagged ops: a median over those few
    rows is just their own torch noise, so it is judged with the drift of the full
    run it confirms (measured minutes earlier on the same machine)."""
    if Estimator(estimator) is Estimator.TORCH_NORMALIZED:
        if drift is None:
            drift = torch_drift(pairs.values())
        return {k: normalized_ratio(b, c, drift) for k, (b, c) in pairs.items()}
    return {k: plain_ratio(b, c) for k, (b, c) in pairs.items()}


def geomean(values: Iterable[float]) -> float | None:
    xs = [x for x in values if positive(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
