"""What `zlbench gate --replay` would plan and expect for a broad change, before a GPU
has run it (issue 51, docs/replay.md): a model, not a measurement.

    python benchmarks/replay_forecast.py --baseline baselines/v5 --screen GATE_DIR
    python benchmarks/replay_forecast.py --baseline baselines/v7 --all-changed

The baseline's launch captures where it has them (``codegen/launches.json``), else
(unless ``--recorded-only``: none, the op path as the gate would) the modelled ones of
``benchmarks/replay_capture_size.py`` (every timed kernel of a row one launch that ran
once, its buffers numbered from 0: the model cannot know graph launches, side streams or
launches run more than once, so its coverage is an upper bound). The screen: a gate
dir's ``codegen/codegen.json`` and the ops its ``timing.json`` times (``--screen``, e.g.
``gate --screen-only`` under the patched compiler), or every kernel of the baseline
changed (``--all-changed``: the whole inventory judged). Then the gate's own plan
(``plan_replay``: families from ``ops/inventory_*.csv``, the gate's sentinels of
``ops/sentinels.txt``, the baseline's recorded op seconds; the runner taken to be the
GPU the captures ran on) and its forecast at ``--jobs`` rebuild workers (the device's
15), the PR side's builds cache hits (the screen built them), the base side's too with
``--base-built`` (the screen rebuilt the base, no base-screen cache entry served it).
With ``--replayed PART_DIR...`` (``gate --replay-part K/N`` dirs), the op path as those
parts left it: the merging gate's (``gate --replayed``), nothing left to build or replay.
Printed: changed rows, replayed / op path / deferred, the rows proven by their capture
(modelled: a row whose index marks no use timed, in an op whose every use is marked,
with no timed use before a row was named), the fallback reasons counted, the op path's
ops, and the forecast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from replay_capture_size import MODEL_GPU, op_capture  # noqa: E402

from zlbench.cli.settings import Settings  # noqa: E402
from zlbench.cli.trees import resolve_one  # noqa: E402
from zlbench.codegen import replay_plan  # noqa: E402
from zlbench.codegen.collect import collect  # noqa: E402
from zlbench.codegen.diff import screen_kernel  # noqa: E402
from zlbench.codegen.replay_plan import (  # noqa: E402
    forecast,
    kernel_scale,
    op_path_ops,
    parts_forecast,
    plan_replay,
    replay_costs,
)
from zlbench.codegen.select import ops_to_time  # noqa: E402
from zlbench.gate.load import load_baseline  # noqa: E402
from zlbench.models import (  # noqa: E402
    LAUNCHES_JSON,
    CodegenScreen,
    LaunchCapture,
    ReplayRun,
    load_json_model,
)
from zlbench.models.codegen_screen import CodegenClass  # noqa: E402
from zlbench.protocol.layout import op_key  # noqa: E402
from zlbench.protocol.ops import read_ops_file  # noqa: E402
from zlbench.protocol.pairs import SIDES  # noqa: E402
from zlbench.runner.baseline_batch import baseline_durations  # noqa: E402
from zlbench.runner.batch.progress import fmt_seconds  # noqa: E402
from zlbench.runner.capture_baseline import replay_seconds  # noqa: E402
from zlbench.runner.replay import families_of, op_path_wall  # noqa: E402
from zlbench.workflow.codegen_plan import sentinel_ops  # noqa: E402


def all_changed(root: Path) -> CodegenScreen:
    """Every kernel of the baseline's codegen records changed at TTGIR (no figures)."""
    k = collect(root)
    kernels = [
        screen_kernel(rec, rec, k.ops.get(kid, ()), k.rows.get(kid, ()),
                      op_timed=k.op_timed.get(kid), row_timed=k.row_timed.get(kid))
        .model_copy(update={"status": CodegenClass.TTGIR})
        for kid, rec in k.records.items()
    ]  # fmt: skip
    return CodegenScreen(baseline_dir=str(root), kernels=kernels)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--screen", type=Path, help="a gate dir (its codegen/codegen.json)")
    g.add_argument("--all-changed", action="store_true")
    ap.add_argument("--jobs", type=int, default=15)
    ap.add_argument(
        "--row-setup",
        type=float,
        default=None,
        metavar="S",
        help="the cost model's ROW_SETUP_S instead of its measured one (what-if)",
    )
    ap.add_argument(
        "--runner", default=None, metavar="GPU",
        help="the runner's GPU model (nvidia-smi's name): the rows' recorded latencies "
        "scaled to it as the gate does (codegen.replay_plan.KERNEL_SCALE; default: none)",
    )  # fmt: skip
    ap.add_argument(
        "--base-built",
        action="store_true",
        help="the screen rebuilt the base side (no base-screen cache entry): its replay "
        "builds are cache hits too",
    )
    ap.add_argument(
        "--durations", type=Path, action="append", default=[], metavar="BATCH_DIR",
        help="what-if: the ops a batch dir ran PASS take its seconds instead of the "
        "baseline's (a replay-mode batch of the baseline's ops on a GPU; repeatable)",
    )  # fmt: skip
    ap.add_argument(
        "--recorded-only", action="store_true",
        help="model no capture: an op the baseline holds none for goes to the op path "
        "whole, as a gate against it would (a capture not yet whole, or one op's kernels "
        "foreign to the baseline's records on the capturing GPU)",
    )  # fmt: skip
    ap.add_argument(
        "--replayed", type=Path, nargs="+", default=[], metavar="PART_DIR",
        help="the op path as these parts' replay left it (`gate --replay-part K/N` dirs: "
        "their replay/replay.json), the merging gate's (`gate --replayed`): the rows they "
        "sent back join it, nothing left to build or replay",
    )  # fmt: skip
    ap.add_argument(
        "--list-op-path", type=Path, metavar="FILE",
        help="write the op path's ops to FILE, one `op seconds part` a line (the model's "
        "seconds, both sides): a sample of them can be timed on a GPU",
    )  # fmt: skip
    ap.add_argument(
        "--list-fallbacks", type=Path, metavar="FILE",
        help="write each changed row left to the op path to FILE, `op dtype shape<TAB>why` "
        "a line, with whether its op's capture is recorded or modelled",
    )  # fmt: skip
    ap.add_argument(
        "--list-sentinel-rows", type=Path, metavar="FILE",
        help="write the family sentinels' rows to FILE (benchmarks/oppath_rows.py's "
        "input: op, dtype, shape, occurrence, the model's seconds one side, tab-separated)",
    )  # fmt: skip
    ap.add_argument(
        "--sample", type=int, default=0, metavar="N",
        help="with --list-sentinel-rows: N of them, evenly spread over the model's seconds",
    )  # fmt: skip
    args = ap.parse_args()
    if args.row_setup is not None:
        replay_plan.ROW_SETUP_S = args.row_setup  # replay_cost_s reads it at each call
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    root = resolve_one(args.baseline, Settings.from_env())
    baseline = load_baseline(root)
    if args.screen:
        screen = load_json_model(args.screen / "codegen" / "codegen.json", CodegenScreen)
        timing = json.loads((args.screen / "codegen" / "timing.json").read_text())
        ops = sorted(set(timing["timed"]) & set(baseline.ops))  # the changed ops, sentinels
    else:  # the ops the gate would time: those the screen does not prove, the sentinels
        screen = all_changed(root)
        sentinels = read_ops_file(REPO / "ops" / "sentinels.txt")
        ops = sorted(ops_to_time(screen, baseline.ops, sentinels).timed_ops())
    captures, recorded_caps = {}, set()
    for key in ops:
        res = baseline.ops[key]
        op_dir = root / res.repo / res.run_name
        if (op_dir / "codegen" / LAUNCHES_JSON).is_file():
            cap = load_json_model(op_dir / "codegen" / LAUNCHES_JSON, LaunchCapture)
            captures[key] = cap.model_copy(update={"gpu_model": MODEL_GPU})  # gated there
            recorded_caps.add(key)
        elif not args.recorded_only and (op_dir / "codegen" / "index.json").is_file():
            captures[key] = op_capture(op_dir, gen)
    results = [baseline.ops[k] for k in ops]
    rows = [r.key(res.repo, res.run_name) for res in results for r in res.rows]
    op_costs = baseline_durations(root, per_dtype=False)
    for batch in args.durations:  # PASS ops only: a TIMEOUT's seconds are its limit
        measured = replay_seconds(batch)
        print(f"durations: {len(measured)} op(s) from {batch}: "
              f"{sum(op_costs.get(k, 0.0) for k in measured):.0f} s recorded -> "
              f"{sum(measured.values()):.0f} s")  # fmt: skip
        op_costs.update(measured)
    scale = kernel_scale(baseline.manifest.gpu_model, args.runner)  # as the gate
    plan = plan_replay(
        screen, rows, captures, op_costs=op_costs, costs=replay_costs(results, scale=scale),
        families=families_of(baseline, REPO / "ops"),
        timed_anyway=sentinel_ops({k: baseline.ops[k] for k in ops}, REPO / "ops"),
        proof_gpu=MODEL_GPU,
    )  # fmt: skip
    f = forecast(  # as the gate: the screen built the PR side (and maybe the base's)
        plan, ops, op_costs, args.jobs, pr_built=True, base_built=args.base_built,
        op_path_wall=op_path_wall,
        compile_s={k.kernel_id: k.baseline.compile_s for k in screen.kernels},
    )  # fmt: skip
    if args.replayed:  # as the merging gate: the parts' rows, those sent back on the op path
        done = [r for d in args.replayed
                for r in load_json_model(d / "replay" / "replay.json", ReplayRun).rows]  # fmt: skip
        f = parts_forecast(plan, done, ops, op_costs, op_path_wall)
        plan = plan.as_replayed(done)  # the breakdown below: the op path they left
        print(f"replayed by {len(args.replayed)} part(s): {len(plan.replay)} rows replayed")
    n = plan.changed_rows
    modelled = len(captures) - len(recorded_caps)
    print(f"baseline {args.baseline}: {len(ops)} ops, {len(rows)} rows; captures: "
          f"{len(recorded_caps)} recorded, {modelled} modelled")  # fmt: skip
    print(f"changed rows {n}: replayed {len(plan.replay)} "
          f"({100 * len(plan.replay) / max(1, n):.0f} %), op path {len(plan.fallback)}, "
          f"deferred {len(plan.deferred)}, failed {len(plan.failed)}")  # fmt: skip
    if plan.no_launch:
        n_ops = len(plan.no_launch_ops())
        print(f"proven by their capture (no Triton kernel timed): {len(plan.no_launch)} rows "
              f"of {n_ops} ops, neither timed nor counted as changed")  # fmt: skip
    for why, c in Counter(plan.fallback.values()).most_common(8):
        print(f"  {c:5d}  {why[:90]}")
    if args.list_fallbacks:
        args.list_fallbacks.write_text("".join(
            f"{k.run_name} {k.dtype} {k.shape}\t{why}\t"
            f"{'recorded' if op_key(k.repo, k.run_name) in recorded_caps else 'modelled'}\n"
            for k, why in sorted(plan.fallback.items(), key=lambda kv: str(kv[0]))
        ))  # fmt: skip
    print(f"sentinels: {', '.join(sorted(plan.sentinels.values())) or 'none'}")
    parts: dict[str, list[tuple[float, str]]] = {}
    family = set(plan.sentinels.values())
    for k in op_path_ops(plan, ops):
        part = (
            "the gate's sentinels" if k in plan.anyway
            else "ops of rows not replayed" if k in plan.fallback_ops()
            else "family sentinels" if k in family
            else "other ops the gate times"
        )  # fmt: skip
        parts.setdefault(part, []).append((len(SIDES) * plan.op_seconds(k, op_costs), k))
    if args.list_op_path:
        args.list_op_path.write_text("".join(
            f"{k} {s:.1f} {part.replace(' ', '_')}\n"
            for part, got in sorted(parts.items()) for s, k in sorted(got, reverse=True)
        ))  # fmt: skip
    if args.list_sentinel_rows:
        listed = sorted((plan.op_seconds(k, op_costs), k) for k in plan.sentinel_rows)
        if 0 < args.sample < len(listed):  # evenly spread, the cheapest and dearest kept
            step = (len(listed) - 1) / (args.sample - 1) if args.sample > 1 else 0
            listed = [listed[round(i * step)] for i in range(args.sample)]
        args.list_sentinel_rows.write_text("".join(
            f"{k}\t{r.dtype}\t{r.shape}\t{r.occurrence}\t{s:.2f}\n"
            for s, k in listed for r in [plan.sentinel_rows[k]]
        ))  # fmt: skip
    for part, got in sorted(parts.items(), key=lambda kv: -sum(s for s, _ in kv[1])):
        top = ", ".join(f"{k} {fmt_seconds(s)}" for s, k in sorted(got, reverse=True)[:3])
        print(f"  op path, {part}: {len(got)} op(s), {fmt_seconds(sum(s for s, _ in got))} "
              f"(largest: {top})")  # fmt: skip
    print(
        f"forecast (row setup {replay_plan.ROW_SETUP_S:g} s) at {args.jobs} rebuild workers: "
        f"about {fmt_seconds(f.total_s)} = builds "
        f"{fmt_seconds(f.build_s)} + replay {fmt_seconds(f.replay_s)} + {f.op_path_ops} "
        f"op(s) through FlagGems {fmt_seconds(f.op_path_s)} (both sides, recorded seconds, "
        f"the A/B's start)"
    )
    print(
        f"op path without the replay: {len(ops)} op(s), "
        f"{fmt_seconds(2 * sum(op_costs.get(k, 0.0) for k in ops))} (both sides)"
    )


if __name__ == "__main__":
    main()
