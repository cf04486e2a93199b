"""Helpers of benchmarks/gpu_ab.sh (the H200 run of issue 12, docs/judging.md
"A/B against the base compiler").

    python benchmarks/ab_tools.py copies DEST [--patch P]  # triton copies for PR and base
    python benchmarks/ab_tools.py stale BASE OUT --op OP   # a baseline with OP's rows 10 % faster
    python benchmarks/ab_tools.py aa GATE_DIR...           # A/A: quantiles, threshold x floor
    python benchmarks/ab_tools.py rows GATE_DIR            # verdict rows measured A/B

``copies`` writes three symlink trees of the installed triton (tests/support/codegen.py
``patched_triton``): ``DEST/same`` (unchanged: the A/A "PR"), ``DEST/base`` (unchanged:
the base, given as a site dir so it comes before the PR's on PYTHONPATH) and
``DEST/patched`` (``--patch``, default ``no_accelerate_matmul``: a TTGIR pass removed,
every tl.dot kernel slower; ``ptxas_O0`` slows every kernel). ``stale`` copies a
baseline, makes every row of OP 10 % faster (FlagGems latency x 0.9) and re-records
the manifest's file hashes, so the gate accepts it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests.support package

from tests.support.codegen import Patch, patched_triton, triton_dir  # noqa: E402
from zlbench.gate.baselines import content_hashes  # noqa: E402
from zlbench.gate.paired import judge_paired, paired_delta_us  # noqa: E402
from zlbench.models import (  # noqa: E402
    BaselineManifest,
    GateVerdict,
    RowVerdict,
    Verdict,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
)

NOOP_FILE = "backends/nvidia/compiler.py"


def noop_patch() -> Patch:
    text = (triton_dir() / NOOP_FILE).read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines(keepends=True) if text.count(ln) == 1 and ln.strip())
    return Patch(NOOP_FILE, line, line, "none", frozenset())


O0_KERNELS = ("softmax_kernel_inner", "rms_norm_kernel", "exp_func_kernel_rank_1")  # ptxas_O0_three

# Compiler changes of the interleaved A/B's GPU series (benchmarks/gpu_judge_on_runner.sh):
# a TTGIR pass removed that changes most kernels (no coalescing: loads and stores lose
# their vectorised layouts), and a compiler that cannot compile any kernel.
EXTRA_PATCHES = {
    "no_coalesce": Patch(NOOP_FILE, "        passes.ttgpuir.add_coalesce(pm)\n", "", "ttgir", None),
    # both of these TTGIR passes removed: against a base without coalescing, only the
    # tl.dot kernels differ (benchmarks/gpu_adopt.sh v5-prbase)
    "no_coalesce_no_accelerate_matmul": Patch(
        NOOP_FILE,
        "        passes.ttgpuir.add_coalesce(pm)\n"
        "        passes.ttgpuir.add_f32_dot_tc(pm, emuTF32)\n"
        "        # TODO(Qingyi): Move PlanCTAPass to the front of CoalescePass\n"
        "        nvidia.passes.ttnvgpuir.add_plan_cta(pm)\n"
        "        passes.ttgpuir.add_remove_layout_conversions(pm)\n"
        "        passes.ttgpuir.add_optimize_thread_locality(pm)\n"
        "        passes.ttgpuir.add_accelerate_matmul(pm)\n",
        "        passes.ttgpuir.add_f32_dot_tc(pm, emuTF32)\n"
        "        # TODO(Qingyi): Move PlanCTAPass to the front of CoalescePass\n"
        "        nvidia.passes.ttnvgpuir.add_plan_cta(pm)\n"
        "        passes.ttgpuir.add_remove_layout_conversions(pm)\n"
        "        passes.ttgpuir.add_optimize_thread_locality(pm)\n",
        "ttgir",
        None,
    ),
    # ptxas without optimisation for three PR-tier kernels only (softmax, rms_norm, exp):
    # a change that compiles and slows a few kernels, so only their ops are timed PR vs
    # base (benchmarks/gpu_adopt.sh patched, issue 48 item 5)
    "ptxas_O0_three": Patch(
        NOOP_FILE,
        "disable_opt = ['--opt-level', '0'] if knobs.nvidia.disable_ptxas_opt else []",
        "disable_opt = ['--opt-level', '0'] if knobs.nvidia.disable_ptxas_opt or metadata['name'] "
        f"in {O0_KERNELS!r} else []",
        "sass",
        frozenset(O0_KERNELS),
    ),
    "no_compile": Patch(
        NOOP_FILE,
        "        # Set maxnreg on all kernels, if it was provided.\n",
        "        raise RuntimeError('zl patch: this compiler cannot build any kernel')\n",
        "ttgir",
        None,
    ),
}


COALESCE = "        passes.ttgpuir.add_coalesce(pm)\n"
HOPPER_PIPELINE = "            passes.ttgpuir.add_pipeline(pm, opt.num_stages, dump_enabled)\n"


def no_coalesce_no_pipeline() -> Patch:
    """Both the coalescing pass and Hopper's software pipeliner removed: against a base
    without coalescing, only the kernels with a pipelined loop differ (mm, bmm, addmm,
    attention), and they still compile (benchmarks/gpu_adopt.sh v5-prbase)."""
    text = (triton_dir() / NOOP_FILE).read_text(encoding="utf-8")
    start = text.index(COALESCE)
    end = text.index(HOPPER_PIPELINE, start) + len(HOPPER_PIPELINE)
    old = text[start:end]
    return Patch(
        NOOP_FILE, old, old.replace(COALESCE, "").replace(HOPPER_PIPELINE, ""), "ttgir", None
    )


def copies(dest: Path, patch: str, also: list[str] | None = None) -> None:
    EXTRA_PATCHES.setdefault("no_coalesce_no_pipeline", no_coalesce_no_pipeline())
    for name in ("same", "base"):
        patched_triton(dest / name, noop_patch())
    patched_triton(dest / "patched", EXTRA_PATCHES.get(patch, patch))
    for name in also or []:
        patched_triton(dest / name, EXTRA_PATCHES.get(name, name))
    for name in ("same", "base", "patched", *(also or [])):
        print(f"{name}={dest / name}")


def pairs(gates: list[Path]) -> None:
    """Interleaved A/A gates: per gate its verdict and wall time; over all rows timed
    A/B the |change| quantiles by row size, the small rows' |µs delta| quantiles, the
    pairs per row, and the false alarms per threshold x floor under the pair rule."""
    from zlbench.gate.paired import stats_of
    from zlbench.protocol.pairs import PairRule, decide

    judged = []
    for g in gates:
        v = load_json_model(g / "verdict.json", GateVerdict)
        steps = g / "steps.json"
        total = (
            json.loads(steps.read_text()).get("seconds", {}).get("total")
            if steps.is_file()
            else None
        )
        n = [r for r in v.rows if r.ab is not None and r.ab.rounds]
        print(f"{g}: {v.summary} | {total} s | {len(n)} paired rows")
        judged += n
    if not judged:
        raise SystemExit("no paired rows")

    def q(xs: list[float]) -> str:
        xs = sorted(xs)
        return (f"n {len(xs)} median {statistics.median(xs):.4f} p90 {_pct(xs, 0.9):.4f} "
                f"p99 {_pct(xs, 0.99):.4f} max {xs[-1]:.4f}")  # fmt: skip

    big = [r for r in judged if min(r.ab.base_us) >= 5.0]
    small = [r for r in judged if min(r.ab.base_us) < 5.0]
    print("|change| all:   " + q([abs(r.ab.change) for r in judged]))
    if big:
        print("|change| >=5us: " + q([abs(r.ab.change) for r in big]))
    if small:
        print("|change| <5us:  " + q([abs(r.ab.change) for r in small]))
        print("|delta us| <5us:" + q([abs(r.ab.delta_us) for r in small]))
    print("pairs per row:  " + q([float(r.ab.rounds) for r in judged]))
    verdicts: dict[str, int] = {}
    for r in judged:
        verdicts[r.verdict.value] = verdicts.get(r.verdict.value, 0) + 1
    print(f"verdicts: {verdicts}")
    floors = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
    # an A/A's sides are exchangeable: an IMPROVEMENT is the mirror of a false REGRESSION
    print("A/A false alarms (REGRESSION + IMPROVEMENT) / INCONCLUSIVE by threshold x floor (µs) "
          + str(floors))  # fmt: skip
    for t in (0.01, 0.02, 0.03, 0.05):
        cells = []
        for f in floors:
            rule = PairRule(threshold=t, floor_us=f)
            ds = [decide(stats_of(r.ab), rule) or "INCONCLUSIVE" for r in judged]
            alarms = ds.count("REGRESSION") + ds.count("IMPROVEMENT")
            cells.append(f"{alarms}/{ds.count('INCONCLUSIVE')}")
        print(f"  t {t:.3f}: " + " ".join(f"{c:>7}" for c in cells))


def stale(base: Path, out: Path, op: str, factor: float) -> None:
    shutil.copytree(base, out)
    hits = 0
    for path in out.glob(f"*/{op}/result.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        for row in data["rows"]:
            row["latency_ms"] *= factor
            row["speedup"] /= factor
            row["speedups"] = [s / factor for s in row.get("speedups", [])]
            hits += 1
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if not hits:
        raise SystemExit(f"no rows of {op} in {base}")
    m = load_yaml_model(out / "manifest.yaml", BaselineManifest)
    m.files = content_hashes(out)
    dump_yaml_model(out / "manifest.yaml", m)
    print(f"{out}: {hits} rows of {op} made {1 / factor - 1:.0%} faster")


def _pct(q: list[float], p: float) -> float:
    return q[min(len(q) - 1, int(p * len(q)))]


def aa(gates: list[Path]) -> None:
    """Every A/B row of A/A gates: |paired change| quantiles, and per threshold the
    false alarms (rows slower than it) over all gates."""
    screen, single, judged = [], [], []
    for g in gates:
        v = load_json_model(g / "verdict.json", GateVerdict)
        ab = v.ab
        print(f"{g}: {v.summary}; A/B {ab.mode if ab else 'none'} {ab.seconds if ab else ''}")
        for r in v.rows:
            if r.ab is not None and r.ab.change is not None:
                judged.append(r)
                single += [abs(1 / x - 1) for x in r.ab.round_ratios]
                if r.judged_change is not None:
                    screen.append(r.judged_change)
    changes = [r.ab.change for r in judged]
    if not changes:
        raise SystemExit("no A/B rows: run the A/A gates with --full-ab")
    q = sorted(abs(c) for c in changes)
    print(
        f"paired A/A rows: {len(changes)}; |change| median {statistics.median(q):.4f}, "
        f"p90 {_pct(q, 0.9):.4f}, p99 {_pct(q, 0.99):.4f}, max {q[-1]:.4f}; "
        f"slowest {max(changes):+.4f}"
    )
    one = sorted(single)
    print(
        f"single rounds: {len(one)}; |change| median {statistics.median(one):.4f}, "
        f"p99 {_pct(one, 0.99):.4f}, max {one[-1]:.4f} (what the median over rounds removes)"
    )
    if screen:
        s = sorted(abs(c) for c in screen)
        print(
            f"same rows vs the stored baseline: |change| median {statistics.median(s):.4f}, "
            f"p99 {_pct(s, 0.99):.4f}, max {s[-1]:.4f}"
        )
    for t in (0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.045, 0.05, 0.055, 0.06):
        limit = 1 / (1 - t) - 1
        alarms = sum(1 for c in changes if c > limit)
        print(f"threshold {t:.3f}: {alarms} false alarms in {len(changes)} paired rows")
    floor_grid(judged)


FLOORS = (0.0, 0.1, 0.2, 0.25, 0.3)


def floor_grid(judged: list[RowVerdict]) -> None:
    """False alarms per relative threshold and absolute floor, judged by the gate's
    own ``judge_paired`` (each row's A/B re-judged; its delta recomputed from its
    rounds for verdicts written before the floor existed)."""
    print("false alarms (REGRESSION vs the base) by threshold x floor (µs): " + str(FLOORS))
    pairs = [  # once per row: the row as a plain PASS, its A/B with its delta
        (
            r.model_copy(update={"verdict": Verdict.PASS}),
            r.ab.model_copy(update={"delta_us": paired_delta_us(r.ab.pr_us, r.ab.base_us)}),
        )
        for r in judged
    ]
    for t in (0.02, 0.025, 0.03, 0.04, 0.05, 0.055):
        counts = [
            sum(
                judge_paired(row, p, t, "v", False, floor).verdict is Verdict.REGRESSION
                for row, p in pairs
            )
            for floor in FLOORS
        ]
        print(f"  t {t:.3f}: " + " ".join(f"{c:4d}" for c in counts))


def rows(gate: Path) -> None:
    v = load_json_model(gate / "verdict.json", GateVerdict)
    print(v.summary)
    for r in v.rows:
        if r.ab is None:
            continue
        tag = "inherited" if r.ab.inherited else ""
        print(
            f"{r.verdict.value:12} {r.key.label():60} vs base {r.ab.change or 0:+.3f} "
            f"vs stored {r.judged_change or 0:+.3f} {tag}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    cp = sub.add_parser("copies")
    cp.add_argument("dest", type=Path)
    cp.add_argument(
        "--patch", default="no_accelerate_matmul", help="tests/support/codegen.py PATCHES"
    )
    cp.add_argument("--also", nargs="*", default=[], help="more copies, named by their patch")
    sub.add_parser("pairs").add_argument("gates", type=Path, nargs="+")
    st = sub.add_parser("stale")
    st.add_argument("base", type=Path)
    st.add_argument("out", type=Path)
    st.add_argument("--op", required=True)
    st.add_argument("--factor", type=float, default=0.9)
    sub.add_parser("aa").add_argument("gates", type=Path, nargs="+")
    sub.add_parser("rows").add_argument("gate", type=Path)
    a = ap.parse_args()
    if a.cmd == "copies":
        copies(a.dest, a.patch, a.also)
    elif a.cmd == "pairs":
        pairs(a.gates)
    elif a.cmd == "stale":
        stale(a.base, a.out, a.op, a.factor)
    elif a.cmd == "aa":
        aa(a.gates)
    else:
        rows(a.gate)


if __name__ == "__main__":
    main()
