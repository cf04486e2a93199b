"""Opt-in multi-GPU autotune sweep (docs/design.md §5.16).

Why: recording mm-like kernels sweeps dozens of configs per shape, which is
most of a baseline refresh. With several GPUs the sweep can be split: child
``k`` of ``n`` runs the op in record mode on one GPU with the round-robin shard
``configs[k::n]`` of every multi-config kernel and writes, per tuning key, its
winner and the winner's timing (``--zl-sweep-out``). The shards are then merged
(per key, the fastest shard winner) into an ordinary ``autotune_records/<op>.json``;
the measurement itself is always a single-process, single-GPU replay of that
merged record, never the sweep children.

Trust figure: ``differing`` counts the keys whose winner differs across
shards, i.e. keys whose choice was made by comparing timings taken on
different GPUs; ``close`` counts those of them where the best two shard
timings are within ``close_rel`` (GPU-to-GPU noise could flip the choice). A
kernel with fewer than ``2 * n`` configs is not split (each shard would have a
single config and nothing to time): every shard sweeps all of it, so for those
keys a differing winner is pure cross-GPU noise.

The children themselves are started and killed by
:mod:`zlbench.runner.sweep.children`. This module imports neither torch nor
triton; the shard and merge logic is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zlbench.errors import ZlbenchError

# {kernel_id: {serialized_key: {"config": {...}, "ms": float | None}}}
ShardResult = dict[str, dict[str, dict]]


def parse_sweep_shard(spec: str, what: str = "sweep shard") -> tuple[int, int]:
    """``"K/N"`` (0-based K) → (K, N); ``what`` names the spec in the error.

    Also the ``--shard`` of the codegen rebuild and precompile workers."""
    try:
        k_text, n_text = spec.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise ZlbenchError(f"{what} {spec!r}: expected K/N, e.g. 0/4") from None
    if n < 1 or not 0 <= k < n:
        raise ZlbenchError(f"{what} {spec!r}: need 0 <= K < N")
    return k, n


def shard_configs(configs: Sequence, shard: int, nshards: int) -> list:
    """Round-robin shard of ``configs``; the whole list when too small to split."""
    if nshards <= 1 or len(configs) < 2 * nshards:
        return list(configs)
    return list(configs[shard::nshards])


@dataclass
class SweepStats:
    keys: int = 0
    differing: int = 0  # keys whose winner differs across shards (the trust figure)
    close: int = 0  # differing keys whose best two shard timings are within close_rel

    def line(self) -> str:
        return f"ZLBENCH_SWEEP keys={self.keys} differing={self.differing} close={self.close}"


def _canon(config: dict) -> str:
    return repr(sorted((k, repr(v)) for k, v in config.items()))


def _pick(candidates: list[dict], close_rel: float) -> tuple[dict, bool, bool]:
    """(winner config, winners differ across shards, close call)."""
    distinct = {_canon(c["config"]) for c in candidates}
    timed = sorted((c for c in candidates if c.get("ms") is not None), key=lambda c: c["ms"])
    best = timed[0] if timed else candidates[0]
    differs = len(distinct) > 1
    close = False
    if differs and len(timed) >= 2:
        runner_up = next(
            (c for c in timed[1:] if _canon(c["config"]) != _canon(best["config"])), None
        )
        if runner_up is not None and best["ms"] > 0:
            close = runner_up["ms"] / best["ms"] - 1 <= close_rel
    return best["config"], differs, close


def merge_shards(
    shards: Sequence[ShardResult], close_rel: float = 0.02
) -> tuple[dict[str, dict[str, dict]], SweepStats]:
    """Merge shard results into records ``{kernel: {key: config}}`` plus the trust figure."""
    merged: dict[str, dict[str, dict]] = {}
    stats = SweepStats()
    kernels = sorted({k for shard in shards for k in shard})
    for kernel in kernels:
        keys = sorted({key for shard in shards for key in shard.get(kernel, {})})
        for key in keys:
            cands = [s[kernel][key] for s in shards if key in s.get(kernel, {})]
            config, differs, close = _pick(cands, close_rel)
            merged.setdefault(kernel, {})[key] = config
            stats.keys += 1
            stats.differing += differs
            stats.close += close
    return merged, stats
