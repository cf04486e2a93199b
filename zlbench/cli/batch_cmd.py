"""`zlbench batch`: screen many ops over the GPUs of this host (docs/design.md §5.17, §6).

Parses argv, builds a :class:`zlbench.runner.batch.config.BatchConfig` (environment
variables come from :mod:`zlbench.cli.settings`) and calls ``run_batch``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from zlbench.cli.options import (
    add_aot_compile_option,  # noqa: F401  (read here by tests/plugins/test_aot_compile.py)
    add_measure_options,
    add_selection_options,
    aot_compile_args,  # noqa: F401  (read here by tests/plugins/test_aot_compile.py)
    config_from_args,
    preflight,
)
from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "batch", help="run many ops over the GPUs of this host", description=__doc__.splitlines()[0]
    )
    add_selection_options(p)
    add_measure_options(p)
    p.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N (K from 1)")
    p.add_argument(
        "--replay-root",
        type=Path,
        default=None,
        metavar="DIR",
        help="replay the records of a batch or baseline dir (default: record)",
    )
    p.add_argument(
        "--resume", action="store_true", help="continue --out: keep complete ops, rerun the others"
    )
    p.add_argument(
        "--keep-failed",
        action="store_true",
        help="with --resume: ops that ended FAIL, TIMEOUT or CRASH keep that status and "
        "do not run again (a screen resumed across sessions moves on; docs/screening.md)",
    )
    p.add_argument(
        "--plan-only",
        action="store_true",
        help="print the expected wall time of each of the N shards of --shard K/N "
        "(default 1) and exit without measuring",
    )
    p.add_argument(
        "--suggest-shards",
        action="store_true",
        help="print the fewest shards whose expected wall time fits --target-wall, and exit",
    )
    p.add_argument(
        "--target-wall",
        type=float,
        default=None,
        metavar="S",
        help="target wall seconds of one shard's measuring (with --suggest-shards)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="batch dir (default runs/batch-<UTC time>)",
    )
    p.set_defaults(func=_run)


def _plan(args, config) -> int:
    """--plan-only / --suggest-shards: print the plan, measure nothing."""
    from zlbench.runner.batch.forecast import forecast, render_forecast, suggest_shards
    from zlbench.runner.batch.plan import full_selection, recorded_durations, selection_costs

    costs = selection_costs(config, full_selection(config).keys())
    gpus = len(config.gpus)
    if args.suggest_shards:
        if args.target_wall is None:
            raise ZlbenchError("--suggest-shards needs --target-wall S")
        print(suggest_shards(costs, args.target_wall, gpus, config.per_process))
        return 0
    shards = config.shard[1] if config.shard else 1
    source = str(args.costs or "")
    if not source and recorded_durations(config):
        source = str(config.replay_root)
    source = source or "none recorded: every op estimated alike"
    print(render_forecast(forecast(costs, shards, gpus, config.per_process), source))
    return 0


def _run(args) -> int:
    from zlbench.runner.batch.run import run_batch

    if args.plan_only or args.suggest_shards:
        return _plan(args, config_from_args(args, Settings.from_env()))
    config = config_from_args(args, Settings.from_env())
    preflight(config)
    outcome = run_batch(config)
    print(f"batch dir: {outcome.out_dir}")
    if outcome.exit_code == 2:
        print("zlbench batch: nothing was measured", file=sys.stderr)
    return outcome.exit_code
