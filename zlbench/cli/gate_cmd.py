"""`zlbench gate`: replay a baseline's op set, judge it, write the reports.

Parses argv and the environment into a :class:`zlbench.workflow.gate.GateJob` and
runs :func:`zlbench.workflow.gate.run_gate`; the workflow does the rest.
"""

from __future__ import annotations

import sys
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.workflow.gate import GateJob, run_gate


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="replay a baseline's ops, judge them, write junit.xml, report.md, verdict.json",
    )
    p.add_argument("--baseline", required=True, metavar="DIR", help="baseline dir (baselines/vN)")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--ops", nargs="+", metavar="SPEC", help="judge only these baseline ops")
    sel.add_argument("--ops-file", metavar="F", help="file of op specs, one a line")
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="measure shard K of N (1-based) and confirm its flagged ops; the verdict comes "
        "from `zlbench merge` of the shards' --out dirs + `gate --results`",
    )
    p.add_argument("--results", metavar="DIR", help="judge this results dir; measure nothing")
    p.add_argument("--thresholds", metavar="Y", help="thresholds yaml (default: the manifest's)")
    p.add_argument("--allow-env-mismatch", action="store_true", help="judge despite a mismatch")
    p.add_argument(
        "--confirm", type=int, metavar="N", help="re-measures of a flagged op (default: manifest)"
    )
    p.add_argument(
        "--ops-dir",
        default=None,
        metavar="D",
        help="inventories and dismiss list (default: ./ops, else this zlbench checkout's ops/)",
    )
    p.add_argument("--out", default="zlbench-gate", metavar="DIR", help="output dir")
    p.set_defaults(func=_run)


def job_from_args(args, settings: Settings, ops_dir: Path) -> GateJob:
    """The job that ``gate`` and ``report`` flags describe (``report`` has no
    --shard / --confirm / --results flag: its results dir is positional)."""
    from zlbench.runner.batch.shard import parse_shard

    shard = getattr(args, "shard", None)
    return GateJob(
        baseline=args.baseline,
        out=Path(args.out),
        ops_dir=ops_dir,
        results=args.results,
        thresholds=args.thresholds,
        ops=args.ops,
        ops_file=args.ops_file,
        shard=parse_shard(shard) if shard else None,
        confirm=getattr(args, "confirm", None),
        allow_env_mismatch=args.allow_env_mismatch,
        flaggems_dirs={k: Path(v) for k, v in settings.flaggems_dirs.items()},
        cuda_visible_devices=settings.cuda_visible_devices,
        step_summary=settings.github_step_summary,
        argv=list(sys.argv),
    )


def _run(args) -> int:
    from zlbench.cli.batch_cmd import default_ops_dir

    ops_dir = Path(args.ops_dir) if args.ops_dir else default_ops_dir()
    return run_gate(job_from_args(args, Settings.from_env(), ops_dir))
