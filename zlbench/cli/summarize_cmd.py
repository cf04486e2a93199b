"""`zlbench summarize BATCH_DIR`: rebuild summary.csv from the batch's run dirs."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "summarize", help="rebuild summary.csv of a batch dir", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "batch_dir", type=Path, metavar="BATCH_DIR", help="batch dir whose summary.csv to rebuild"
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    from zlbench.protocol.layout import SUMMARY_CSV as SUMMARY
    from zlbench.runner.batch.status import summarize

    rows = summarize(args.batch_dir)
    print(f"{args.batch_dir / SUMMARY}: {rows} row(s)")
    return 0 if rows else 2
