"""`zlbench history`: the results store (docs/history.md).

- ``zlbench history --store URL --row ROW`` (or ``--op OP``): the series, one line per
  commit, with the row's usual noise;
- ``zlbench history --store URL --html OUT``: the static trend page;
- ``zlbench history add GATE_DIR --store URL --baseline DIR [--commit SHA ...]``: re-judge
  a gate dir against a trusted baseline (as ``zlbench report``) and record that verdict.

``--store`` defaults to ``ZLBENCH_STORE``.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from zlbench.cli.options import (
    add_baseline_options,
    add_judging_options,
    add_store_options,
    default_ops_dir,
)
from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.models.history import CommitRef


def store_url(args, settings: Settings) -> str | None:
    return args.store or settings.store


def add_parser(sub) -> None:
    p = sub.add_parser(
        "history",
        help="the results store: a row's or op's series across commits, the trend page, "
        "or `history add GATE_DIR` to record a gate",
    )
    # not argparse choices: a bad word is refused after the numeric flags are checked
    p.add_argument("action", nargs="?", metavar="add", help="add: record a gate dir")
    p.add_argument("results", nargs="?", metavar="GATE_DIR", help="with add: the gate dir")
    add_store_options(p)
    show = p.add_argument_group("reading")
    what = show.add_mutually_exclusive_group()
    what.add_argument("--row", metavar="ROW", help="a row's series (its label, as the reports)")
    what.add_argument("--op", metavar="OP", help="every row of an op (<repo>/<op> or <op>)")
    show.add_argument(
        "--html", metavar="OUT", help="write the trend page (HTML) to OUT (of --row/--op if given)"
    )
    show.add_argument("--last", type=int, default=None, metavar="N", help="only the last N commits")
    rec = p.add_argument_group("history add: where the gate's commit sits")
    rec.add_argument("--commit", metavar="SHA", help="FlagTree commit (default: the results')")
    order = rec.add_mutually_exclusive_group()
    order.add_argument("--parent", metavar="SHA", help="the commit before it (in the store)")
    order.add_argument("--position", type=int, metavar="N", help="its position on the branch")
    rec.add_argument("--run-key", metavar="KEY", help="the run's identity (e.g. the CI run id)")
    add_baseline_options(p)
    add_judging_options(p, "judge despite an environment mismatch")
    p.set_defaults(func=_run)


def _run(args) -> int:
    settings = Settings.from_env()
    url = store_url(args, settings)
    if not url:
        raise ZlbenchError("no results store: give --store URL or set ZLBENCH_STORE")
    if args.action not in (None, "add"):
        raise ZlbenchError(
            f"history {args.action!r}: the one action is add (history add GATE_DIR); "
            "without it, history reads the store"
        )
    if args.action == "add":
        return _add(args, url, settings)
    if args.results:
        raise ZlbenchError(f"{args.results}: a gate dir is only read by `history add`")
    if args.commit or args.parent or args.position is not None or args.run_key:
        raise ZlbenchError("--commit, --parent, --position and --run-key are for `history add`")
    from zlbench.history.store import open_store

    with open_store(url, create=False) as store:
        if args.html:
            return _trend(store, args)
        if args.row:
            points = store.series(args.row, branch=args.store_branch, last=args.last)
            if not points:
                raise ZlbenchError(f"row {args.row!r}: not in the store on {args.store_branch}")
        elif args.op:
            points = store.op_series(args.op, branch=args.store_branch)
            if not points:
                raise ZlbenchError(f"op {args.op!r}: not in the store on {args.store_branch}")
        else:
            return _summary(store, args.store_branch)
    from zlbench.report.trend import render_series

    print(render_series(points, last=args.last), end="")
    return 0


def _summary(store, branch: str) -> int:
    counts = store.counts()
    commits = store.commits(branch=branch)
    span = f", {commits[0].sha[:12]} .. {commits[-1].sha[:12]}" if commits else ""
    print(f"results store {store.label}: {counts['runs']} run(s), {counts['commits']} commit(s) "
          f"({len(commits)} on {branch}{span}), {counts['rowkeys']} row(s), "
          f"{counts['points']} point(s)")  # fmt: skip
    print("zlbench history --row ROW | --op OP | --html OUT")
    return 0


def _trend(store, args) -> int:
    from zlbench.models.base import atomic_write_text
    from zlbench.report.trend import render_trend

    branch = args.store_branch
    series = {}
    if args.row:
        wanted = [args.row]
    elif args.op:
        wanted = sorted({p.row for p in store.op_series(args.op, branch=branch)})
    else:
        wanted = store.rows()
    for row in wanted:
        pts = store.series(row, branch=branch, last=args.last)
        if pts:
            series.setdefault(row.split(" ", 1)[0], {})[row] = pts
    if not series:
        raise ZlbenchError(f"the store holds no row on {branch}")
    out = Path(args.html)
    atomic_write_text(out, render_trend(series, branch=branch, store=store.label))
    print(f"trend page: {out} ({sum(len(v) for v in series.values())} rows, {len(series)} ops)")
    return 0


def _add(args, url: str, settings: Settings) -> int:
    """Re-judge the gate dir (never believe its verdict.json: docs/security.md), then
    record the judge's verdict."""
    from zlbench.cli.report_cmd import job_from_args
    from zlbench.cli.trees import resolve_one
    from zlbench.history.record import manifest_digest
    from zlbench.history.store import open_store
    from zlbench.models import GateVerdict, load_json_model
    from zlbench.protocol.layout import VERDICT_JSON
    from zlbench.workflow.gate import rejudge
    from zlbench.workflow.gate_job import GateSeams
    from zlbench.workflow.gate_record import as_gated

    if not args.results:
        raise ZlbenchError("history add: give the gate dir (history add GATE_DIR)")
    with tempfile.TemporaryDirectory(prefix="zl-history-") as tmp:
        args.out = str(Path(tmp) / "judged")
        job = job_from_args(args, settings, default_ops_dir())
        say = lambda line: print(line, file=sys.stderr)  # noqa: E731
        job = as_gated(job, lambda v: resolve_one(v, settings), say, "history add")
        job.step_summary = None  # re-judged for the store, not for the job's summary
        said = io.StringIO()  # the judge's lines name the temp dir: only its summary shown
        rejudge(job, GateSeams(stdout=said))
        print(said.getvalue().split("\n", 1)[0], file=sys.stderr)
        verdict = load_json_model(Path(args.out) / VERDICT_JSON, GateVerdict)
    if verdict.verdict == "ERROR":
        raise ZlbenchError(f"{args.results}: the verdict is ERROR (nothing judged): not recorded")
    sha = args.commit or verdict.current_env.flagtree_commit
    if not sha:
        raise ZlbenchError(f"{args.results}: the results record no FlagTree commit: give --commit")
    commit = CommitRef(
        sha=sha, branch=args.store_branch, parent=args.parent, position=args.position
    )
    with open_store(url) as store:
        run_id = store.add_gate(
            verdict,
            commit,
            parent=args.parent,
            run_key=args.run_key,
            baseline_digest=manifest_digest(verdict.baseline_dir),
        )
        pos = next(c.position for c in store.commits(branch=commit.branch) if c.sha == sha)
        print(f"results store {store.label}: run {run_id}: {sha} at position {pos} on "
              f"{commit.branch}, {len(verdict.rows)} rows ({verdict.verdict})")  # fmt: skip
    return 0
