"""Which ops a batch runs: the selection cut to its shard, and dealt over the GPUs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.protocol.rowpart import picked_share
from zlbench.runner.batch.attempts import baseline_rows
from zlbench.runner.batch.balance import gpu_bins, shard_keys
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.costs import (
    OPS_STATUS,
    OpCosts,
    dtypes_per_op,
    estimate_costs,
    load_dtype_counts,
    load_durations,
    op_families,
)
from zlbench.runner.batch.parts import spread_parts
from zlbench.runner.batch.shard import shard
from zlbench.runner.catalog.select import OpSelection, SelectedOp, select_ops


class EmptyShardError(ZlbenchError):
    """``--shard K/N`` left this shard no op at all (fewer runnable ops than shards)."""


def full_selection(config: BatchConfig) -> OpSelection:
    """The selection of this batch before it is cut to its shard."""
    return select_ops(
        Path(config.ops_dir),
        all_ops=config.all_ops,
        specs=config.ops,
        ops_file=config.ops_file,
        repos=config.repos,
        restrict_to=config.restrict_to,
        dismiss_file=config.dismiss_file,
        recheck_left_out=config.recheck_left_out,
    )


def recorded_durations(config: BatchConfig) -> dict[str, float]:
    """``config.durations``; else those of ``<replay_root>/ops_status.csv`` when the
    replay root holds one (a batch dir always does, a baseline may ship one), so
    every shard of a replay screen balances by the same recorded durations."""
    if config.durations:
        return config.durations
    if config.replay_root is not None and (Path(config.replay_root) / OPS_STATUS).is_file():
        return load_durations(Path(config.replay_root))
    return {}


def selection_costs(config: BatchConfig, keys: list[str]) -> OpCosts:
    """Expected seconds of ``keys``: recorded durations, estimates for the others."""
    recorded = recorded_durations(config)
    families = {}
    if recorded:
        repos = sorted({k.split("/", 1)[0] for k in keys})
        families = op_families(Path(config.ops_dir), repos)
    return estimate_costs(
        keys, recorded, families, dtypes_per_op(config.dtypes), replayed_dtypes(config)
    )


def replayed_dtypes(config: BatchConfig) -> dict[str, int]:
    """Op key -> the dtypes a replayed op measures, when the batch replays a root (a
    baseline, a batch dir) and asks no dtypes: the op runs its own dtypes, as the pass
    that recorded the root did, so it measures as many as its row of the root's
    ops_status.csv says (``dtype_used``), not :data:`~.costs.OWN_DTYPES`. Until the
    fifty-first session every op of v7h's gate counted three: its int4 MoE op (one
    dtype) 419 s instead of 140, a shard of its own by the row-pick deal. Else (record
    mode, dtypes asked, no ops_status.csv) none."""
    if config.replay_root is None or config.dtypes:
        return {}
    path = Path(config.replay_root) / OPS_STATUS
    return load_dtype_counts(path) if path.is_file() else {}


def shard_costs(config: BatchConfig, sel: OpSelection) -> OpCosts:
    """What a shard deal balances: each op's expected seconds, an op of row picks at
    its picked share (:func:`picked_costs`). The gate's op path measures only the rows
    the replay left it; dealt by whole ops, v7's four shards came to 435, 682, 592 and
    346 s by that model (docs/replay.md, forty-ninth session)."""
    return picked_costs(config, with_picks(config, sel), selection_costs(config, sel.keys()))


def with_picks(config: BatchConfig, selection: OpSelection) -> OpSelection:
    """The selection with each op of ``config.row_picks`` measuring those rows only."""
    if not config.row_picks:
        return selection
    ops = [
        replace(op, rows=tuple(config.row_picks[op.key])) if op.key in config.row_picks else op
        for op in selection.ops
    ]
    return replace(selection, ops=ops)


def picked_costs(config: BatchConfig, selection: OpSelection, costs: OpCosts) -> OpCosts:
    """``costs`` with an op of row picks at its picked share of its baseline rows."""
    seconds = dict(costs.seconds)
    for op in selection.ops:
        rows = baseline_rows(config.replay_root, op.repo, op.run_name) if op.rows else None
        if rows and op.key in seconds:
            seconds[op.key] *= picked_share(len(op.rows), len(rows))
    return OpCosts(seconds, costs.recorded)


def plan_selection(config: BatchConfig) -> OpSelection:
    """The selection of this batch, already cut down to its shard.

    Runnable ops are sharded on their own (longest expected time first to the
    least-loaded shard, :mod:`.balance`; every op in exactly one shard), so
    every shard K <= min(N, runnable ops) measures at least one op.
    Dismissed and unconditionally skipped ops are dealt separately, over those
    shards only: each lands in exactly one of them (a SKIP row there), never in a
    shard with nothing to measure. A shard K greater than the number of runnable
    ops is empty: :class:`EmptyShardError`."""
    sel = full_selection(config)
    if config.shard is None:
        return sel
    k, n = config.shard
    mine = set(shard_keys(shard_costs(config, sel).seconds, k, n))
    if not mine:
        raise EmptyShardError(
            f"empty selection: shard {k}/{n} has no op to run "
            f"({len(sel.ops)} runnable op(s) for {n} shards)"
        )
    busy = min(n, len(sel.ops))  # shards 1..busy each have a runnable op
    left_out = [o.key for o, _ in sel.dismissed] + [o.key for o in sel.skipped]
    mine |= set(shard(left_out, k, busy))
    sel.ops = [o for o in sel.ops if o.key in mine]
    sel.dismissed = [(o, e) for o, e in sel.dismissed if o.key in mine]
    sel.skipped = [o for o in sel.skipped if o.key in mine]
    return sel


def deal(
    selection: OpSelection, gpus: list[str], costs: OpCosts | None = None
) -> dict[str, list[SelectedOp]]:
    """The ops over the GPUs, balanced by ``costs`` (None: all equal, the hash deal)."""
    by_key = {o.key: o for o in selection.ops}
    seconds = costs.seconds if costs is not None else {}
    dealt = gpu_bins({k: seconds.get(k, 1.0) for k in by_key}, gpus)
    # row parts of one op on different slots (runner.batch.parts)
    return spread_parts({gpu: [by_key[k] for k in keys] for gpu, keys in dealt.items()}, seconds)
