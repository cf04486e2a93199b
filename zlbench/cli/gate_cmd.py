"""`zlbench gate`: replay a baseline's op set, judge it, write the reports.

Parses argv and the environment into a :class:`zlbench.workflow.gate.GateJob` and
runs :func:`zlbench.workflow.gate.run_gate`; the workflow does the rest.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zlbench.cli.options import (
    ab_options_from,
    add_base_compiler_option,
    add_base_screen_cache_option,
    add_baseline_options,
    add_judging_options,
    add_ops_dir_option,
    add_pair_rule_options,
    add_rebuilt_option,
    add_replay_speed_options,
    add_store_options,
    base_screen_cache,
    baseline_selection_from,
)
from zlbench.cli.settings import Settings
from zlbench.models.options import REPLAY_L2, TIME_MODES

# the workflow's modules are imported by the functions that run the gate, not here:
# `zlbench gate --help` builds this parser only (tests/test_cli_help.py)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="screen the baseline's kernels' generated code, replay its ops, judge them, "
        "write junit.xml, report.md, comment.md, report.html, verdict.json",
    )
    add_baseline_options(p)
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="measure shard K of N (1-based) and confirm its flagged ops; the verdict comes "
        "from `zlbench merge` of the shards' --out dirs + `gate --results`",
    )
    p.add_argument("--results", metavar="DIR", help="judge this results dir; measure nothing")
    add_judging_options(p)
    p.add_argument(
        "--confirm", type=int, metavar="N", help="re-measures of a flagged op (default: manifest)"
    )
    add_ops_dir_option(p)
    p.add_argument("--out", default="zlbench-gate", metavar="DIR", help="output dir")
    add_codegen_options(p)
    add_replay_speed_options(p.add_argument_group("measuring (as `zlbench batch`)"))
    add_ab_options(p)
    add_store_options(p)  # issue 52: the results store
    p.set_defaults(func=_run)


def add_codegen_options(p) -> None:
    """The codegen screen before measuring (docs/codegen.md, "Gate integration")."""
    g = p.add_argument_group("codegen screen (baselines with codegen records)")
    g.add_argument(
        "--time",
        choices=TIME_MODES,
        default=None,
        help="changed (default when measuring): time only the ops whose timed kernels the "
        "codegen screen did not prove identical, plus ops/sentinels.txt; all: every op "
        "(the default with --full-ab; nightly runs)",
    )
    g.add_argument(
        "--time-budget",
        type=float,
        default=None,
        metavar="S",
        help="with --time changed: time the changed ops within about S GPU seconds (each op's "
        "recorded seconds in the baseline's ops_status.csv): sentinels always, then the ops "
        "of --time-first, then the rest, largest code change first; every changed op left "
        "out is listed in every report, never judged PASS (default: no budget)",
    )
    g.add_argument(
        "--replay",
        action="store_true",
        help="with --base-compiler: time the changed rows whose launches the baseline "
        "captured (codegen/launches.json) standalone, PR and base binaries interleaved on "
        "this GPU (kernel replay, docs/replay.md); the other changed rows and one op per op "
        "family through FlagGems as without it; with --time all, every captured row, "
        "changed or not (the replay's A/A). Run on a GPU once so far",
    )
    g.add_argument(
        "--replay-part",
        default=None,
        metavar="K/N",
        help="with --replay: replay part K of N of the rows it plans (their cost dealt over "
        "N device calls) into --out's replay/, and stop: no op path, no verdict",
    )
    g.add_argument(
        "--replay-l2",
        choices=REPLAY_L2,
        default=None,
        help="with --replay: the L2 each replayed call starts from, both sides alike: "
        "warm (default: no flush, buffers restored once a sample: calls back to back on "
        "the same inputs, as FlagGems' benchmark runs them), flush (zeroed, the row's "
        "written buffers restored before each call), clean (read over, so L2 holds no "
        "line of the flush to write back); docs/replay.md 'The L2 before a timed call'",
    )
    g.add_argument(
        "--kernel-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the kernels the screen, the replay's builds and the op path compile in "
        "DIR, a triton cache dir per compiler (by its fingerprint), for the next gate: the "
        "parts of a gate over device calls, the next PR on the same base (default: a "
        "cache of the gate's own, removed at its end); docs/replay.md 'The kernel cache'",
    )
    g.add_argument(
        "--replayed",
        nargs="+",
        type=Path,
        default=[],
        metavar="DIR",
        help="with --replay: every part's --out of `--replay-part K/N` (the same gate, the "
        "same GPU model), taken as this gate's replay; the op path and the verdict as usual "
        "(with --shard K/N: this shard's share of the op path, merged as any shards)",
    )
    g.add_argument(
        "--time-first",
        type=Path,
        default=None,
        metavar="F",
        help="ops file timed first within --time-budget (default: ops/tiers/pr.txt)",
    )
    g.add_argument(
        "--screen-only",
        action="store_true",
        help="screen and plan only, measure nothing (a CPU job): write <out>/codegen/ "
        "(codegen.json, diffs/, timing.json: the ops to time in priority order, stamped with "
        "the baseline and the compiler under test) for a GPU job's --screen; exit 1 when a "
        "kernel fails to compile. With --base-compiler the kernels are diffed against the "
        "base compiler (the plan is stamped with it: the GPU job must give the same one)",
    )
    g.add_argument(
        "--screen",
        type=Path,
        default=None,
        metavar="DIR",
        help="take the codegen screen and the ops to time from DIR, the --out of `gate "
        "--screen-only` for this baseline, op set and compiler (else one line, exit 2): the "
        "screen is not re-run and exactly its listed ops are timed",
    )
    add_base_screen_cache_option(g)
    g.add_argument(
        "--codegen-jobs",
        type=int,
        default=None,
        metavar="N",
        help="parallel processes rebuilding the baseline's kernels (default: CPU count)",
    )
    add_rebuilt_option(g)


def add_ab_options(p) -> None:
    """The A/B against the base compiler and the accept list (docs/judging.md)."""
    g = p.add_argument_group("A/B against the base compiler")
    add_base_compiler_option(
        g,
        "the gate measures every timed op with it and with this environment (the PR's) at "
        "once on this runner, paired row by row, and judges the pairs (default: no A/B, "
        "judged against the baseline alone; docs/judging.md); the codegen screen then times "
        "only the ops whose kernels differ from this compiler's (docs/codegen.md)",
    )
    g.add_argument(
        "--full-ab", action="store_true", help="time and pair every op (implies --time all)"
    )
    g.add_argument(
        "--ab-rounds",
        type=int,
        default=None,
        metavar="N",
        help="ignored: the A/B is interleaved row by row (kept so old scripts still run)",
    )
    add_pair_rule_options(g)
    g.add_argument("--accept", metavar="FILE", help="accept list of intended regressions")


def _time_mode(args) -> str:
    """``--time`` as given; else ``changed`` for a gate that measures, ``all`` with
    ``--full-ab`` or when judging ``--results`` (nothing is timed then)."""
    if args.time:
        return args.time
    return "all" if args.results or args.full_ab else "changed"


def judging_fields(args, settings: Settings, ops_dir: Path) -> dict:
    """The :class:`GateJob` fields of the flags ``gate`` and ``report`` share
    (:func:`add_baseline_options`, :func:`add_judging_options`, ``--out``, the results
    dir) and of the environment."""
    return dict(
        baseline=args.baseline,
        out=Path(args.out),
        selection=baseline_selection_from(args, ops_dir),
        results=args.results,
        thresholds=args.thresholds,
        allow_env_mismatch=args.allow_env_mismatch,
        flaggems_dirs={k: Path(v) for k, v in settings.flaggems_dirs.items()},
        cuda_visible_devices=settings.cuda_visible_devices,
        step_summary=settings.github_step_summary,
        argv=list(sys.argv),
        thresholds_label=args.thresholds or "",
        artifact_url=settings.run_url,
    )


def job_from_args(args, settings: Settings, ops_dir: Path):
    """The job that the ``gate`` flags describe: the judging flags ``report`` shares
    (:func:`judging_fields`) and the gate's own (measuring, the codegen screen, the A/B):
    a :class:`zlbench.workflow.gate_job.GateJob`."""
    from zlbench.cli.options import measuring_from, scheduling_from
    from zlbench.runner.batch.shard import parse_shard
    from zlbench.workflow.ab import DEFAULT_ROUNDS
    from zlbench.workflow.gate_job import GateJob

    scheduling = scheduling_from(args, settings)  # --gpu-share 0: refused, as by every command
    return GateJob(
        **judging_fields(args, settings, ops_dir),
        shard=parse_shard(args.shard) if args.shard else None,
        confirm=args.confirm,
        time=_time_mode(args),
        time_budget_s=args.time_budget,
        time_first=args.time_first,
        replay=args.replay,
        replay_part=parse_shard(args.replay_part) if args.replay_part else None,
        replayed=tuple(args.replayed),
        replay_l2=args.replay_l2,
        kernel_cache=args.kernel_cache,
        store=args.store or settings.store,
        store_branch=args.store_branch,
        codegen_jobs=args.codegen_jobs or os.cpu_count() or 1,
        codegen_rebuilt=tuple(args.rebuilt),
        base_screen_cache=base_screen_cache(args, settings.cache_dir),
        measuring=measuring_from(args),
        scheduling=scheduling,
        ab=ab_options_from(
            args,
            base_compiler=args.base_compiler,
            full=args.full_ab,
            rounds=args.ab_rounds or DEFAULT_ROUNDS,
            accept=Path(args.accept) if args.accept else None,
        ),
    )


def _run(args) -> int:
    from zlbench.cli.options import default_ops_dir
    from zlbench.cli.trees import resolve_one
    from zlbench.errors import ZlbenchError
    from zlbench.workflow.gate_job import GateSeams
    from zlbench.workflow.gate_record import as_gated
    from zlbench.workflow.screen_job import run_gate_job

    if args.baseline is None and args.results is None:
        raise ZlbenchError("--baseline DIR is required (without it only --results DIR of a gate)")
    ops_dir = Path(args.ops_dir) if args.ops_dir else default_ops_dir()
    settings = Settings.from_env()
    job = job_from_args(args, settings, ops_dir)
    if job.results is not None:  # a gate dir is re-judged as it was gated, unless told
        job = as_gated(job, lambda v: resolve_one(v, settings), print, "gate")
    return run_gate_job(
        job, GateSeams(), screen_only=args.screen_only, screen=args.screen, time_given=args.time
    )
