"""Where a screen's wall time went, from the timings.json of ``zlbench batch
--phase-timings`` and the codegen records of its run dirs (docs/screening.md).

    python benchmarks/phase_breakdown.py BATCH_DIR [BATCH_DIR ...]

Per batch dir: the wall time (``wall_s`` when the shell script wrote one, else
batch.json's created -> finished), and the sum over its ops of: process start
(interpreter, torch, pytest, FlagGems import; first op of each process),
collection, pytest setup and teardown, and within the benchmark bodies the graph
timing phases of each side (first call, warmup, capture, replays, sync, other),
plus compile seconds from the codegen records (kernels not served by triton's
cache; part of the first calls). The rest of the benchmark body (input creation,
upstream bookkeeping) is "body other". What runs after an op's last test and
before its END marker is "op end: <plugin>" per op-end hook (codegen: its index
and the SASS disassembly; ttgir, autotune, devices) and "op end: other" (the
rest; timings.json written by a phases plugin that records it). One markdown
table per dir. With ``--gpu-share N`` the processes of one GPU overlap, so the
phases add up to more than the wall; "gpu wait" is the time a side waited for the
GPU's turn while another process timed.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from zlbench.models import BatchInfo, load_codegen_index, load_json_model
from zlbench.models.timings import TIMINGS_JSON, OpTimings

SIDE = ("first_call_s", "warmup_s", "capture_s", "replays_s", "sync_s", "other_s", "gpu_wait_s")


def batch_wall(batch: Path) -> float:
    if (batch / "wall_s").is_file():
        return float((batch / "wall_s").read_text().strip())
    info = load_json_model(batch / "batch.json", BatchInfo)
    if info.finished is None:  # an interrupted batch: its wall is not known
        return float("nan")
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(info.finished, fmt) - datetime.strptime(info.created, fmt)).seconds


def compile_seconds(run_dir: Path) -> float:
    index = load_codegen_index(run_dir)
    if index is None:
        return 0.0
    recs = [r for r in index.records if r.result is not None and not r.result.cache_hit]
    return sum(sum(r.result.times.values()) for r in recs)


def breakdown(batch: Path) -> dict[str, float]:
    totals: dict[str, float] = {"ops": 0}
    for path in sorted(batch.glob(f"*/*/{TIMINGS_JSON}")):
        t = load_json_model(path, OpTimings)
        add = lambda k, v: totals.__setitem__(k, totals.get(k, 0.0) + (v or 0.0))  # noqa: E731
        totals["ops"] += 1
        add("process start + imports", t.process_start_s)
        add("collection", t.collection_s)
        add("pytest setup + teardown", t.setup_s + t.teardown_s)
        body = t.call_s
        for side_name, side in (("torch", t.torch), ("gems", t.gems)):
            for f in SIDE:
                add(f"{side_name}: {f[:-2].replace('_', ' ')}", getattr(side, f))
                body -= getattr(side, f)
        add("body other", body)
        for hook, seconds in sorted(t.op_end_hooks.items()):
            add(f"op end: {hook}", seconds)
        add("op end: other", max(0.0, t.op_end_s - sum(t.op_end_hooks.values())))
        add("compile (codegen records, inside first calls)", compile_seconds(path.parent))
    return totals


def render(batch: Path) -> str:
    totals = breakdown(batch)
    wall = batch_wall(batch)
    lines = [f"{batch.name}: {int(totals.pop('ops'))} ops, wall {wall:.1f} s", ""]
    lines += ["| phase | seconds | share of wall |", "|---|---:|---:|"]
    for k, v in totals.items():
        lines.append(f"| {k} | {v:.1f} | {v / wall:.0%} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 0 if argv else 2
    for d in argv:
        if not any((Path(d) / f).is_file() for f in ("batch.json", "wall_s")):
            print(
                f"phase_breakdown: {d} is no batch dir (no batch.json nor wall_s)", file=sys.stderr
            )
            return 2
    print("\n\n".join(render(Path(d)) for d in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
