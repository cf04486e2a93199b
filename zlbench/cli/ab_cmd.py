"""`zlbench ab`: an interleaved A/B of two sides over an op/shape set, in a named caliber.

The sides differ in the compiler (--base-compiler: side A's; side B is this
environment), in environment variables (--env-a/--env-b K=V, e.g. a FlagGems switch
such as USE_FLAGTUNE), or both. Both sides' benchmark processes run at once on the
same GPUs and are paired row by row, as the gate's A/B (docs/judging.md).

Calibers (docs/judging.md "Calibers"):
  pinned    (default) both sides replay the same autotune records: --records DIR (a
            baseline, batch or run dir), else side A's winners recorded fresh into
            OUT/records/a first. The code's (or the switch's) change alone.
  own-best  each side first tunes fresh into its own records (OUT/records/a, /b),
            then each replays its own winners: what a user gets, tuner drift included.
            The report lists the winners that differ, A vs B.
  both      own-best, then pinned from A's records; the report shows both, the exit
            code is own-best's.

Writes OUT/<caliber>/ (ab.json, pairs.json, 1/base = A, 1/pr = B) and OUT/report.md
(also printed). Exit 0: no row of B slower than A beyond the pair rule; 1: a
REGRESSION, or an op a side did not pass; 2: bad input, or nothing paired. Two sides
alike (same compiler, same variables) are refused unless --aa declares an A/A.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.runner.ab.env import parse_env_vars
from zlbench.workflow.ab_run import CALIBERS, AbRunJob, run_ab

DEFAULT_OUT = "zlbench-ab"


def add_parser(sub) -> None:
    from zlbench.cli.options import (
        add_base_compiler_option,
        add_measure_options,
        add_pair_rule_options,
        add_selection_options,
    )

    p = sub.add_parser(
        "ab",
        help="interleaved A/B of two compilers and/or environment switches over an op set, "
        "in the pinned or own-best caliber",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_selection_options(p)
    g = p.add_argument_group("the two sides")
    add_base_compiler_option(
        g,
        "ab runs it as side A, side B being this environment (default: this environment "
        "for side A too: an A/A, refused without --aa unless --env-a/--env-b differ)",
    )
    g.add_argument(
        "--env-a",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable of side A's benchmark processes (repeatable)",
    )
    g.add_argument(
        "--env-b",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable of side B's benchmark processes (repeatable)",
    )
    g.add_argument(
        "--aa",
        action="store_true",
        help="an A/A on purpose: sides alike are measured (with a warning) instead of refused",
    )
    g.add_argument("--caliber", choices=CALIBERS, default="pinned", help="see above")
    g.add_argument(
        "--records",
        type=Path,
        metavar="DIR",
        help="pinned: the autotune records both sides replay (baseline, batch or run dir)",
    )
    add_pair_rule_options(g)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"output dir (default {DEFAULT_OUT} for a pinned A/B with --records; "
        "required when a side records)",
    )
    add_measure_options(p)
    p.set_defaults(func=_run, resume=False, shard=None, replay_root=None, keep_failed=False)


def job_from_args(args, settings: Settings) -> AbRunJob:
    """The job the flags describe; bad variables are one line (exit 2)."""
    from zlbench.cli.options import ab_options_from, config_from_args

    env_a = parse_env_vars(args.env_a, "--env-a")
    env_b = parse_env_vars(args.env_b, "--env-b")
    out = args.out or Path(DEFAULT_OUT)
    given = args.out is not None
    args.out = out
    config = config_from_args(args, settings)
    options = ab_options_from(args)
    return AbRunJob(
        config=config,
        out=out,
        caliber=args.caliber,
        records=args.records,
        base_compiler=args.base_compiler,
        env_a=env_a,
        env_b=env_b,
        aa=args.aa,
        options=options,
        out_given=given,
    )


def _run(args) -> int:
    from zlbench.cli.options import preflight

    job = job_from_args(args, Settings.from_env())
    preflight(job.config)
    return run_ab(job)
