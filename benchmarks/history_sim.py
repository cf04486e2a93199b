"""A simulated FlagTree history of 16 commits (issue 52's first goal, docs/history.md).

    python benchmarks/history_sim.py --out DIR [--jobs N]          # CPU: phase 1
    python benchmarks/history_sim.py --gpu --out DIR [--jobs N]    # + phase 2 on a GPU

The commits' compilers are symlink copies of the installed triton with one file
replaced (benchmarks/ab_tools.py ``copies``, tests/support/codegen.py
``patched_triton``): commits 0..10 are no-op copies (3 and 7 an unrelated change: a
comment added to the NVIDIA backend's compiler.py), from commit 11 (``--step-at``) on
the coalescing pass is removed (ab_tools' ``no_coalesce``).

1. **Gates**: one gate per commit is recorded through the results store
   (``Store.add_run``): the row's latency is simulated (20 µs, 0.5 % noise, 8 % slower
   from the step on: a GPU gate per commit is beyond the ~4 min budget), its
   timed-kernel digests are real: the row's kernels rebuilt by that commit's compiler
   (the bisect's own probe, in its own compiler cache).
2. **Change points**: ``zlbench changes`` over the store must name the range
   (commit 10, commit 11] and the row's kernel.
3. **Bisect, phase 1**: ``zlbench bisect GOOD BAD`` with an empty compiler cache and a
   ``--build-cmd`` that makes a commit's copy (this script's ``build-compiler``): it
   must find commit 11 in at most log2(16) + 1 = 5 builds. Timed.
4. **Phase 2** (``--gpu``): ``--confirm``, ``zlbench ab`` of commit 11's compiler
   against commit 10's on the row, on the GPU, with FlagGems (``ZLBENCH_FLAGGEMS_DIR``).

Without ``--gpu`` the row's kernels are the benchpkg kernels (tests/benchpkg) recorded
for sm_90 on this CPU; with ``--gpu`` they are baselines/v5's recorded kernels of
``--row``. Writes DIR/sim.json (every number) and prints it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support, benchmarks

from benchmarks.ab_tools import EXTRA_PATCHES, NOOP_FILE, noop_patch  # noqa: E402
from tests.support.codegen import (  # noqa: E402
    BENCHPKG_SRC,
    Patch,
    patched_triton,
    record_benchpkg,
    write_op_codegen,
)

N_COMMITS = 16
STEP_AT = 11
UNRELATED = (3, 7)
CPU_ROW = "main/add bfloat16 [64, 128]"
GPU_ROW = "main/add bfloat16 [torch.Size([4096, 4096]), torch.Size([4096, 4096])]"
GPU_BASELINE = REPO / "baselines" / "v5"
COALESCE = "        passes.ttgpuir.add_coalesce(pm)\n"


def sha(i: int) -> str:
    return hashlib.sha1(f"flagtree-sim-{i}".encode()).hexdigest()


def patch_of(i: int, step_at: int) -> Patch:
    if i >= step_at:
        return EXTRA_PATCHES["no_coalesce"]
    if i in UNRELATED:
        return Patch(NOOP_FILE, COALESCE, COALESCE + "        # unrelated (sim)\n", "none", None)
    return noop_patch()


def build_compiler(commit: str, out: Path, step_at: int) -> int:
    """The --build-cmd: commit ``commit``'s compiler into ``out`` (a site dir)."""
    index = {sha(i): i for i in range(N_COMMITS)}
    if commit not in index:
        return 125
    patched_triton(out, patch_of(index[commit], step_at))
    return 0


def cpu_baseline(work: Path) -> tuple[Path, list[str]]:
    """The benchpkg kernels recorded on this CPU as a baseline-like dir: softmax and add
    ops, one bfloat16 row each; the helpers' and sources' dirs for the workers."""
    rec = work / "recorded"
    if not (rec / "codegen").is_dir():
        record_benchpkg(rec)
    root = work / "baseline"
    if not root.is_dir():
        write_op_codegen(rec, root, {"softmax": "softmax_kernel", "add": "add_kernel"}, "[64, 128]")
    return root, [str(BENCHPKG_SRC), str(rec / "helpers")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", nargs="*", help="build-compiler COMMIT OUT (the --build-cmd)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--step-at", type=int, default=STEP_AT)
    ap.add_argument("--row", default=None)
    ap.add_argument("--bisect-only", action="store_true",
                    help="skip the gates and the change points (a short GPU call: phase 1 "
                    "and 2 only)")  # fmt: skip
    args = ap.parse_args()
    if args.what[:1] == ["build-compiler"]:
        return build_compiler(args.what[1], Path(args.what[2]), args.step_at)
    if args.out is None:
        ap.error("--out is required")
    return simulate(args)


def simulate(args) -> int:
    from zlbench.codegen.collect import collect
    from zlbench.history.store import open_store
    from zlbench.models.history import GateRun, RowPoint
    from zlbench.workflow import bisect as wf
    from zlbench.workflow.changes import ChangesJob, run_changes

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    commits = [sha(i) for i in range(N_COMMITS)]
    (out / "commits.txt").write_text("\n".join(commits) + "\n")
    build_cmd = (
        f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} build-compiler {{commit}} {{out}} "
        f"--step-at {args.step_at}"
    )
    numbers: dict = {"commits": N_COMMITS, "step_at": args.step_at, "jobs": args.jobs}
    t0 = time.monotonic()
    if args.gpu:
        baseline, pythonpath, row = GPU_BASELINE, [], args.row or GPU_ROW
        from zlbench.cli.settings import Settings
        from zlbench.codegen.screen import flaggems_sources

        pythonpath = flaggems_sources(Settings.from_env().flaggems_dirs.values())
    else:
        baseline, pythonpath = cpu_baseline(out)
        row = args.row or CPU_ROW
    numbers["setup_s"] = round(time.monotonic() - t0, 1)
    base = collect(baseline)
    key = wf.find_row(base, row)
    ids = wf.row_timed_kernels(base, key)
    names = {i: base.records[i].request.kernel.name for i in ids}

    def job(name: str, confirm=False) -> wf.BisectJob:
        return wf.BisectJob(
            good=commits[0], bad=commits[-1], row=row, baseline=baseline, out=out / name,
            commits=commits, compilers=out / f"{name}-compilers", build_cmd=build_cmd,
            jobs=args.jobs, exec_generated=args.gpu, pythonpath=pythonpath, confirm=confirm,
        )  # fmt: skip

    if args.bisect_only:
        return _bisect(args, job, commits, numbers, out, say=_stderr)
    # 1. one gate per commit, through the store (real digests, simulated latency)
    t0 = time.monotonic()
    gates = job("gates")
    store_path = out / "history.sqlite"
    store_path.unlink(missing_ok=True)
    rng = random.Random(52)
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    with open_store(store_path) as store:
        for i, c in enumerate(commits):
            p = wf.probe(gates, base, ids, c, wf.BisectSeams(), say)
            digest = ";".join(
                f"{names[k]}@{k}="
                + hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]
                for k, d in sorted(p.digests.items())
            )
            value = 20.0 * (1.08 if i >= args.step_at else 1.0) * (1 + rng.gauss(0, 0.005))
            point = RowPoint(
                row=row, op=f"{key.repo}/{key.op}", value_us=value, verdict="PASS", digest=digest
            )
            store.add_run(
                GateRun(run_key=f"sim-{c}", commit=c, position=i, verdict="PASS"), [point]
            )
            say(f"sim: gate {i} {c[:12]}: {value:.2f} us, {p.status}, {p.seconds:.1f} s")
    numbers["gates_s"] = round(time.monotonic() - t0, 1)

    # 2. change points
    t0 = time.monotonic()
    summary = run_changes(ChangesJob(store=str(store_path), out=out / "changes"))
    cps = json.loads((out / "changes" / "changes.json").read_text())["changes"]
    numbers["changes_s"] = round(time.monotonic() - t0, 2)
    numbers["change_points"] = [
        (c["before_commit"][:12], c["commit"][:12], c["kernels"]) for c in cps
    ]
    numbers["changes_named_the_step"] = [(c["before_commit"], c["commit"]) for c in cps] == [
        (commits[args.step_at - 1], commits[args.step_at])
    ]
    print(summary)

    return _bisect(args, job, commits, numbers, out, say=say)


def _stderr(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


def _bisect(args, job, commits, numbers, out, say) -> int:
    """3. (and 4.) bisect from an empty compiler cache; sim.json written."""
    from zlbench.workflow import bisect as wf

    t0 = time.monotonic()
    state = wf.run_bisect(job("bisect", confirm=args.gpu), say=say)
    numbers["bisect_s"] = round(time.monotonic() - t0, 1)
    a = state.answer
    numbers["bisect_found"] = a.commit if a else None
    numbers["bisect_right"] = bool(a and a.commit == commits[args.step_at])
    numbers["bisect_builds"] = state.builds
    numbers["compilers_built"] = sum(p.built_compiler for p in state.probes.values())
    numbers["kernels"] = [
        (k.name, k.first_stage, k.changed_lines) for k in (a.kernels if a else [])
    ]
    if state.confirmation is not None:
        c = state.confirmation
        numbers["confirm"] = {
            "exit": c.exit_code,
            "confirmed": c.confirmed,
            "s": c.seconds,
            "row": c.row_verdict,
        }
    (out / "sim.json").write_text(json.dumps(numbers, indent=2) + "\n")
    print(json.dumps(numbers, indent=2))
    ok = numbers.get("changes_named_the_step", True) and numbers["bisect_right"]
    ok = ok and state.builds <= 5
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
