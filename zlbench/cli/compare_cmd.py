"""`zlbench compare A B`: A/B table of two run or batch dirs (record A, replay B, compare)."""

from __future__ import annotations

from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_results
from zlbench.report.compare import render_compare


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="A/B table of two run or batch dirs")
    p.add_argument("a", metavar="A", help="run dir, batch dir or gate output dir")
    p.add_argument("b", metavar="B", help="run dir, batch dir or gate output dir")
    p.set_defaults(func=_run)


def _run(args) -> int:
    a, b = load_results(args.a).rows(), load_results(args.b).rows()
    if not a or not b:
        raise ZlbenchError(f"nothing to compare: {args.a if not a else args.b} has no rows")
    print(render_compare(a, b, args.a, args.b), end="")
    return 0
