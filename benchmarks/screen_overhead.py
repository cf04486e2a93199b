"""Per-op overhead of a batch screen: wall time minus time spent inside the
benchmark tests (docs/measurements.md, issue: amortized overhead under 2 s/op).

    python benchmarks/screen_overhead.py BATCH_DIR...

A batch dir's batch.json gives its wall time (created -> finished); every run
dir's result.json gives ``bench_s`` (inside the benchmark test calls). To measure
one op per process vs several per process, run the same replay screen twice:

    zlbench batch --ops-file ops/gate_core.txt --replay-root baselines/v1 \
        --shape-file baselines/v1/shapes.yaml --dtypes bfloat16 --out A [--per-process 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path


def stamp(raw: str) -> dt.datetime:
    return dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))


def batch_numbers(batch: Path) -> dict:
    info = json.loads((batch / "batch.json").read_text())
    wall = (stamp(info["finished"]) - stamp(info["created"])).total_seconds()
    bench = 0.0
    ops = 0
    for result in sorted(batch.glob("*/*/result.json")):
        r = json.loads(result.read_text())
        ops += 1
        bench += r.get("bench_s") or 0.0
    return {
        "batch": str(batch),
        "mode": info.get("mode"),
        "per_process": info.get("per_process"),
        "ops": ops,
        "wall_s": round(wall, 1),
        "bench_s": round(bench, 1),
        "overhead_per_op_s": round((wall - bench) / ops, 2) if ops else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batches", type=Path, nargs="+")
    args = ap.parse_args()
    print("| batch | mode | ops | wall s | inside tests s | overhead s/op |")
    print("|---|---|---:|---:|---:|---:|")
    for b in args.batches:
        n = batch_numbers(b)
        print(
            f"| {n['batch']} | {n['mode']} | {n['ops']} | {n['wall_s']} | {n['bench_s']} "
            f"| {n['overhead_per_op_s']} |"
        )


if __name__ == "__main__":
    main()
