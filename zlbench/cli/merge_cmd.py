"""`zlbench merge SHARD_DIR... --out DIR`: combine shard batch dirs into one."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "merge", help="combine shard batch dirs into one", description=__doc__.splitlines()[0]
    )
    p.add_argument("shard_dirs", nargs="+", type=Path, metavar="SHARD_DIR")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="new merged batch dir")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from zlbench.runner.merge import merge_batches
    from zlbench.runner.progress import count_statuses

    out, statuses, rows = merge_batches(args.shard_dirs, args.out)
    counts = ", ".join(f"{k} {v}" for k, v in count_statuses(statuses).items() if v)
    print(
        f"{out}: {len(statuses)} op(s) from {len(args.shard_dirs)} shard(s), "
        f"{rows} row(s) ({counts})"
    )
    return 0
