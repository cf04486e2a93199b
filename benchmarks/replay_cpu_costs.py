"""The CPU side of the kernel-replay tier's cost model, measured here (issue 51,
docs/replay.md): what building one side's binary of a kernel costs, and what loading
it into the timing process costs (triton's ``CompiledKernel``: the cubin and the
launcher), both without a GPU.

    ZLBENCH_FLAGGEMS_DIR=... python benchmarks/replay_cpu_costs.py [--baseline baselines/v5]
        [--kernels 24] [--jobs 2] [--again]

Takes ``--kernels`` records of the baseline's codegen records, one per op as far as
they go (the op keys in order), builds them with this triton
(:func:`zlbench.plugins.replay.binaries.build_side`, ``--jobs`` rebuild workers, as
the gate's replay step does) and loads every built one under the stand-in driver
(:class:`zlbench.plugins.replay.binaries.Binaries`, as the worker does; launches do
nothing). Printed: the build's wall time and CPU seconds per kernel (wall x jobs /
kernels: :data:`~zlbench.codegen.replay_plan.BUILD_CPU_S`), the first load and the
median load per kernel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.codegen.collect import collect
from zlbench.codegen.screen import flaggems_sources
from zlbench.plugins.compiler import standin
from zlbench.plugins.replay import binaries
from zlbench.runner.ab.env import with_front


def pick(root: Path, n: int) -> list:
    """Up to ``n`` records, one per op in op-key order, then a second round."""
    k = collect(root)
    per_op = {op: sorted(ids) for op, ids in sorted(k.op_kernels.items()) if ids}
    out, seen = [], set()
    while len(out) < n and any(per_op.values()):
        for ids in per_op.values():
            while ids and ids[0] in seen:
                ids.pop(0)
            if ids and len(out) < n:
                seen.add(ids[0])
                out.append(k.records[ids.pop(0)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, default=Path("baselines/v5"))
    ap.add_argument("--kernels", type=int, default=24)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--again", action="store_true",
        help="then build them once more into the same cache dir (every kernel a cache "
        "hit, as a gate's replay finds a kernel cache the screen job filled)",
    )  # fmt: skip
    args = ap.parse_args()
    settings = Settings.from_env()
    src = flaggems_sources(settings.flaggems_dirs.values())
    if not src:
        sys.exit("set ZLBENCH_FLAGGEMS_DIR to a FlagGems checkout (its src/ is imported)")
    root = resolve_one(args.baseline, settings)
    records = pick(root, args.kernels)
    env = with_front(os.environ, src)  # FlagGems' src first, no empty entry (the cwd)
    with tempfile.TemporaryDirectory(prefix="zl-replay-costs-") as tmp:
        t0 = time.monotonic()
        built = binaries.build_side(records, Path(tmp) / "w", Path(tmp) / "c", env=env,
                                    exec_generated=True, jobs=args.jobs,
                                    in_cache=args.again)  # fmt: skip
        wall = time.monotonic() - t0
        n = len(built.refs)
        print(
            f"{args.baseline}: {len(records)} kernels, {n} built, "
            f"{len(built.errors)} not ({'; '.join(sorted(set(built.errors.values())))[:200]})"
        )
        print(f"build: {wall:.1f} s wall at {args.jobs} workers = "
              f"{wall * args.jobs / max(1, len(records)):.2f} CPU s a kernel")  # fmt: skip
        if args.again:
            t0 = time.monotonic()
            hits = binaries.build_side(records, Path(tmp) / "w2", Path(tmp) / "c", env=env,
                                       exec_generated=True, jobs=args.jobs,
                                       in_cache=True)  # fmt: skip
            wall = time.monotonic() - t0
            print(f"again (cache hits): {len(hits.refs)} built in {wall:.1f} s wall at "
                  f"{args.jobs} workers = {wall * args.jobs / max(1, len(records)):.2f} "
                  "CPU s a kernel")  # fmt: skip
        sys.path[:0] = src
        os.environ.setdefault("GEMS_VENDOR", "nvidia")  # as a rebuild sets it: no device here
        loads = []
        requests = {r.id: r.request for r in records}
        with standin.standin("cuda:90", launch="skip"):
            loaded = binaries.Binaries(requests, exec_generated=True)
            try:
                for kid, ref in sorted(built.refs.items()):
                    t1 = time.monotonic()
                    loaded.get(kid, "pr", ref)
                    loads.append(time.monotonic() - t1)
            finally:
                loaded.close()
        if loads:
            print(
                f"load: first {loads[0]:.2f} s, median {statistics.median(loads):.3f} s, "
                f"max {max(loads):.2f} s, total {sum(loads):.1f} s over {len(loads)} kernels"
            )


if __name__ == "__main__":
    main()
