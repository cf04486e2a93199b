"""A capture's ops files: a baseline's ops by their recorded seconds, shortest first
(issue 51, docs/replay.md "The next GPU session").

    python benchmarks/ops_by_seconds.py BASELINE [--above S] [--upto S] [--done BATCH_DIR]...
        [--recapture]

Prints ``repo/run_name`` a line (an ``--ops-file`` of ``zlbench baseline capture``), the
ops whose recorded seconds (the baseline's ``ops_status.csv``) are in (``--above``,
``--upto``], shortest first, less every op a ``--done`` batch dir ran (its
``ops_status.csv``, any status: a capture resumed elsewhere, or one that timed out
there; a batch that replayed another baseline, v5's capture on the machine that then
captures v7, counts for none of its ops), and less every op the baseline already holds
a capture of (``codegen/launches.json``: a capture version taken over several sessions,
v7h, whose derive keeps them) unless ``--recapture``.

A batch deals its ops longest first, so a device call cut at its limit captures the most
ops when each call's file holds the shortest left. A packed baseline is read through its
unpacked copy.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.errors import ZlbenchError
from zlbench.models import read_ops_status
from zlbench.models.codegen import codegen_dir
from zlbench.models.replay import LAUNCHES_JSON
from zlbench.protocol.layout import MANIFEST_YAML, OPS_STATUS, op_key
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.capture_baseline import same_baseline


def _of_another(batch: Path, baseline: Path) -> bool:
    """Whether ``batch`` says it replayed another baseline than ``baseline`` (or a
    capture version of it): its batch.json names a replay root whose manifest is here and
    is not ``baseline``'s (``capture_baseline.same_baseline``)."""
    info = read_batch_info(batch)
    if info is None or info.mode != "replay" or not info.replay_root:
        return False
    root = Path(info.replay_root)
    if not (root / MANIFEST_YAML).is_file() or not (baseline / MANIFEST_YAML).is_file():
        return False
    return same_baseline(root, baseline) is not None


def ops_by_seconds(
    baseline: Path,
    above: float = 0.0,
    upto: float = math.inf,
    done: list[Path] = (),
    recapture: bool = False,
) -> list[str]:
    """The op keys of ``baseline`` recorded in (``above``, ``upto``] seconds, shortest
    first (ties by key), less those a ``done`` batch dir ran and, unless ``recapture``,
    those ``baseline`` holds a capture of."""
    ran = {
        op_key(s.repo, s.run_name)
        for d in done
        if not _of_another(d, baseline)
        for s in read_ops_status(d / OPS_STATUS)
    }
    ops = [
        (s.seconds, op_key(s.repo, s.run_name))
        for s in read_ops_status(baseline / OPS_STATUS)
        if above < s.seconds <= upto
    ]
    return [
        k
        for _, k in sorted(ops)
        if k not in ran and (recapture or not (codegen_dir(baseline / k) / LAUNCHES_JSON).is_file())
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("baseline", type=Path)
    ap.add_argument("--above", type=float, default=0.0, metavar="S")
    ap.add_argument("--upto", type=float, default=math.inf, metavar="S")
    ap.add_argument("--done", type=Path, action="append", default=[], metavar="BATCH_DIR")
    ap.add_argument(
        "--recapture", action="store_true", help="keep the ops the baseline holds a capture of"
    )
    args = ap.parse_args(argv)
    try:
        root = resolve_one(args.baseline, Settings.from_env())
        keys = ops_by_seconds(root, args.above, args.upto, args.done, args.recapture)
    except ZlbenchError as e:
        print(f"ops_by_seconds: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(f"{k}\n" for k in keys))
    print(f"{len(keys)} op(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
