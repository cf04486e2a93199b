"""`zlbench summarize BATCH_DIR`: rebuild summary.csv from the batch's run dirs.

``-o DIR`` writes it to DIR instead (the batch dir is left as it is: a baseline,
a downloaded artifact). ``--legacy-csv -o DIR`` writes DIR/ops_status.csv and
DIR/summary.csv in the seed scripts' columns (zlbench.runner.batch.legacy,
docs/screening.md); DIR must not be the batch dir, whose own files zlbench reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from zlbench.errors import ZlbenchError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "summarize", help="rebuild summary.csv of a batch dir", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "batch_dir", type=Path, metavar="BATCH_DIR", help="batch dir whose summary.csv to rebuild"
    )
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the CSV(s) to DIR instead of BATCH_DIR (the batch dir is not changed)",
    )
    p.add_argument(
        "--legacy-csv",
        action="store_true",
        help="with -o: ops_status.csv and summary.csv in the seed scripts' column names "
        "(return_code, elapsed_ms, rows_total, rows_success, notes, out_dir; summary.csv "
        "with op_status and notes, a row for every op; docs/screening.md)",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    from zlbench.protocol.layout import OPS_STATUS, SUMMARY_CSV
    from zlbench.runner.batch.status import summarize

    if args.legacy_csv:
        if args.out is None:
            raise ZlbenchError("--legacy-csv writes another batch's columns: name a dir with -o")
        if os.path.realpath(args.out) == os.path.realpath(args.batch_dir):
            raise ZlbenchError(
                f"-o {args.out} is the batch dir: its own ops_status.csv and summary.csv "
                "are what zlbench reads; choose another dir"
            )
        _refuse_baseline_dest(args.out)
        from zlbench.runner.batch.legacy import write_legacy_csvs

        if not Path(args.batch_dir).is_dir():
            raise ZlbenchError(f"{args.batch_dir}: not a directory")
        ops, rows = write_legacy_csvs(args.batch_dir, args.out)
        print(f"{args.out / OPS_STATUS}: {ops} op(s); {args.out / SUMMARY_CSV}: {rows} row(s)")
        return 0
    _refuse_baseline_dest(args.out or args.batch_dir)
    rows = summarize(args.batch_dir, out_dir=args.out)
    print(f"{(args.out or args.batch_dir) / SUMMARY_CSV}: {rows} row(s)")
    return 0 if rows else 2


def _refuse_baseline_dest(dest: Path) -> None:
    """A baseline is never written to: a summary that would land in one (the batch dir
    given is a baseline, or ``-o`` points inside one) is one line, exit 2."""
    from zlbench.gate.baselines import baseline_above, check_out_outside_baseline

    root = baseline_above(dest)
    if root is not None:
        check_out_outside_baseline(dest, root)
