"""`zlbench run`: one op in one pytest process (docs/design.md §8).

Exit: 0 the op passed (or was skipped), 1 it failed, crashed or timed out,
2 bad input (one line on stderr).
"""

from __future__ import annotations

import sys

from zlbench.cli.options import (
    add_budget_options,
    add_dtypes_option,
    add_mode_option,
    add_sweep_option,
    add_tuning_db_option,
    measuring_from,
    scheduling_from,
)
from zlbench.cli.settings import Settings
from zlbench.models import REPOS, Timing, TimingMethod
from zlbench.protocol import options
from zlbench.runner.execute.proc import TerminalSink
from zlbench.runner.preflight import check_compiler
from zlbench.runner.run import RunRequest, prepare, run_plan


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run one FlagGems benchmark op (record or replay)")
    p.add_argument("--op", required=True, help="op id (its pytest mark), or OP@test_file.py")
    p.add_argument("--op-file", help="the benchmark file holding the op (when in several)")
    p.add_argument("--repo", choices=REPOS, default="main", help="FlagGems repo label")
    p.add_argument(
        "--flaggems-dir",
        help="FlagGems checkout (default: $ZLBENCH_FLAGGEMS_DIR, or _VLLM_DIR for --repo vllm)",
    )
    p.add_argument(
        "--shape-file", help="shape yaml (default: ops/shapes_single.yaml if it has the op)"
    )
    add_dtypes_option(p, help="e.g. bfloat16")
    add_mode_option(
        p, help="upstream timing mode, recorded as the run's timing (default cudagraph)"
    )
    add_timing_options(p)
    p.add_argument("--replay-from", metavar="DIR", help="run, batch or baseline dir to replay")
    p.add_argument("--out", metavar="DIR", help="run dir (default: runs/<op>; -2, -3... if taken)")
    p.add_argument("--timeout", type=float, metavar="S", help="kill the op after S seconds")
    add_sweep_option(
        p,
        help="record mode: split each kernel's autotune sweep over these GPUs (one child "
        "each), merge, then measure in one process on the first (docs/autotune.md)",
    )
    add_tuning_db_option(p)
    p.set_defaults(func=_run)


def add_timing_options(p) -> None:
    """zlbench's timing method and its budgets (``models.Timing``; unset: the plugin's
    defaults, or what PYTEST_ADDOPTS says). A gate's reproduce command names all three
    (``gate.verdict.timing_flags``)."""
    p.add_argument(
        "--timing-method",
        choices=[m.value for m in TimingMethod],
        default=None,
        help="graph: zlbench's CUDA-graph timing (default); upstream: FlagGems' own do_bench",
    )
    add_budget_options(p)


def timing_from_args(args) -> Timing | None:
    """The Timing asked for (unset flags: the defaults); None when no flag was given.
    Mode and budgets are read (and bad budgets refused) as every command's are
    (:func:`zlbench.cli.options.measuring_from`)."""
    how = measuring_from(args)
    given = {"method": args.timing_method, "warmup_ms": how.warmup_ms, "replays": how.replays}
    if all(v is None for v in given.values()):
        return None
    fields = {k: v for k, v in given.items() if v is not None}
    return Timing.model_validate({"mode": how.mode, **fields})


def request_from_args(args, settings: Settings) -> RunRequest:
    """The run the flags describe; --sweep-gpus, --mode and --reuse-tuning-db read by
    the shared readers (:mod:`zlbench.cli.options`)."""
    scheduling = scheduling_from(args, settings)  # --sweep-gpus checked first, as before
    measuring = measuring_from(args)
    return RunRequest(
        op=args.op,
        op_file=args.op_file,
        repo=args.repo,
        flaggems_dir=args.flaggems_dir or settings.flaggems_dirs.get(args.repo),
        shape_file=args.shape_file,
        dtypes=args.dtypes,
        timing=measuring.mode,
        replay_from=args.replay_from,
        out=args.out,
        timeout_s=args.timeout,
        sweep_gpus=list(scheduling.sweep_gpus),
        reuse_tuning_db=measuring.reuse_tuning_db,
    )


def pytest_args(args) -> list[str]:
    """The plugin options of the Timing asked for (``protocol.options.timing_args``)."""
    how = timing_from_args(args)
    return options.timing_args(how) if how is not None else []


def _run(args) -> int:
    settings = Settings.from_env()
    req = request_from_args(args, settings)
    extra = pytest_args(args)
    check_compiler()  # before the run dir is claimed: the benchmark process needs one
    plan, flaggems_dir = prepare(req)
    entry = plan.entries[0]
    how = (
        f"{entry.mode}, sweep over GPUs {','.join(req.sweep_gpus)}"
        if req.sweep_gpus
        else entry.mode
    )
    print(f"zlbench run: {entry.repo}/{entry.op} ({how}) -> {entry.run_dir}", flush=True)
    color = None
    if settings.no_color:
        color = False
    elif settings.force_color:
        color = True
    outcome = run_plan(
        plan,
        flaggems_dir,
        sink=TerminalSink(color=color),
        timeout_s=req.timeout_s,
        sweep_gpus=req.sweep_gpus,
        reuse_tuning_db=req.reuse_tuning_db,
        extra_pytest_args=extra,
    )
    st = outcome.status
    note = f" ({st.note})" if st.note else ""
    print(
        f"zlbench run: {st.status.value} {st.rows} rows in {st.seconds:.1f} s{note}; "
        f"run dir: {outcome.run_dir}",
        file=sys.stderr if outcome.exit_code else sys.stdout,
    )
    return outcome.exit_code
