"""`zlbench report RESULTS_DIR --baseline DIR`: re-judge a downloaded results dir
(a gate output dir or a batch dir) offline and re-render every report
(:func:`zlbench.workflow.gate.rejudge`)."""

from __future__ import annotations

from zlbench.cli.batch_cmd import default_ops_dir
from zlbench.cli.gate_cmd import job_from_args
from zlbench.cli.settings import Settings
from zlbench.workflow.gate import rejudge


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="re-render junit.xml/report.md/verdict.json offline")
    p.add_argument("results", metavar="RESULTS_DIR", help="gate output dir, batch dir or run dir")
    p.add_argument("--baseline", required=True, metavar="DIR")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--ops", nargs="+", metavar="SPEC")
    sel.add_argument("--ops-file", metavar="F")
    p.add_argument("--thresholds", metavar="Y")
    p.add_argument("--allow-env-mismatch", action="store_true")
    p.add_argument("--out", default="zlbench-report", metavar="DIR")
    p.set_defaults(func=_run)


def _run(args) -> int:
    return rejudge(job_from_args(args, Settings.from_env(), default_ops_dir()))
