"""Shard imbalance, old hash deal vs cost-balanced (LPT), from recorded op durations.

Computed, not measured: the durations are an ops_status.csv (default: the shipped
H200 replay screen examples/h200-gate-v1, 35 ops); the "1000-op model" draws 1000
durations from them (bootstrap, fixed seed). Imbalance = slowest shard's op time /
ideal (total / shards); process starts are left out (equal for every shard).
The LPT side is balanced by the very durations it is judged on (as a gate whose
baseline durations match its run); docs/measurements.md quotes this output.

    python benchmarks/shard_balance.py [OPS_STATUS_CSV_OR_DIR]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from zlbench.runner.batch.balance import imbalance, lpt_bins
from zlbench.runner.batch.costs import load_durations
from zlbench.runner.batch.shard import shard

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "examples" / "h200-gate-v1"


def hash_vs_lpt(costs: dict[str, float], n: int) -> tuple[float, float]:
    hashed = [shard(costs, k, n) for k in range(1, n + 1)]
    return imbalance(hashed, costs), imbalance(lpt_bins(costs, n, "shard:"), costs)


def lower_bound(costs: dict[str, float], n: int) -> float:
    """No deal beats max(longest op, ideal): that over the ideal."""
    ideal = sum(costs.values()) / n
    return max(max(costs.values()), ideal) / ideal


def bootstrap(costs: dict[str, float], count: int, seed: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    pool = sorted(costs.values())
    return {f"main/model_{i}": rng.choice(pool) for i in range(count)}


def table(title: str, costs: dict[str, float], shard_counts: list[int]) -> str:
    lines = [f"{title}: {len(costs)} ops, {sum(costs.values()):.1f} s of op time", ""]
    lines += [
        "| shards | hash: slowest/ideal | LPT: slowest/ideal | no deal below |",
        "|---:|---:|---:|---:|",
    ]
    for n in shard_counts:
        old, new = hash_vs_lpt(costs, n)
        lines.append(f"| {n} | {old:.2f} | {new:.2f} | {lower_bound(costs, n):.2f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT
    costs = load_durations(source, per_dtype=False)
    print(table(f"recorded ({source.name})", costs, [2, 3, 4, 8]))
    print()
    print(table("1000-op model (bootstrap of the recorded)", bootstrap(costs, 1000), [8, 16, 32]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
