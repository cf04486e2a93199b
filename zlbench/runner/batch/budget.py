"""The time budget of a batch, from the recorded durations of its ops.

Why: a gate under a broken compiler must fail in about the time a good gate takes,
not meet the CI job's timeout (docs/architecture.md, "Fail fast"). A batch given
recorded durations (``BatchConfig.durations``, e.g. the baseline's ops_status.csv)
and ``budget_factor`` stops measuring after ``factor`` times its expected wall time
(the busiest GPU's op costs plus process starts, :func:`~.costs.shard_wall`) plus
one process start of slack; the ops not measured by then are ERROR
``NOT MEASURED: the time budget ... was spent`` (never PASS). Without any
recorded duration there is no budget: a guess must not cut a good run short.

Pure.
"""

from __future__ import annotations

from zlbench.runner.batch.costs import PROCESS_START_S, OpCosts, shard_wall

DEFAULT_BUDGET_FACTOR = 3.0


def budget_seconds(
    costs: OpCosts,
    gpu_bins: list[list[str]],
    factor: float,
    per_process: int | None = None,
) -> float | None:
    """``factor`` x the expected wall time + one process start; None when no op of
    the bins has a recorded duration."""
    keys = [k for ops in gpu_bins for k in ops]
    if not any(k in costs.recorded for k in keys):
        return None
    wall = shard_wall(gpu_bins, costs.seconds, per_process)
    return round(factor * wall + PROCESS_START_S, 1)
