"""`zlbench bisect GOOD BAD --row ROW`: the first commit whose compiler changed the
row's timed kernels (docs/history.md "Bisect").

Phase 1 (CPU): the baseline's recorded compile requests of the row's timed kernels are
rebuilt with the compilers of the commits between GOOD and BAD, binary search, from a
per-commit compiler cache (--compilers DIR: DIR/<commit>/ a venv or a site dir with a
triton package; --build-cmd 'CMD {commit} {out}' builds a missing one, exit 125 skips
the commit). Phase 2 (GPU, --confirm): an A/B of that commit's compiler against its
parent's on the row (`zlbench ab`). Resumable: state in --out. Writes OUT/bisect.json,
OUT/report.md, OUT/diffs/. Exit 0: a commit found (and confirmed with --confirm); 1: no
digest changed in the range, or --confirm did not confirm; 2: bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit whose compiler changed a row's timed kernels (CPU), "
        "and confirm it with an A/B (GPU)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("good", metavar="GOOD", help="a commit whose compiler builds the row as before")
    p.add_argument("bad", metavar="BAD", help="a later commit where the row is slower")
    p.add_argument("--row", required=True, help="the row: repo/op dtype shape (RowKey label)")
    p.add_argument("--baseline", required=True, metavar="DIR", help="the baseline's records")
    order = p.add_mutually_exclusive_group(required=True)
    order.add_argument(
        "--commits", type=Path, metavar="FILE", help="one commit a line, oldest first"
    )
    order.add_argument("--repo", type=Path, metavar="DIR", help="a FlagTree git checkout")
    p.add_argument(
        "--compilers", type=Path, required=True, metavar="DIR", help="DIR/<commit>/: its compiler"
    )
    p.add_argument("--build-cmd", metavar="CMD", help="'CMD {commit} {out}' builds a missing one")
    p.add_argument("--store", metavar="URL", help="results store: GOOD must be faster than BAD")
    p.add_argument("--jobs", type=int, default=1, help="rebuild worker processes")
    p.add_argument("--confirm", action="store_true", help="phase 2: A/B on the GPU")
    p.add_argument(
        "--ab-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument of the confirming `zlbench ab` (repeatable)",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="state and report")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from zlbench.cli.settings import Settings
    from zlbench.codegen.screen import flaggems_sources
    from zlbench.gate.baselines import verified_baseline
    from zlbench.history.bisect import linear_range, resolve_commit
    from zlbench.workflow.bisect import (
        BisectJob,
        check_store,
        file_commits,
        git_commits,
        run_bisect,
    )

    if args.repo is not None:
        commits = git_commits(args.repo, args.good, args.bad)
        good, bad = commits[0], commits[-1]
    else:
        order = file_commits(args.commits)
        good = resolve_commit(order, args.good, "GOOD")
        bad = resolve_commit(order, args.bad, "BAD")
        commits = linear_range(order, good, bad)
    if args.store:
        check_store(args.store, args.row, good, bad)
    settings = Settings.from_env()
    job = BisectJob(
        good=good,
        bad=bad,
        row=args.row,
        baseline=Path(args.baseline),
        out=args.out,
        commits=commits,
        compilers=args.compilers,
        build_cmd=args.build_cmd,
        jobs=max(1, args.jobs),
        exec_generated=verified_baseline(args.baseline),
        pythonpath=flaggems_sources(settings.flaggems_dirs.values()),
        confirm=args.confirm,
        confirm_args=list(args.ab_arg),
    )
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    state = run_bisect(job, say=say)
    a = state.answer
    assert a is not None
    if not a.found:
        print(f"zlbench bisect: {a.message}; {state.builds} build(s); wrote {args.out}/report.md")
        return 1
    names = ", ".join(f"{k.name} ({k.first_stage})" for k in a.kernels) or "-"
    print(
        f"zlbench bisect: first changed at {a.commit} (parent {a.parent}): {names}; "
        f"{state.builds} build(s); wrote {args.out}/report.md"
    )
    if state.confirmation is not None and not state.confirmation.confirmed:
        print(
            "zlbench bisect: the A/B did not confirm the step "
            f"(exit {state.confirmation.exit_code})"
        )
        return 1
    return 0
