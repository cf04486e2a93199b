"""`zlbench unpack DIR...`: print the path of each packed tree's unpacked, read-only
copy (unpacking it on first use), for scripts that read a packed baseline's files
(``SHAPES=$(zlbench unpack baselines/v6)/shapes.yaml``). A dir that is checked out
prints as itself."""

from __future__ import annotations

import sys
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.errors import ZlbenchError
from zlbench.models.packed import unpacked_problems


def add_parser(sub) -> None:
    p = sub.add_parser("unpack", help="print where a packed tree's unpacked copy is")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="tree (baselines/v7)")
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-hash every file of each unpacked copy against its lock (exit 1 on a change)",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    settings, rc = Settings.from_env(), 0
    for d in args.dirs:
        got = resolve_one(d, settings)
        if not got.is_dir():
            raise ZlbenchError(f"{d}: neither a dir nor a packed tree (no {d.name}.lock)")
        print(got)
        if args.verify and got != d:
            problems = unpacked_problems(got)
            for line in problems:
                print(f"FAIL {line}")
            if problems:
                rc = 1
                print(
                    f"zlbench unpack: {d}: the unpacked copy differs from its lock in "
                    f"{len(problems)} file(s); remove {got.parent} (chmod -R u+w first) "
                    "to unpack it anew",
                    file=sys.stderr,
                )
    return rc
