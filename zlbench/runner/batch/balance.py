"""Cost-balanced dealing of ops into bins (shards or GPUs): longest processing time first.

Each op has a cost (expected seconds, :mod:`zlbench.runner.batch.costs`). Ops are
taken costliest first and each goes to the bin with the least load so far (the
lowest index among equals): Graham's LPT rule, whose longest bin is at most
4/3 - 1/(3n) of the optimum. Ties between ops of equal cost are broken by the
stable hash of their key (:func:`zlbench.runner.batch.shard.stable_hash`), so the
result depends only on the costs, the salt and the number of bins: never on input
order, the process or the machine. With every cost equal, LPT is exactly the
round-robin deal of the hash order (op i of that order to bin i mod n), i.e.
today's hash assignment: a screen without recorded durations is dealt as before.

Pure functions, no I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from zlbench.errors import ZlbenchError
from zlbench.runner.batch.shard import stable_hash

# The salts of zlbench.runner.batch.shard: equal costs give its exact deal.
SHARD_SALT = "shard:"
GPU_SALT = "gpu:"


def lpt_order(costs: Mapping[str, float], salt: str) -> list[str]:
    """The ops costliest first; equal costs in stable-hash order."""
    return sorted(costs, key=lambda k: (-costs[k], stable_hash(k, salt), k))


def lpt_bins(costs: Mapping[str, float], n: int, salt: str) -> list[list[str]]:
    """Deal the ops of ``costs`` into ``n`` bins, longest first to the least-loaded bin.

    Returns ``n`` lists (bin 0 first), each in the order its ops were dealt
    (costliest first). Every op lands in exactly one bin."""
    if n < 1:
        raise ValueError(f"need at least one bin, got {n}")
    bins: list[list[str]] = [[] for _ in range(n)]
    heap = [(0.0, i) for i in range(n)]  # (load, bin index): ties -> lowest index
    for key in lpt_order(costs, salt):
        load, i = heapq.heappop(heap)
        bins[i].append(key)
        heapq.heappush(heap, (load + costs[key], i))
    return bins


def loads(bins: Sequence[Sequence[str]], costs: Mapping[str, float]) -> list[float]:
    """Sum of the costs of each bin."""
    return [sum(costs[k] for k in b) for b in bins]


def imbalance(bins: Sequence[Sequence[str]], costs: Mapping[str, float]) -> float:
    """Longest bin / ideal (total / number of bins): 1.0 is perfect; 0.0 when nothing costs."""
    per_bin = loads(bins, costs)
    total = sum(per_bin)
    if total <= 0:
        return 0.0
    return max(per_bin) / (total / len(per_bin))


def shard_keys(costs: Mapping[str, float], k: int, n: int) -> list[str]:
    """The ops of shard ``k`` of ``n`` (1-based), balanced by cost."""
    if n < 1 or not 1 <= k <= n:
        raise ZlbenchError(f"bad shard {k}/{n}: K must be between 1 and N (K counts from 1)")
    return lpt_bins(costs, n, SHARD_SALT)[k - 1]


def gpu_bins(costs: Mapping[str, float], gpus: Sequence[str]) -> dict[str, list[str]]:
    """``{gpu: [ops]}`` balanced by cost (every gpu listed)."""
    if not gpus:
        raise ZlbenchError("no GPU to run on (empty GPU list)")
    if len(set(gpus)) != len(gpus):
        raise ZlbenchError(f"GPU list has duplicates: {','.join(gpus)}")
    return dict(zip(gpus, lpt_bins(costs, len(gpus), GPU_SALT), strict=True))
