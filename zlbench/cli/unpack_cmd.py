"""`zlbench unpack DIR...`: print the path of each packed tree's unpacked, read-only
copy (unpacking it on first use), for scripts that read a packed baseline's files
(``SHAPES=$(zlbench unpack baselines/v6)/shapes.yaml``). A dir that is checked out
prints as itself."""

from __future__ import annotations

from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.errors import ZlbenchError


def add_parser(sub) -> None:
    p = sub.add_parser("unpack", help="print where a packed tree's unpacked copy is")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="tree (baselines/v7)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    settings = Settings.from_env()
    for d in args.dirs:
        got = resolve_one(d, settings)
        if not got.is_dir():
            raise ZlbenchError(f"{d}: neither a dir nor a packed tree (no {d.name}.lock)")
        print(got)
    return 0
