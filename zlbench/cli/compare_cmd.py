"""`zlbench compare A B`: judge B against A as the gate does (record A, replay B, compare).

A and B are each a run dir, a batch dir, a gate output dir or a baseline dir.
The report's first lines say in which caliber B was measured: pinned (B replayed
A's autotune records, in the same tuning space) or not (B ran with winners of its
own: own-best, tuner drift included); --caliber pinned refuses a B that did not
(docs/judging.md "Calibers"). Exit 0: nothing regressed; 1: a row regressed or
failed; 2: bad input, no row in common, or (--caliber pinned) B not pinned to A.
"""

from __future__ import annotations

import sys
from pathlib import Path

from zlbench.cli.options import add_thresholds_option
from zlbench.cli.plaintext import md_to_text
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline, load_results, report_label
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import Row, RowKey, ThresholdDefaults
from zlbench.protocol.layout import MANIFEST_YAML
from zlbench.report.compare import caliber_lines, check_records, compare, render_compare
from zlbench.report.escape import md_text
from zlbench.runner.ab.records import op_records


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="judge B against A with the gate's estimator and thresholds (exit 0/1/2)",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("a", metavar="A", help="run, batch, gate output or baseline dir (the reference)")
    p.add_argument("b", metavar="B", help="run, batch, gate output or baseline dir (judged)")
    add_thresholds_option(p, "A's manifest when A is a baseline, else zlbench's")
    p.add_argument(
        "--caliber",
        choices=("pinned", "any"),
        default="any",
        help="pinned: refuse (exit 2) unless B replayed A's autotune records in A's tuning "
        "space for every op; any (default): compare, the report's first lines say which "
        "caliber it is and which winners differ",
    )
    p.add_argument(
        "--format",
        choices=("auto", "markdown", "text"),
        default="auto",
        help="markdown (for a PR or a file) or plain text (default auto: text on a terminal, "
        "markdown otherwise)",
    )
    p.set_defaults(func=_run)


CONFIRM_NOTE = (
    "{side} holds {n} confirm re-measure pass(es) (confirm/): compare judges each row on "
    "its first measurement only, where the gate's report judges a flagged row on all its "
    "samples, so their geomeans can differ (zlbench report DIR gives the report's)"
)


def load_side(path: str) -> tuple[dict[RowKey, Row], ThresholdDefaults | None, int]:
    """A dir's rows, its thresholds when it is a baseline dir, and its confirm passes
    (which compare does not use)."""
    if (Path(path) / MANIFEST_YAML).is_file():
        b = load_baseline(path)
        rows = {r.key(res.repo, res.run_name): r for res in b.ops.values() for r in res.rows}
        return rows, b.manifest.thresholds, 0
    res = load_results(path)
    return res.rows(), None, len(res.confirm)


def _run(args) -> int:
    a, th_a, confirm_a = load_side(args.a)
    b, _, confirm_b = load_side(args.b)
    if not a or not b:
        raise ZlbenchError(f"nothing to compare: {args.a if not a else args.b} has no rows")
    names = {n for k in (*a, *b) for n in (k.op, k.run_name)}  # an override of neither: refused
    th = load_thresholds(args.thresholds, th_a or ThresholdDefaults(), names)
    c = compare(a, b, th)
    if not c.rows:
        raise ZlbenchError(f"nothing to compare: {args.a} and {args.b} have no row in common")
    records = check_records(op_records(args.a), op_records(args.b))
    if args.caliber == "pinned" and records.mismatch:
        raise ZlbenchError(f"--caliber pinned: {'; '.join(caliber_lines(records)[:2])}")
    text = render_compare(c, report_label(args.a), report_label(args.b), records)
    notes = [
        CONFIRM_NOTE.format(side=side, n=n) for side, n in (("A", confirm_a), ("B", confirm_b)) if n
    ]
    text += "".join(f"note: {md_text(line, None)}\n" for line in notes)
    plain = args.format == "text" or (args.format == "auto" and sys.stdout.isatty())
    print(md_to_text(text) if plain else text, end="")
    return c.exit_code
