"""A/A analysis of gate runs: false alarms, the distribution of row ratios per
estimator, and the sensitivity of the default threshold (docs/judging.md).

    python benchmarks/aa_analysis.py --baseline baselines/v1 GATE_OUT_OR_BATCH_DIR...

Every input is a results dir measured on the SAME compiler as the baseline (an
A/A run). Sensitivity is computed by injecting a slowdown of d into the FlagGems
latency of every measured row of those A/A runs (speedup / (1 + d)) and asking
which rows the default thresholds then flag: the run-to-run noise in the numbers
is the real, measured one; only the slowdown is synthetic.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from zlbench.gate.estimators import Estimator, estimate
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds, row_threshold
from zlbench.models import FAILING_VERDICTS, GateVerdict, load_json_model

SLOWDOWNS = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.15, 0.20]


def quantiles(xs: list[float]) -> str:
    xs = sorted(xs)
    if not xs:
        return "-"

    def q(p: float) -> float:
        return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]

    return f"median {q(0.5):.2%} · p90 {q(0.9):.2%} · p99 {q(0.99):.2%} · max {xs[-1]:.2%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--exclude", action="append", default=[], help="<repo>/<run_name> to leave out")
    ap.add_argument("runs", type=Path, nargs="+")
    args = ap.parse_args()

    base = load_baseline(args.baseline)
    th = load_thresholds(None, base.manifest.thresholds)
    base_rows = {
        r.key(res.repo, res.run_name): r
        for key, res in base.ops.items()
        if key not in args.exclude
        for r in res.rows
    }
    print(
        f"baseline {base.manifest.name}: {len(base_rows)} rows; default threshold "
        f"{th.default:.1%}, noise floor {th.noise_multiplier}x row noise\n"
    )

    per_est: dict[str, list[float]] = {e.value: [] for e in Estimator}
    # (estimator, ratio, row key's baseline noise, key)
    samples: list[tuple[str, float, float, object]] = []
    print("| run | rows judged | failing verdicts (false alarms) | verdict counts |")
    print("|---|---:|---:|---|")
    failing_names = {f.value for f in FAILING_VERDICTS}
    for run in args.runs:
        verdict_file = run / "verdict.json"
        if verdict_file.is_file():
            v = load_json_model(verdict_file, GateVerdict)
            failing = sum(n for k, n in v.counts.items() if k in failing_names)
            counts = ", ".join(f"{k} {n}" for k, n in sorted(v.counts.items()))
        else:
            failing, counts = "-", "(no verdict.json)"
        rows = load_results(run).rows()
        pairs = {k: (base_rows[k], rows[k]) for k in base_rows if k in rows}
        for est in Estimator:
            for k, x in estimate(est, pairs).items():
                if x is not None:
                    per_est[est.value].append(abs(x - 1))
                    samples.append((est.value, x, base_rows[k].noise, k))
        print(f"| {run} | {len(pairs)} | {failing} | {counts} |")

    print("\n|row ratio - 1| over all A/A rows, by estimator:\n")
    for est, xs in per_est.items():
        print(f"- {est}: {quantiles(xs)} ({len(xs)} row-runs)")

    print("\nThreshold sweep (noise floor as configured). A/A false alarms = rows whose")
    print("ratio < 1 - threshold; caught = rows flagged after a slowdown d is injected.\n")
    head = " | ".join(f"caught @{d:.0%}" for d in SLOWDOWNS)
    print(f"| estimator | default | A/A false alarms | {head} |")
    print("|---|---:|---:|" + "---:|" * len(SLOWDOWNS))
    for est in Estimator:
        mine = [(x, noise, k) for e, x, noise, k in samples if e == est.value]
        for default in (0.02, 0.03, 0.04, 0.05):
            t = th.model_copy(update={"default": default})
            limits = [(x, row_threshold(t, k, noise)) for x, noise, k in mine]
            fa = sum(1 for x, lim in limits if x < 1 - lim)
            caught = [
                sum(1 for x, lim in limits if x / (1 + d) < 1 - lim) / len(limits)
                for d in SLOWDOWNS
            ]
            cells = " | ".join(f"{c:.0%}" for c in caught)
            print(f"| {est.value} | {default:.0%} | {fa}/{len(limits)} | {cells} |")
    for est in Estimator:
        xs = [x for e, x, _, _ in samples if e == est.value]
        print(
            f"\n{est.value}: worst A/A ratio {min(xs):.4f}, best {max(xs):.4f}, "
            f"geomean {math.exp(statistics.fmean(math.log(x) for x in xs)):.4f}"
        )


if __name__ == "__main__":
    main()
