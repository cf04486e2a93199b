"""`zlbench report RESULTS_DIR --baseline DIR`: re-judge a downloaded results dir
(a gate output dir or a batch dir) offline and re-render every report."""

from __future__ import annotations

from pathlib import Path

from zlbench.cli.batch_cmd import default_ops_dir
from zlbench.cli.gate_cmd import common_inputs, gate_options, judge_and_write
from zlbench.cli.settings import Settings
from zlbench.gate.load import load_results


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
    baseline, th, scope = common_inputs(args)
    opts = gate_options(args, scope)
    opts.results_label = args.results
    results = load_results(args.results)
    return judge_and_write(
        baseline,
        results,
        th,
        opts,
        Path(args.out),
        Settings.from_env(),
        default_ops_dir(),
        command="report",
    )
