"""Packed trees on the command line: every argument that names a baseline or a
results dir to read may name a packed tree (``baselines/v7`` with ``baselines/v7.lock``
beside it and no dir): it is unpacked into the read-only cache on first use and the
command reads the cache's copy (zlbench/models/packed.py, docs/baselines.md "Packed
versions"). The one place that says which arguments these are."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.models.packed import resolve_tree

# argument dest -> read as a tree (a dir the command reads, never writes)
TREE_ARGS = ("baseline", "results", "a", "b", "reuse", "replay_root", "replay_from")
BASELINE_TREE_ARGS = ("dir", "src")  # `baseline show|verify DIR`, `baseline compact SRC`


def resolve_tree_args(args: argparse.Namespace, settings: Settings | None = None) -> None:
    """Replace each tree argument that names a packed tree by its unpacked copy."""
    settings = settings or Settings.from_env()
    names = TREE_ARGS + (BASELINE_TREE_ARGS if args.command == "baseline" else ())
    given = vars(args)
    for name in names:
        value = given.get(name)
        if not isinstance(value, (str, Path)) or not value:
            continue
        got = resolve_one(value, settings)
        if got != Path(value):
            print(f"zlbench: {value} is packed; reading {got}", file=sys.stderr)
            given[name] = type(value)(got) if isinstance(value, Path) else str(got)


def resolve_one(value: str | Path, settings: Settings) -> Path:
    """The dir holding tree ``value``: itself, or its packed copy (progress on stderr)."""
    return resolve_tree(
        value,
        cache=settings.cache_dir,
        source=settings.archive_source,
        progress=lambda line: print(f"zlbench: {line}", file=sys.stderr, flush=True),
    )
