"""The first-sample probe of the kernel replay (issue 51, docs/replay.md "The next GPU
session"): on an H100 (2026-12-06) the two-launch reductions' first sample of every
pair was ~10 % slower than the second, whichever side, so their pairs never settled.
This replays a gate's planned rows again, once per ``--settle`` value (untimed calls of
a side before each of its samples, ``ReplayPlanFile.settle``), and prints per row how
much slower a pair's first sample is than its second, and the row's change and interval.

    python benchmarks/replay_position.py GATE_DIR [--ops sum,amax,mean] [--settle 0 1 3]
        [--out DIR]

GPU only. The plan names the gate's built binaries, which the gate builds in its triton
caches: its own ``replay/cache-*`` dirs, or, since the sides build where the screen put
their kernels (84768fd0), the gate's shared cache and its base-cache temp dir, which are
gone when the gate ends. Then every row is "not replayed" with the missing cache group
named (an H100, 2026-12-06: all 8 rows). The rows run in the replay worker as the gate
runs them (:func:`zlbench.plugins.replay.worker.run_rows`), under this interpreter.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.gate.replay import replay_stats  # noqa: E402
from zlbench.models import dump_json_model, load_json_model  # noqa: E402
from zlbench.models.replay import REPLAY_DIR, REPLAY_PLAN, ReplayPlanFile  # noqa: E402
from zlbench.plugins.replay.worker import run_rows  # noqa: E402
from zlbench.protocol.pairs import PairRule  # noqa: E402


def position_ratio(samples) -> float | None:
    """The mean, over complete pairs (slots 2k, 2k + 1), of the first sample's time over
    the second's: 1.0 when the position in a pair does not matter."""
    ratios = [
        samples[i].ms / samples[i + 1].ms
        for i in range(0, len(samples) - 1, 2)
        if samples[i + 1].ms > 0
    ]
    return statistics.mean(ratios) if ratios else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gate", type=Path)
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all rows)")
    ap.add_argument("--settle", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--out", type=Path, default=None, help="default: GATE_DIR/position")
    a = ap.parse_args()
    plan = load_json_model(a.gate / REPLAY_DIR / REPLAY_PLAN, ReplayPlanFile)
    wanted = {o for o in a.ops.split(",") if o}
    plan.rows = [r for r in plan.rows if not wanted or r.key.op in wanted]
    if not plan.rows:
        raise SystemExit(f"{a.gate}: no planned row of {sorted(wanted)}")
    out = a.out or a.gate / "position"
    for settle in a.settle:
        d = out / f"settle-{settle}"
        d.mkdir(parents=True, exist_ok=True)
        dump_json_model(d / REPLAY_PLAN, plan.model_copy(update={"settle": settle}))
        run, pairs = run_rows(d / REPLAY_PLAN, d / "worker")
        stats = replay_stats(pairs, PairRule())
        print(f"settle {settle}: {len(run.rows)} rows")
        for r in run.rows:  # e.g. the gate's binaries were in its temp caches, now gone
            if r.instrument != "kernel-replay":
                print(f"  {r.key.label()[:60]:60} not replayed: {r.why}")
        for p in pairs.rows:
            s = stats.get(p.key)
            ratio = position_ratio(p.samples)
            if s is None or ratio is None:
                print(f"  {p.key.label()[:60]:60} no complete pair")
                continue
            print(f"  {p.key.label()[:60]:60} first/second {ratio:.3f}  pairs {s.rounds:2d}  "
                  f"change {s.change:+.4f} [{s.change_lo:+.4f}, {s.change_hi:+.4f}]")  # fmt: skip


if __name__ == "__main__":
    main()
