"""`zlbench summarize` (placeholder: being written; see DESIGN.md §8)."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("summarize", help="(not yet implemented)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    print("zlbench summarize: not implemented yet")
    return 2
