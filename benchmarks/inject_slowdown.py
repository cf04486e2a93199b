"""On-GPU injected slowdown through the real gate (docs/judging.md, "On the GPU").

    python benchmarks/inject_slowdown.py --baseline baselines/v1 --work DIR \\
        --scenario softmax=0.03,softmax_backward=0.08,cat=0.15 \\
        --scenario softmax=0.06,softmax_backward=0.10,cat=0.04 --controls add gelu

Needs a CUDA GPU, torch, and ``ZLBENCH_FLAGGEMS_DIR`` (the FlagGems checkout the
baseline was measured with). It copies that checkout to ``DIR/flaggems``. In the
copy, each target op's Python entry (``def <op>(`` in ``src/flag_gems/ops/<file>``)
first launches ``torch.cuda._sleep(cycles)`` on the current stream. That adds GPU
time to the op, inside the CUDA graph the timing captures, the way a slower kernel
from a compiler change would. The cycles are ``slowdown × the op's baseline FlagGems
latency × the clock``, measured here first with CUDA events. The extra graph node's
launch gap also counts, so the slowdown is always a bit above the target: the table
reports the measured one.

For each ``--scenario``, the script runs ``zlbench gate --baseline B --ops <targets +
controls>`` against the patched copy (the copy is dirty, so the report notes
``flaggems_dirty``), prints one markdown row per op, and writes ``DIR/inject.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from zlbench.gate.load import load_baseline, load_results
from zlbench.models import GateVerdict, load_json_model

# op -> file under src/flag_gems/ops whose `def <op>(` is the op's Python entry
ENTRY_FILES = {
    "softmax": "softmax.py",
    "softmax_backward": "softmax.py",
    "cat": "cat.py",
    "layer_norm": "layernorm.py",
    "log_softmax": "log_softmax.py",
}

HELPER = """

def _zl_inject(name):  # added by zlbench benchmarks/inject_slowdown.py
    import os as _os

    cycles = int(_os.environ.get("ZL_INJECT_" + name.upper(), "0"))
    if cycles:
        import torch as _torch

        _torch.cuda._sleep(cycles)
"""


def patch_entry(path: Path, func: str) -> None:
    """Insert ``_zl_inject("<func>")`` as the first statement of ``def func``."""
    src = path.read_text(encoding="utf-8")
    tree = ast.parse(src)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func), None)
    if fn is None:
        raise SystemExit(f"inject_slowdown: no top-level def {func} in {path}")
    first = fn.body[0]
    lines = src.splitlines(keepends=True)
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, f'{indent}_zl_inject("{func}")\n')
    text = "".join(lines)
    if "def _zl_inject(" not in text:
        text += HELPER
    path.write_text(text, encoding="utf-8")


def cycles_per_us() -> float:
    """GPU clock as ``torch.cuda._sleep`` sees it: median of 7 timed sleeps."""
    import torch

    n = 2_000_000
    torch.cuda._sleep(n)  # warm up
    rates = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(n)
        end.record()
        end.synchronize()
        rates.append(n / (start.elapsed_time(end) * 1000.0))
    return statistics.median(rates)


def latency_ratio(base_rows: dict, cur_rows: dict, op: str) -> float | None:
    """Median current / baseline FlagGems latency over the op's rows."""
    ratios = [
        cur_rows[k].latency_ms / b.latency_ms
        for k, b in base_rows.items()
        if k.run_name == op and k in cur_rows and cur_rows[k].latency_ms and b.latency_ms
    ]
    return statistics.median(ratios) if ratios else None


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def parse_scenario(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        op, _, pct = part.partition("=")
        if op not in ENTRY_FILES:
            raise SystemExit(f"inject_slowdown: no entry file known for op {op!r}")
        out[op] = float(pct)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--scenario", action="append", required=True, help="op=slowdown,...")
    ap.add_argument("--controls", nargs="*", default=[], help="ops judged but not slowed")
    args = ap.parse_args()

    scenarios = [parse_scenario(s) for s in args.scenario]
    src_dir = Path(os.environ["ZLBENCH_FLAGGEMS_DIR"])
    fg = args.work / "flaggems"
    if fg.exists():
        shutil.rmtree(fg)
    shutil.copytree(src_dir, fg, symlinks=True)
    targets = sorted({op for s in scenarios for op in s})
    for op in targets:
        patch_entry(fg / "src" / "flag_gems" / "ops" / ENTRY_FILES[op], op)

    rate = cycles_per_us()
    print(f"clock seen by torch.cuda._sleep: {rate:.0f} cycles/us", flush=True)
    base = load_baseline(args.baseline)
    base_rows = {r.key(res.repo, res.run_name): r for res in base.ops.values() for r in res.rows}
    base_lat = {
        op: statistics.median(r.latency_ms for k, r in base_rows.items() if k.run_name == op)
        * 1000.0
        for op in targets
    }

    report = {"cycles_per_us": rate, "scenarios": []}
    print(
        "| scenario | op | target slowdown | sleep cycles | measured FlagGems latency ratio "
        "| gate ratio (torch-normalized) | op verdict | gate exit |"
    )
    print("|---|---|---:|---:|---:|---:|---|---:|")
    for i, scen in enumerate(scenarios, 1):
        env = dict(os.environ, ZLBENCH_FLAGGEMS_DIR=str(fg))
        for op in targets:
            env.pop(f"ZL_INJECT_{op.upper()}", None)
        cycles = {op: int(d * base_lat[op] * rate) for op, d in scen.items()}
        for op, c in cycles.items():
            env[f"ZL_INJECT_{op.upper()}"] = str(c)
        out = args.work / f"gate-{i}"
        if out.exists():
            shutil.rmtree(out)
        ops = [*scen, *args.controls]
        cmd = [
            sys.executable,
            "-m",
            "zlbench",
            "gate",
            "--baseline",
            str(args.baseline),
            "--ops",
            *ops,
            "--out",
            str(out),
        ]
        rc = subprocess.run(cmd, env=env).returncode
        verdict = load_json_model(out / "verdict.json", GateVerdict)
        by_op = {o.run_name: o for o in verdict.ops}
        cur_rows = load_results(out / "results").rows()  # the first pass, not confirm/
        entry = {"slowdowns": scen, "cycles": cycles, "exit_code": rc, "ops": {}}
        for op in ops:
            lat_ratio = latency_ratio(base_rows, cur_rows, op)
            ov = by_op.get(op)
            gate_ratio = ov.geomean_ratio if ov else None
            verdict_name = ov.verdict.value if ov else None
            entry["ops"][op] = {
                "latency_ratio": lat_ratio,
                "gate_ratio": gate_ratio,
                "verdict": verdict_name,
            }
            print(
                f"| {i} | {op} | {scen.get(op, 0.0):.0%} | {cycles.get(op, 0)} | "
                f"{fmt(lat_ratio)} | {fmt(gate_ratio)} | {verdict_name} "
                f"| {rc} |",
                flush=True,
            )
        report["scenarios"].append(entry)
    (args.work / "inject.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
