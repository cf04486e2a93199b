"""`zlbench merge SHARD_DIR... --out DIR`: combine shard batch dirs (or gate dirs) into one.

Batch dirs (``zlbench batch --shard``) merge into one batch dir. Gate dirs
(``zlbench gate --shard K/N --out DIR``: ``results/`` and ``confirm/<i>/``) merge
into one gate-shaped dir, ``DIR/results/`` and ``DIR/confirm/<i>/``, that
``zlbench gate --results DIR`` judges with the shards' confirmation samples.
Every shard that holds an op must have its batch.json (what it replayed, and how):
shards that disagree, or one without it, are refused.
"""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "merge",
        help="combine shard batch dirs (or shard gate dirs) into one",
        description=__doc__.splitlines()[0],
    )
    p.add_argument(
        "shard_dirs",
        nargs="+",
        type=Path,
        metavar="SHARD_DIR",
        help="the shards' batch dirs, or their gate --out dirs (not mixed)",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="new merged dir")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from zlbench.runner.batch.progress import count_statuses
    from zlbench.workflow.merge import merge_dirs

    m = merge_dirs(args.shard_dirs, args.out)
    counts = ", ".join(f"{k} {v}" for k, v in count_statuses(m.statuses).items() if v)
    passes = f"; {len(m.passes)} confirm pass(es)" if m.gate else ""
    print(
        f"{m.out}: {len(m.statuses)} op(s) from {len(args.shard_dirs)} shard(s), "
        f"{m.rows} row(s) ({counts}){passes}"
    )
    return 0
