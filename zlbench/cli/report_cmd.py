"""`zlbench report RESULTS_DIR --baseline DIR`: re-judge a downloaded results dir
(a gate output dir or a batch dir) offline and re-render every report
(:func:`zlbench.workflow.gate.rejudge`)."""

from __future__ import annotations

from pathlib import Path

from zlbench.cli.gate_cmd import judging_fields
from zlbench.cli.options import add_baseline_options, add_judging_options, default_ops_dir
from zlbench.cli.settings import Settings


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="re-judge a results dir offline and re-render every report (codegen/ explained too)",
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="gate output dir, batch dir or run dir")
    add_baseline_options(p)
    add_judging_options(p, "judge despite an environment mismatch")
    p.add_argument("--out", default="zlbench-report", metavar="DIR", help="output dir")
    p.set_defaults(func=_run)


def job_from_args(args, settings: Settings, ops_dir: Path):
    """The job that the ``report`` flags describe (a
    :class:`zlbench.workflow.gate_job.GateJob`): the judging flags it shares with
    ``gate`` (:func:`zlbench.cli.gate_cmd.judging_fields`); it measures nothing, so the
    rest is the job's defaults (``--time all``, no A/B, the option models' defaults)."""
    from zlbench.workflow.gate_job import GateJob

    return GateJob(**judging_fields(args, settings, ops_dir))


def _run(args) -> int:
    from zlbench.cli.trees import resolve_one
    from zlbench.workflow.gate import rejudge
    from zlbench.workflow.gate_record import as_gated

    settings = Settings.from_env()
    job = job_from_args(args, settings, default_ops_dir())
    return rejudge(as_gated(job, lambda v: resolve_one(v, settings), print, "report"))
