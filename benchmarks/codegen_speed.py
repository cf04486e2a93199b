"""Wall time of `zlbench codegen` against the number of kernels and --jobs
(docs/codegen.md, "Speed").

    python benchmarks/codegen_speed.py --records BASELINE_OR_BATCH_DIR \\
        --flaggems-dir CHECKOUT --kernels 12,48,96 --jobs 1,2 --work /tmp/cg-speed

Takes the compile requests recorded under ``--records`` and makes K distinct
requests from them (the same kernels with other num_warps / num_stages), builds
a baseline of them with the rebuild worker (the compiler importable here), then
times the screen of that baseline for each --jobs value: with the same compiler
every kernel must come back identical. Prints one markdown table row per run.
``--flaggems-dir`` is passed to the screen as ZLBENCH_FLAGGEMS_DIR (its ``src/``
goes on the workers' PYTHONPATH, the baseline build's too).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

from zlbench.codegen.collect import collect
from zlbench.models import load_json_model
from zlbench.models.base import dump_json_model
from zlbench.models.codegen import CodegenIndex, CompileRecord
from zlbench.models.codegen_screen import CodegenScreen

VARIANTS = list(itertools.product((4, 2, 8, 1), (3, 2, 4, 1)))  # (num_warps, num_stages)


def variants(records: list[CompileRecord], k: int) -> list[CompileRecord]:
    """``k`` distinct requests: each recorded one, then with other warps/stages."""
    out = []
    for warps, stages in VARIANTS:
        for rec in records:
            req = rec.request.model_copy(deep=True)
            req.config.num_warps, req.config.num_stages = warps, stages
            req.options = {**req.options, "num_warps": warps, "num_stages": stages}
            out.append(CompileRecord(id=req.key(), request=req))
            if len(out) == k:
                return out
    raise SystemExit(f"only {len(out)} variants of {len(records)} records; ask for fewer")


def build_baseline(records: list[CompileRecord], root: Path, env: dict[str, str]) -> int:
    """Rebuild ``records`` into ``root/main/speed/codegen``; kernels that compiled."""
    run = root / "main" / "speed"
    run.mkdir(parents=True)
    dump_json_model(root / "in.json", CodegenIndex(records=records))
    cmd = [sys.executable, "-m", "zlbench.plugins.compiler.rebuild", str(root / "in.json")]
    subprocess.run([*cmd, str(run / "codegen")], check=True, stdout=subprocess.DEVNULL, env=env)
    index = load_json_model(run / "codegen" / "index.json", CodegenIndex)
    index.records = [r for r in index.records if r.result is not None]
    dump_json_model(run / "codegen" / "index.json", index)
    return len(index.records)


def time_screen(baseline: Path, jobs: int, out: Path, env) -> tuple[float, CodegenScreen]:
    t0 = time.monotonic()
    cmd = ["zlbench", "codegen", "--baseline", str(baseline), "--jobs", str(jobs)]
    out.mkdir(parents=True)
    with open(out / "stderr.log", "w") as log:
        rc = subprocess.run([*cmd, "--out", str(out)], stderr=log, env=env).returncode
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {rc}; see {out / 'stderr.log'}")
    return time.monotonic() - t0, load_json_model(out / "codegen.json", CodegenScreen)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", required=True, help="dir with <repo>/<run>/codegen/ records")
    p.add_argument("--kernels", default="12,48,96")
    p.add_argument("--jobs", default="1,2")
    p.add_argument("--work", required=True, help="empty dir for the baselines and outputs")
    p.add_argument("--flaggems-dir", required=True, help="the FlagGems checkout recorded")
    args = p.parse_args()
    src = str((Path(args.flaggems_dir) / "src").resolve())
    env = {**os.environ, "ZLBENCH_FLAGGEMS_DIR": args.flaggems_dir}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    records = list(collect(args.records).records.values())
    work = Path(args.work)
    print("| kernels | --jobs | wall s | s / kernel | identical |")
    print("|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.kernels.split(",")):
        base = work / f"base-{k}"
        n = build_baseline(variants(records, k), base, env)
        for jobs in (int(x) for x in args.jobs.split(",")):
            wall, s = time_screen(base, jobs, work / f"out-{k}-{jobs}", env)
            ident = s.counts.get("identical", 0)
            print(f"| {n} | {jobs} | {wall:.1f} | {wall / n:.2f} | {ident} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
