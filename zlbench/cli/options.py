"""The options several commands share, declared once (issue 28 item 2): argparse
builders (``add_*_options``, as pytest-benchmark's and asv's common arguments) and the
readers that turn parsed flags into the option models of :mod:`zlbench.models.options`
(:func:`selection_from`, :func:`measuring_from`, :func:`scheduling_from`), from which
:func:`config_from_args` builds the ``BatchConfig`` of ``batch``, ``baseline refresh``
and ``ab``.

``batch``, ``baseline refresh``, ``ab``, ``gate``, ``report`` and ``run`` take their
shared flags from here, never from ``batch_cmd`` (``report``, the gate's offline
re-judge, takes the judging fields of the gate's job from ``gate_cmd``). Plugin flags
are spelled by :mod:`zlbench.protocol.options` only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.models import REPOS, SPLIT_MODES, Measuring, Scheduling, Selection
from zlbench.models.options import UpstreamMode
from zlbench.models.ranges import options_error
from zlbench.protocol import options as protocol_options
from zlbench.protocol.ops import SPEC_GRAMMAR
from zlbench.protocol.pairs import PairRule

SPEC_HELP = f"SPEC: {SPEC_GRAMMAR}"  # the --ops grammar of every command


def add_selection_options(p, *, required: bool = True) -> None:
    """--all / --ops / --ops-file / --repos / --ops-dir (shared with the gate)."""
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--all", action="store_true", help="every op of the inventories")
    g.add_argument("--ops", nargs="+", metavar="SPEC", help=f"these ops (SPEC: {SPEC_GRAMMAR})")
    g.add_argument("--ops-file", type=Path, metavar="F", help="one SPEC a line, # comments")
    p.add_argument(
        "--repos",
        nargs="+",
        choices=REPOS,
        default=None,
        metavar="R",
        help="repos to select from (default: main)",
    )
    add_ops_dir_option(p)
    p.add_argument(
        "--recheck-dismissed",
        action="store_true",
        help="also run the ops the dismiss list names and those marked unconditional skip "
        "(do they still need to be left out?)",
    )


def add_baseline_options(p) -> None:
    """--baseline and the --ops / --ops-file narrowing its op set (``gate``, ``report``)."""
    p.add_argument(
        "--baseline",
        metavar="DIR",
        help="baseline dir (baselines/vN); required, except to re-judge a gate dir, which "
        "records its baseline and op set (gated.json: re-judged as gated unless given)",
    )
    sel = p.add_mutually_exclusive_group()
    sel.add_argument(
        "--ops", nargs="+", metavar="SPEC", help=f"judge only these baseline ops ({SPEC_HELP})"
    )
    sel.add_argument("--ops-file", metavar="F", help="file of op SPECs, one a line")


def baseline_selection_from(args, ops_dir: Path) -> Selection:
    """The :class:`Selection` of :func:`add_baseline_options`' --ops / --ops-file (the
    gate's job, ``gate_cmd.job_from_args``): the SPECs narrowing the baseline's op set
    (neither: all of it), with the inventories and dismiss list of ``ops_dir``."""
    return Selection(ops=tuple(args.ops or ()), ops_file=args.ops_file, ops_dir=ops_dir)


def add_thresholds_option(p, default: str) -> None:
    """--thresholds, a thresholds yaml (docs/thresholds.md) that replaces the default
    thresholds. Declared here once: ``gate`` and ``report`` (:func:`add_judging_options`)
    default to the baseline manifest's, ``compare`` to A's manifest when A is a baseline,
    else zlbench's; ``default``: the command's default, in its words."""
    p.add_argument("--thresholds", metavar="Y", help=f"thresholds yaml (default: {default})")


def add_judging_options(p, mismatch_help: str = "judge despite a mismatch") -> None:
    """--thresholds and --allow-env-mismatch (``gate``, ``report``: both fill the gate's
    job, ``gate_cmd.job_from_args``; ``mismatch_help``: the command's words)."""
    add_thresholds_option(p, "the baseline manifest's")
    p.add_argument("--allow-env-mismatch", action="store_true", help=mismatch_help)


def add_base_compiler_option(p, role: str) -> None:
    """--base-compiler: the compiler a change is measured against, as a venv dir,
    interpreter or site dir (:func:`zlbench.runner.ab.env.resolve_env`); this
    environment is the other side. Declared here once with ``role``, what the command
    does with it: ``ab`` makes it side A (default: this environment, an A/A that needs
    --aa), ``gate`` pairs every timed op against it (default: no A/B)."""
    p.add_argument(
        "--base-compiler",
        metavar="ENV",
        help=f"the base compiler: a venv dir, interpreter or site dir; {role}",
    )


BASE_SCREEN_CACHE = "base-screen"  # under ZLBENCH_CACHE_DIR: the base side's rebuilds


def add_base_screen_cache_option(p) -> None:
    """--base-screen-cache (``gate``, ``codegen``): where the base compiler's rebuild of
    the baseline's requests is kept and reused (docs/codegen.md)."""
    p.add_argument(
        "--base-screen-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --base-compiler: the screen diffs the PR's kernels against the base "
        "compiler's rebuild of the same requests (only kernels that differ from the base "
        "count as changed); that rebuild is kept in DIR, one entry per base build and "
        "baseline, and reused by every PR on the same base "
        "(default: $ZLBENCH_CACHE_DIR/base-screen)",
    )


def base_screen_cache(args, cache_dir: Path) -> Path:
    return args.base_screen_cache or cache_dir / BASE_SCREEN_CACHE


SWEEP_HELP = (
    "record mode: split each op's autotune sweep over these GPUs, ops one at a "
    "time, each measured in one process on the first (docs/autotune.md)"
)
MODE_HELP = "timing method (default cudagraph)"
UPSTREAM_MODES = get_args(UpstreamMode)


def add_sweep_option(p, help: str = SWEEP_HELP) -> None:
    """--sweep-gpus (``batch``, ``baseline refresh``, ``ab``, ``run``; ``help``: the
    command's words), read by :func:`scheduling_from`."""
    p.add_argument("--sweep-gpus", default=None, metavar="0,1", help=help)


def add_mode_option(p, help: str = MODE_HELP) -> None:
    """--mode, upstream's timing mode (``batch``, ``baseline refresh``, ``ab``, ``run``;
    ``help``: the command's words), read by :func:`measuring_from`."""
    p.add_argument("--mode", choices=UPSTREAM_MODES, default="cudagraph", help=help)


def add_dtypes_option(p, dtypes: list[str] = (), help: str | None = None) -> None:
    """--dtypes (``batch``, ``baseline refresh``, ``ab``, ``run``); ``dtypes``: the
    default; ``help`` None: the words of ``batch``."""
    default_dtypes = " ".join(dtypes) or "each op's own"
    p.add_argument(
        "--dtypes",
        nargs="+",
        default=list(dtypes),
        metavar="D",
        help=help or f"dtypes to measure, e.g. bfloat16 float16 (default: {default_dtypes})",
    )


REUSE_TUNING_DB_HELP = (
    "record mode: keep FlagGems' persistent tuning DB (FLAGGEMS_DB_URL, else its default "
    "under FLAGGEMS_CACHE_DIR or ~/.flaggems) instead of a fresh one per process, so the "
    "configs it already holds are recorded without tuning them again (faster; off by "
    "default: they may come from another compiler or FlagGems, since FlagGems names the DB "
    "by GPU or vendor and triton version only; docs/autotune.md). Refused by baseline refresh (a "
    "baseline holds what the compiler under test tunes from a cold DB), with a replay and "
    "with --sweep-gpus"
)


def add_tuning_db_option(p) -> None:
    """--reuse-tuning-db (``batch``, ``run``; ``baseline refresh`` refuses it)."""
    p.add_argument("--reuse-tuning-db", action="store_true", help=REUSE_TUNING_DB_HELP)


def add_aot_compile_option(p) -> None:
    """--no-aot-compile (``batch``, ``baseline refresh``): the old record path."""
    p.add_argument(
        "--no-aot-compile",
        action="store_true",
        help="record mode: do not compile each autotune sweep's configs in parallel on "
        "the CPU cores before it benchmarks them (default: compile ahead; the winners "
        "are the same either way; docs/autotune.md: fast record pass)",
    )


def aot_compile_args(args) -> list[str]:
    """pytest arguments of --no-aot-compile."""
    return protocol_options.measuring_args(Measuring(aot_compile=not args.no_aot_compile))


def parse_sweep_gpus(text: str | None, settings: Settings) -> list[str]:
    """``--sweep-gpus`` checked against the inherited CUDA_VISIBLE_DEVICES; [] when
    absent. Shared by ``batch``, ``baseline refresh`` and ``run``."""
    from zlbench.runner.batch.shard import parse_gpu_list
    from zlbench.runner.sweep.run import check_sweep_gpus

    if text is None:
        return []
    return check_sweep_gpus(parse_gpu_list(text), settings.cuda_visible_devices)


def add_replay_speed_options(p) -> None:
    """--precompile-jobs, --gpu-share, --split-rows, --warmup-ms, --replays,
    --phase-timings (a replay's speed and where it goes, docs/screening.md),
    read by :func:`measuring_from` and :func:`scheduling_from`. Shared by ``batch``,
    ``baseline refresh`` and ``gate`` (``p``: a parser or an argument group)."""
    p.add_argument(
        "--precompile-jobs",
        type=int,
        default=0,
        metavar="N",
        help="replay: compile the recorded kernels with N CPU processes into a triton "
        "cache every benchmark process shares, before the GPU starts (default 0: off; "
        "docs/screening.md)",
    )
    p.add_argument(
        "--gpu-share",
        type=int,
        default=1,
        metavar="N",
        help="N benchmark processes per GPU: each overlaps its start-up, Python and "
        "first calls with another's timing, and times only in the GPU's turn "
        "(default 1; docs/screening.md: sharing a GPU)",
    )
    p.add_argument(
        "--split-rows",
        choices=SPLIT_MODES,
        default="auto",
        help="replay: cut an op longer than its share of a process slot into row "
        "parts measured by several processes, merged at the end (default auto: only with "
        "2+ slots, i.e. --gpus or --gpu-share; docs/screening.md: row parts)",
    )
    add_budget_options(p)
    p.add_argument(
        "--phase-timings",
        action="store_true",
        help="write <run_dir>/timings.json: where each op's wall time went "
        "(zlbench.plugins.phases; docs/screening.md)",
    )


def add_pair_rule_options(p) -> None:
    """--ab-threshold, --ab-floor-us, --ab-max-pairs: the interleaved A/B's pair rule
    (:class:`zlbench.protocol.pairs.PairRule`, docs/judging.md), read by
    :func:`ab_options_from`. Shared by ``gate`` and ``ab`` (``p``: a parser or a group)."""
    rule = PairRule()
    recorded = "judging a stored A/B, gate --results: its recorded one unless given"
    p.add_argument(
        "--ab-threshold",
        type=float,
        default=None,
        metavar="T",
        help=f"paired threshold vs the base (default {rule.threshold:g}; {recorded})",
    )
    p.add_argument(
        "--ab-floor-us",
        type=float,
        default=None,
        metavar="F",
        help="paired floor in µs per call: a row is a REGRESSION vs the base only when "
        f"also slower by more than F µs (default {rule.floor_us:g}; 0: none; {recorded})",
    )
    p.add_argument(
        "--ab-max-pairs",
        type=int,
        default=None,
        metavar="N",
        help="pairs per row at most while its interval straddles the threshold (default "
        f"{rule.max_pairs}; rows timed without CUDA graphs: at least {rule.max_pairs_plain})",
    )


def ab_options_from(args, **rest):
    """The ``AbOptions`` of :func:`add_pair_rule_options`' flags (not given: None, the
    defaults) and ``rest`` (the command's other A/B options)."""
    from zlbench.workflow.ab import AbOptions

    return AbOptions(
        threshold=args.ab_threshold,
        floor_us=args.ab_floor_us,
        max_pairs=args.ab_max_pairs,
        **rest,
    )


def add_measure_options(p, *, shape_file: Path | None = None, dtypes: list[str] = ()) -> None:
    """How ops are measured: GPUs, sweep, timeouts, FlagGems dirs, shapes, dtypes,
    timing. Shared by ``batch`` and ``baseline refresh`` (both feed
    :func:`config_from_args`), so the two can never disagree."""
    p.add_argument(
        "--gpus",
        default=None,
        metavar="0,1",
        help="GPU ids (default: CUDA_VISIBLE_DEVICES, else every visible GPU)",
    )
    add_sweep_option(p)
    add_tuning_db_option(p)
    add_aot_compile_option(p)
    p.add_argument(
        "--op-timeout",
        type=float,
        default=None,
        metavar="S",
        help="per-op timeout in seconds (default 1800 when recording, whose cold autotune "
        "sweeps can take 10+ minutes, 900 when replaying; 0 = no limit; not retried)",
    )
    p.add_argument(
        "--per-process",
        type=int,
        default=None,
        metavar="N",
        help="at most N ops per pytest process (default: no limit; 1 = isolated)",
    )
    p.add_argument(
        "--flaggems-dir",
        action="append",
        default=[],
        metavar="[REPO=]PATH",
        help="FlagGems checkout (repeat as vllm=PATH; env ZLBENCH_FLAGGEMS_DIR, "
        "ZLBENCH_FLAGGEMS_VLLM_DIR)",
    )
    p.add_argument(
        "--shape-file",
        type=Path,
        default=shape_file,
        metavar="Y",
        help=f"shape file replacing upstream's (default: {shape_file or 'upstream shapes'})",
    )
    add_dtypes_option(p, dtypes)
    add_mode_option(p)
    p.add_argument(
        "--max-retries",
        type=int,
        default=2,
        metavar="N",
        help="extra attempts of an op that failed or crashed (default 2; timeouts never)",
    )
    add_replay_speed_options(p)
    p.add_argument(
        "--costs",
        type=Path,
        default=None,
        metavar="CSV",
        help="recorded op durations (an ops_status.csv or a dir holding one): shards and "
        "GPUs are balanced by them, longest first (docs/screening.md)",
    )
    p.add_argument("--no-ttgir", action="store_true", help="do not dump TTGIR")
    p.add_argument("--show-output", action="store_true", help="echo the pytest output")


def default_ops_dir() -> Path:
    """./ops when it holds an inventory, else the ops/ dir next to the zlbench package."""
    local = Path("ops")
    if any(local.glob("inventory_*.csv")):
        return local
    return Path(__file__).resolve().parents[2] / "ops"


def flaggems_dirs(values: list[str], settings: Settings) -> dict[str, Path]:
    dirs = {repo: Path(path) for repo, path in settings.flaggems_dirs.items()}
    for value in values:
        repo, sep, path = value.partition("=")
        if not sep:
            repo, path = "main", value
        if repo not in REPOS:
            raise ZlbenchError(f"--flaggems-dir {value}: unknown repo {repo!r}")
        dirs[repo] = Path(path)
    return dirs


def selection_from(args) -> Selection:
    """What the selection flags select (``add_selection_options``, and ``--dtypes`` /
    ``--shape-file`` of ``add_measure_options``); ``ops_dir`` defaults here."""
    return Selection(
        all_ops=args.all,
        ops=tuple(args.ops or ()),
        ops_file=args.ops_file,
        repos=tuple(args.repos or ()),
        ops_dir=args.ops_dir or default_ops_dir(),
        recheck_left_out=args.recheck_dismissed,
        dtypes=tuple(args.dtypes),
        shape_file=args.shape_file,
    )


def measuring_from(args) -> Measuring:
    """How the flags say to measure; a flag the command does not have (``gate`` has
    only those of ``add_replay_speed_options``, ``report`` none) keeps the model's
    default. Bad budgets are the model's one line (exit 2), as ``check_numbers`` words
    them (:mod:`zlbench.models.ranges`)."""
    given = vars(args)
    fields = {
        "mode": given.get("mode"),
        "warmup_ms": given.get("warmup_ms"),
        "replays": given.get("replays"),
        "phase_timings": given.get("phase_timings"),
        "ttgir": None if "no_ttgir" not in given else not given["no_ttgir"],
        "aot_compile": None if "no_aot_compile" not in given else not given["no_aot_compile"],
        "reuse_tuning_db": given.get("reuse_tuning_db"),
        "split_rows": given.get("split_rows"),
    }
    return _options(Measuring, {k: v for k, v in fields.items() if v is not None})


def _options(model, fields: dict):
    """``model(**fields)``; a value out of its range is the model's one line (exit 2)."""
    try:
        return model(**fields)
    except ValidationError as e:
        raise options_error(e) from None


def scheduling_from(args, settings: Settings) -> Scheduling:
    """How the flags say to spread the work; as :func:`measuring_from`, a flag the
    command does not have keeps the model's default (``--gpus`` absent: ``("",)``, never
    a look at the host's GPUs). ``--precompile-jobs`` below 0 is 0; other values out
    of range are the model's one line (exit 2)."""
    from zlbench.runner.batch.shard import default_gpus, parse_gpu_list

    given = vars(args)
    fields: dict = {}
    if "gpus" in given:
        text = given["gpus"]
        visible = settings.cuda_visible_devices
        fields["gpus"] = parse_gpu_list(text) if text else default_gpus(visible)
    if "sweep_gpus" in given:
        fields["sweep_gpus"] = parse_sweep_gpus(given["sweep_gpus"], settings)
    if "op_timeout" in given:
        fields["op_timeout_s"] = "auto" if given["op_timeout"] is None else given["op_timeout"]
    if "precompile_jobs" in given:
        fields["precompile_jobs"] = max(0, given["precompile_jobs"] or 0)
    for name in ("gpu_share", "per_process", "max_retries"):
        if given.get(name) is not None:
            fields[name] = given[name]
    return _options(Scheduling, fields)


def config_from_args(args, settings: Settings):
    """The ``BatchConfig`` of ``batch``, ``baseline refresh`` and ``ab`` flags: the
    three option models, built from argv here once, and the batch's own I/O."""
    from zlbench.runner.batch.config import BatchConfig
    from zlbench.runner.batch.costs import load_durations
    from zlbench.runner.batch.shard import parse_shard

    if args.keep_failed and not args.resume:
        raise ZlbenchError("--keep-failed keeps the failures of a resumed batch: add --resume")

    if args.resume and args.out is None:
        raise ZlbenchError("--resume continues a batch dir: name it with --out DIR")
    if args.sweep_gpus is not None and args.replay_root is not None:
        raise ZlbenchError("--sweep-gpus records configs; it cannot be combined with --replay-root")
    from zlbench.runner.execute.worker import check_reuse_tuning_db

    check_reuse_tuning_db(
        args.reuse_tuning_db,
        replay="--replay-root" if args.replay_root is not None else None,
        sweep=args.sweep_gpus,
    )
    scheduling = scheduling_from(args, settings)
    out = args.out or Path("runs") / time.strftime("batch-%Y%m%d-%H%M%S", time.gmtime())
    return BatchConfig.from_options(
        selection_from(args),
        measuring_from(args),
        scheduling,
        out_dir=out,
        flaggems_dirs=flaggems_dirs(args.flaggems_dir, settings),
        shard=parse_shard(args.shard) if args.shard else None,
        replay_root=args.replay_root,
        resume=args.resume,
        keep_failed=args.keep_failed,
        progress=sys.stdout,
        sink=_echo if args.show_output else None,
        argv=list(sys.argv),
        durations=load_durations(args.costs) if args.costs else {},
    )


def _echo(line: str) -> None:
    sys.stdout.write(line + "\n")


def preflight(config) -> None:
    """What the batch's processes need, before any work: an importable triton and a
    FlagGems checkout for every repo of the selection (one line each, exit 2)."""
    from zlbench.runner.batch.plan import plan_selection
    from zlbench.runner.preflight import check_checkouts, check_compiler

    check_compiler(config.python)
    repos = {op.repo for op in plan_selection(config).ops}
    check_checkouts(config.flaggems_dirs, repos, flag="--flaggems-dir")


def add_ops_dir_option(p) -> None:
    """``--ops-dir``: where the inventories and the dismiss list are (every command that
    selects ops, and the gate)."""
    p.add_argument(
        "--ops-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="dir of inventory_<repo>.csv and dismiss.txt (default: ./ops, "
        "else the ops/ dir of this zlbench checkout)",
    )


def add_budget_options(p) -> None:
    """The graph timing's budgets (``models.Timing``, read by :func:`measuring_from`):
    unset, the plugin's defaults (or what PYTEST_ADDOPTS says)."""
    p.add_argument(
        "--warmup-ms",
        type=float,
        default=None,
        metavar="MS",
        help="graph-timing warmup budget per measurement (plugin default 100; "
        "docs/screening.md: budgets)",
    )
    p.add_argument(
        "--replays",
        type=int,
        default=None,
        metavar="N",
        help="graph replays per measurement, the median reported (plugin default 10)",
    )


def add_rebuilt_option(p) -> None:
    """``--rebuilt DIR`` (repeated): the codegen screen classifies the kernels that
    ``zlbench codegen --shard K/N`` jobs rebuilt instead of rebuilding them (codegen,
    gate; docs/codegen.md "Sharded rebuild")."""
    p.add_argument(
        "--rebuilt",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="classify the kernels rebuilt by `zlbench codegen --shard K/N` jobs (one "
        "--rebuilt per shard, every shard once) instead of rebuilding them here",
    )


def add_store_options(p) -> None:
    """--store and --store-branch (``gate`` and ``history``)."""
    g = p.add_argument_group("results store (docs/history.md)")
    g.add_argument(
        "--store",
        metavar="URL",
        help="results store: a SQLite file (PATH or sqlite:///PATH) or postgresql://...; "
        "default: $ZLBENCH_STORE",
    )
    g.add_argument(
        "--store-branch",
        default="main",
        metavar="NAME",
        help="the branch the commit's series is on (default main)",
    )
