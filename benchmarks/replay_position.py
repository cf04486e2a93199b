"""Probes of the kernel replay's instrument (issue 51, docs/replay.md "The next GPU
session"): a gate's planned rows replayed again, once per ``--settle`` and ``--flush``
value, printing per row how much slower a pair's first sample is than its second, and
the row's change and interval (over the balanced blocks, as the judge reads them).

* ``--settle N``: N untimed calls of a side before each of its samples
  (``ReplayPlanFile.settle``): the first-sample effect (an H100, 2026-12-06: the
  two-launch rows' first sample of every pair 4-10 % slower, whichever side).
* ``--flush off``: no L2 flush before a timed call (``ReplayPlanFile.flush``): whether
  the flush makes the replay's slowdowns larger than the op path's on pointwise 4096²
  rows (mul +7.3 % against +1.2 %, three sessions running; the thirty-third session:
  not the flush alone). ``--flush read``: the flush reads its buffer instead of zeroing
  it (``ReplayPlanFile.flush_by``), so L2 holds clean lines when the timed call starts.
* ``--restore sample``: the row's buffers restored once a sample, not before each timed
  call (``ReplayPlanFile.restore_each``). With ``read``, whether the written lines that
  the zeroing flush and the restore leave in L2, written back to DRAM inside the timed
  call, are what slows the replay's call 11-13 % below the op path's on those rows and
  the uncoalesced PR kernel more (the forty-third session, docs/measurements.md).

    python benchmarks/replay_position.py GATE_DIR [--ops mul,tanh] [--settle 0 1 3]
        [--flush on read off] [--restore each sample] [--base-compiler DIR] [--jobs N]
        [--out DIR]

GPU only. The plan names the gate's built binaries, which live in its triton caches:
its ``replay/cache-*`` dirs, or the gate's shared cache and base-cache temp dir, which
are gone when the gate ends (since 84768fd0; an H100, 2026-12-06: all 8 rows "not
replayed"). A kernel whose cache group is gone is rebuilt first into ``OUT/cache-*``
from the plan's compile request: the PR side under this interpreter's environment (run
it with the PR's compiler first on PYTHONPATH), the base side under ``--base-compiler``
(a dir put first on PYTHONPATH, or an env as ``gate --base-compiler`` takes it); a
rebuilt binary must have the digest the gate's had, else its rows are not replayed. The
rows run in the replay worker as the gate runs them
(:func:`zlbench.plugins.replay.worker.run_rows`), under this interpreter.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.codegen.screen import flaggems_sources  # noqa: E402
from zlbench.gate.replay import replay_stats  # noqa: E402
from zlbench.models import (  # noqa: E402
    FLAGGEMS_DIR_VARS,
    CompileRecord,
    dump_json_model,
    load_json_model,
)
from zlbench.models.replay import REPLAY_DIR, REPLAY_PLAN, ReplayPlanFile  # noqa: E402
from zlbench.plugins.replay.binaries import build_side  # noqa: E402
from zlbench.plugins.replay.worker import run_rows  # noqa: E402
from zlbench.protocol.pairs import PairRule  # noqa: E402
from zlbench.runner.ab.env import CompilerEnv, resolve_env, with_front  # noqa: E402


def probe_update(settle: int, flush: str, restore: str) -> dict:
    """The plan's fields for one probe: ``flush`` "on" (zeroing, the gate's), "read" or
    "off"; ``restore`` "each" (before each timed call, the gate's) or "sample"."""
    return {
        "settle": settle,
        "flush": flush != "off",
        "flush_by": "read" if flush == "read" else "zero",
        "restore_each": restore == "each",
    }


def position_ratio(samples) -> float | None:
    """The mean, over complete pairs (slots 2k, 2k + 1), of the first sample's time over
    the second's: 1.0 when the position in a pair does not matter."""
    ratios = [
        samples[i].ms / samples[i + 1].ms
        for i in range(0, len(samples) - 1, 2)
        if samples[i + 1].ms > 0
    ]
    return statistics.mean(ratios) if ratios else None


def gone_refs(plan: ReplayPlanFile, side: str) -> dict[str, str]:
    """Kernel id -> the gate's code digest, of ``side``'s binaries whose cache group is
    no longer there."""
    return {
        kid: ref.code_digest
        for row in plan.rows
        for kid, refs in row.binaries.items()
        if (ref := refs.get(side)) is not None and not Path(ref.group_dir).is_dir()
    }


def rebuild_gone(
    plan: ReplayPlanFile, out: Path, envs: dict[str, CompilerEnv | None], jobs: int
) -> None:
    """Rebuild each side's gone binaries into ``out/cache-<side>`` (module docstring)
    and point the plan's refs there; one that cannot be rebuilt as the gate's keeps its
    gone ref (its rows are then "not replayed", the why printed)."""
    front = flaggems_sources(os.environ[v] for v in FLAGGEMS_DIR_VARS.values() if os.environ.get(v))
    for side, env in envs.items():
        gone = gone_refs(plan, side)
        if not gone:
            continue
        if env is None:
            raise SystemExit(
                f"{len(gone)} {side} binaries of the plan are gone: give --base-compiler"
            )
        print(f"rebuilding {len(gone)} {side} kernel(s) whose cache group is gone")
        built = build_side(
            [CompileRecord(id=k, request=plan.requests[k]) for k in sorted(gone)],
            out / f"build-{side}",
            out / f"cache-{side}",
            python=env.python,
            env=env.environ(with_front(os.environ, front)),
            expected=gone,
            exec_generated=plan.exec_generated,
            jobs=jobs,
        )
        for kid, why in sorted(built.errors.items()):
            print(f"  {side} {kid}: {why}")
        for row in plan.rows:
            for kid, refs in row.binaries.items():
                if side in refs and kid in built.refs:
                    refs[side] = built.refs[kid]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gate", type=Path)
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all rows)")
    ap.add_argument("--settle", type=int, nargs="+", default=[0])
    ap.add_argument("--flush", choices=["on", "read", "off"], nargs="+", default=["on"])
    ap.add_argument("--restore", choices=["each", "sample"], nargs="+", default=["each"])
    ap.add_argument("--base-compiler", default=None, help="to rebuild gone base binaries")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--out", type=Path, default=None, help="default: GATE_DIR/position")
    a = ap.parse_args()
    plan = load_json_model(a.gate / REPLAY_DIR / REPLAY_PLAN, ReplayPlanFile)
    wanted = {o for o in a.ops.split(",") if o}
    plan.rows = [r for r in plan.rows if not wanted or r.key.op in wanted]
    if not plan.rows:
        raise SystemExit(f"{a.gate}: no planned row of {sorted(wanted)}")
    out = a.out or a.gate / "position"
    base = resolve_env(a.base_compiler) if a.base_compiler else None
    rebuild_gone(plan, out, {"pr": CompilerEnv("(this environment)"), "base": base}, a.jobs)
    for flush, restore, settle in itertools.product(a.flush, a.restore, a.settle):
        d = out / f"settle-{settle}-flush-{flush}-restore-{restore}"
        d.mkdir(parents=True, exist_ok=True)
        probe = plan.model_copy(update=probe_update(settle, flush, restore))
        dump_json_model(d / REPLAY_PLAN, probe)
        run, pairs = run_rows(d / REPLAY_PLAN, d / "worker")
        stats = replay_stats(pairs, PairRule())
        print(f"settle {settle} flush {flush} restore {restore}: {len(run.rows)} rows")
        for r in run.rows:
            if r.instrument != "kernel-replay":
                print(f"  {r.key.label()[:60]:60} not replayed: {r.why}")
        for p in pairs.rows:
            s = stats.get(p.key)
            ratio = position_ratio(p.samples)
            if s is None or ratio is None or s.change_lo is None:
                print(f"  {p.key.label()[:60]:60} not decided on blocks")
                continue
            lo, hi = s.change_lo, s.change_hi
            us = {side: 1e3 * statistics.median(x.ms for x in p.samples if x.side == side)
                  for side in ("base", "pr")}  # fmt: skip
            print(f"  {p.key.label()[:60]:60} first/second {ratio:.3f}  pairs {s.rounds:2d}"
                  f"  change {s.change:+.4f} [{lo:+.4f}, {hi:+.4f}]  base {us['base']:.2f} µs"
                  f"  pr {us['pr']:.2f} µs")  # fmt: skip


if __name__ == "__main__":
    main()
