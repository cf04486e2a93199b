"""Expected wall time per shard before measuring, and the shard count for a target wall time.

Pure: takes :class:`zlbench.runner.batch.costs.OpCosts`, returns values and strings.
A shard's ops are dealt over its GPUs exactly as the batch will deal them
(:func:`zlbench.runner.batch.balance.gpu_bins`), so the forecast is the plan the
batch runs, only its durations are expectations (docs/screening.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from zlbench.errors import ZlbenchError
from zlbench.runner.batch.balance import SHARD_SALT, gpu_bins, lpt_bins
from zlbench.runner.batch.costs import OpCosts, shard_wall
from zlbench.runner.batch.progress import fmt_seconds

MAX_SHARDS = 256  # the most shards suggest_shards tries


@dataclass(frozen=True)
class ShardForecast:
    shard: int  # 1-based
    ops: int
    estimated: int  # ops whose cost is an estimate (no recorded duration)
    op_seconds: float  # sum of the op costs of the shard
    wall_s: float  # busiest GPU: op costs + process starts


def forecast(
    costs: OpCosts, shards: int, gpus: int = 1, per_process: int | None = None
) -> list[ShardForecast]:
    """One :class:`ShardForecast` per shard of ``shards``, each dealt over ``gpus`` GPUs."""
    if gpus < 1:
        raise ZlbenchError(f"need at least one GPU per shard, got {gpus}")
    names = [str(i) for i in range(gpus)]
    out = []
    for i, keys in enumerate(lpt_bins(costs.seconds, shards, SHARD_SALT), start=1):
        mine = {k: costs.seconds[k] for k in keys}
        bins = list(gpu_bins(mine, names).values())
        out.append(
            ShardForecast(
                shard=i,
                ops=len(keys),
                estimated=sum(1 for k in keys if k not in costs.recorded),
                op_seconds=sum(mine.values()),
                wall_s=shard_wall(bins, costs.seconds, per_process),
            )
        )
    return out


def suggest_shards(
    costs: OpCosts, target_s: float, gpus: int = 1, per_process: int | None = None
) -> int:
    """The fewest shards whose slowest expected wall time fits ``target_s`` seconds.

    ZlbenchError when no count up to one op per shard (or :data:`MAX_SHARDS`) fits."""
    if target_s <= 0:
        raise ZlbenchError(f"--target-wall {target_s}: must be positive")
    if not costs.seconds:
        raise ZlbenchError("no op selected: nothing to shard")
    limit = min(len(costs.seconds), MAX_SHARDS)
    for n in range(1, limit + 1):
        if max(f.wall_s for f in forecast(costs, n, gpus, per_process)) <= target_s:
            return n
    slowest = max(f.wall_s for f in forecast(costs, limit, gpus, per_process))
    raise ZlbenchError(
        f"no shard count up to {limit} fits {target_s:.0f} s: the slowest shard of {limit} "
        f"is expected to take {slowest:.0f} s"
    )


def render_forecast(rows: list[ShardForecast], source: str) -> str:
    """The table ``--plan-only`` prints: one line per shard, then the spread."""
    lines = [f"expected wall time per shard (durations: {source})", "shard   ops  est.  expected"]
    for f in rows:
        lines.append(f"{f.shard:>5} {f.ops:>5} {f.estimated:>5}  {fmt_seconds(f.wall_s):>8}")
    walls = [f.wall_s for f in rows if f.ops]
    if walls:
        mean = sum(walls) / len(walls)
        lines.append(
            f"slowest {fmt_seconds(max(walls))}, mean {fmt_seconds(mean)}, "
            f"slowest/mean {max(walls) / mean:.2f}"
        )
    return "\n".join(lines)


def same_gpu(a: str, b: str) -> bool:
    """Two GPU model names name one model (``NVIDIA H200`` / ``nvidia h200 ``)."""
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def expected_line(
    costs: OpCosts,
    gpus: int,
    per_process: int | None = None,
    *,
    source: str = "",
    recorded_on: str | None = None,
    runner_gpu: str | None = None,
) -> str:
    """The progress header's forecast, one line that says where its seconds come from:
    ``expected: 34 op(s) on 2 GPU(s), about 1m03s by the recorded op seconds (3 op(s)
    estimated)``; the busiest GPU as the batch will deal them. ``source``: whose
    recorded seconds (``the baseline's``); ``recorded_on``: the GPU model they were
    recorded on, and ``runner_gpu`` this runner's (None: not known). Recorded seconds
    undercount on another GPU model (an op up to 1.6x on an H100 against the H200's,
    an interleaved A/B's turns counted: ``runner.batch.run.turn_costs``), so the
    line says so there, and that the done lines' ETA corrects itself
    (:func:`zlbench.runner.batch.progress.corrected_eta`)."""
    bins = list(gpu_bins(costs.seconds, [str(i) for i in range(max(1, gpus))]).values())
    wall = shard_wall(bins, costs.seconds, per_process)
    head = (
        f"expected: {len(costs.seconds)} op(s) on {max(1, gpus)} GPU(s), about {fmt_seconds(wall)}"
    )
    if not costs.recorded:
        each = fmt_seconds(max(costs.seconds.values(), default=0.0))
        return f"{head} by an estimate of {each} an op (no recorded durations)"
    notes = [f"{len(costs.estimated())} op(s) estimated"]
    if recorded_on:
        notes.append(where_recorded(recorded_on, runner_gpu))
    whose = f"{source} recorded seconds" if source else "the recorded op seconds"
    return f"{head} by {whose} ({'; '.join(notes)})"


CORRECTS = "the done lines' ETA corrects itself from the ops measured"


def where_recorded(recorded_on: str, runner_gpu: str | None) -> str:
    """Where the recorded seconds come from against this runner's GPU model (also the
    replay step's forecast line, ``zlbench.runner.replay``)."""
    if runner_gpu is None:
        return f"recorded on {recorded_on}: another GPU model may take longer, {CORRECTS}"
    if same_gpu(recorded_on, runner_gpu):
        return f"recorded on {recorded_on}, this runner's GPU model"
    return (
        f"recorded on {recorded_on}, this runner has {runner_gpu}: they may undercount "
        f"(an op up to 1.6x seen on an H100), {CORRECTS}"
    )
