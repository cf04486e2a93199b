"""Where one op of a baseline could have run another op's autotune config (docs/design.md
§5 item 25): FlagGems' LibEntry carried the first launch's config of a kernel and launch
key to later ops of the same process until zlbench emptied its cache at each op's start
(e6581f79).

    python benchmarks/records_overlap.py BASELINE [--batch DIR] [--list N]

Prints, from the baseline's records alone (no GPU):

* ``shared``: the (kernel, autotune key) pairs that more than one op records, and of them
  ``differing``, those whose ops recorded different configs, with the ops involved: in a
  process where one such op follows the other, the second ran the first one's config;
* ``unrecorded``: the ops whose codegen index shows a timed launch of a kernel that some
  op records but whose own records lack that kernel: recorded behind another op's cache
  (a replay of the op now tunes it live: ``AUTOTUNE_REPLAY_FALLBACK key_missing``);
* ``ran unpinned``: the ops whose codegen index shows a timed launch of a kernel they
  record, compiled with a config none of their records of it pins
  (``codegen.pinned.config_matches``, the rule the screen keeps pinned configs by): the
  baseline's rows
  of the op were measured with another config, another op's if the cache carried it.
  A launcher that rewrites a constexpr after the tuner chose (FlagGems' flash attention
  and ``PRE_LOAD_V``, plugins/replay/binaries.py) shows here too.

``--batch DIR`` reads the codegen indexes of a replay batch of the baseline instead (a
capture's, `baseline capture --work DIR` or `gpu_capture.sh`'s `capwork-*/replay`):
its ``ran unpinned`` ops ran, in the batch's processes, a config the baseline does not
pin them, which the fix above should leave to the launchers that rewrite a constexpr.
A packed baseline is read through its unpacked copy.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.codegen.pinned import config_matches, kernel_of
from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, load_json_model
from zlbench.models.base import REPOS
from zlbench.models.codegen import CODEGEN_INDEX, codegen_dir
from zlbench.protocol.layout import op_key, records_dir
from zlbench.runner.ab.records import read_records_dir


@dataclass
class Overlap:
    keys: int = 0  # (kernel, key) pairs recorded
    shared: dict[tuple[str, str], dict[str, list[str]]] = field(default_factory=dict)
    unrecorded: dict[str, list[str]] = field(default_factory=dict)  # op -> kernels
    ran_unpinned: dict[str, list[str]] = field(default_factory=dict)  # op -> kernels

    @property
    def differing(self) -> dict[tuple[str, str], dict[str, list[str]]]:
        return {k: v for k, v in self.shared.items() if len(v) > 1}

    def differing_ops(self) -> set[str]:
        return {op for configs in self.differing.values() for ops in configs.values() for op in ops}


def overlap(baseline: Path, runs: Path | None = None) -> Overlap:
    """Read every op's records under ``baseline`` and its codegen index under ``runs``
    (a replay batch of it; default: ``baseline``'s own)."""
    by_key: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    recorded: dict[str, dict[str, list[dict]]] = {}  # op -> kernel -> its configs
    launched: dict[str, set[str]] = {}
    unpinned: dict[str, set[str]] = defaultdict(set)
    repos = [baseline / r for r in REPOS if (baseline / r).is_dir()]
    for op_dir in sorted(p for repo in repos for p in repo.iterdir() if p.is_dir()):
        op = op_key(op_dir.parent.name, op_dir.name)
        records = read_records_dir(records_dir(op_dir))
        if records is None and records_dir(op_dir).is_dir():
            raise ZlbenchError(f"{records_dir(op_dir)}: autotune records that do not read")
        kernels: dict[str, list[dict]] = defaultdict(list)
        for kernel, keys in (records or {}).items():
            for key, config in keys.items():
                kernels[kernel].append(config)
                by_key[(kernel, key)][json.dumps(config, sort_keys=True)].append(op)
        recorded[op] = kernels
        index = codegen_dir(op_dir if runs is None else runs / op_dir.parent.name / op_dir.name)
        index = index / CODEGEN_INDEX
        if index.is_file():
            launched[op] = set()
            for r in load_json_model(index, CodegenIndex).records:
                if not any(u.timed for u in r.used_by):
                    continue
                kernel = kernel_of(r)
                launched[op].add(kernel)
                if kernel in kernels and not any(config_matches(r, c) for c in kernels[kernel]):
                    unpinned[op].add(kernel)
    out = Overlap(keys=len(by_key))
    out.shared = {k: dict(v) for k, v in by_key.items() if sum(len(ops) for ops in v.values()) > 1}
    tuned = {kernel for kernel, _ in by_key}
    for op, kernels in sorted(launched.items()):
        missing = sorted(k for k in kernels & tuned if k not in recorded.get(op, {}))
        if missing:
            out.unrecorded[op] = missing
    out.ran_unpinned = {op: sorted(ks) for op, ks in sorted(unpinned.items())}
    return out


def render(o: Overlap, limit: int) -> str:
    lines = [
        f"(kernel, key) pairs recorded: {o.keys}; recorded by more than one op: "
        f"{len(o.shared)}; differing configs: {len(o.differing)} "
        f"({len(o.differing_ops())} ops)"
    ]
    for (kernel, key), configs in list(o.differing.items())[:limit]:
        ops = " | ".join(", ".join(v) for v in configs.values())
        lines.append(f"  {kernel} {key}: {ops}")
    lines.append(
        f"ops with a timed launch of a tuned kernel they do not record: {len(o.unrecorded)}"
    )
    lines += [f"  {op}: {', '.join(ks)}" for op, ks in list(o.unrecorded.items())[:limit]]
    lines.append(f"ops whose timed launch ran a config they do not pin: {len(o.ran_unpinned)}")
    lines += [f"  {op}: {', '.join(ks)}" for op, ks in list(o.ran_unpinned.items())[:limit]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("baseline", type=Path)
    ap.add_argument("--batch", type=Path, metavar="DIR", help="a replay batch's codegen indexes")
    ap.add_argument("--list", type=int, default=20, metavar="N", help="list N of each (20)")
    args = ap.parse_args(argv)
    try:
        root = resolve_one(args.baseline, Settings.from_env())
        if args.batch is not None and not args.batch.is_dir():
            raise ZlbenchError(f"--batch {args.batch}: not a directory")
        o = overlap(root, args.batch)
    except ZlbenchError as e:
        print(f"records_overlap: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(render(o, args.list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
