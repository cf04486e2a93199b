"""Bytes per row of a baseline, by kind of file, and what its bulky text would weigh
stored content-addressed and gzip-compressed (docs/baselines.md, "Size").

    python benchmarks/baseline_size.py BASELINE_DIR [--rows-for 50000]

Rows = the rows of every ``result.json``. Kinds: ``result.json``, autotune records,
TTGIR dumps (``ttgir/``), codegen records (``codegen/index.json`` + blobs, already
content-addressed and gzip'd), other. For the TTGIR text it also prints the size
if each distinct text were stored once (sha256-named) and gzip'd at level 9, which
is how ``codegen/blobs/`` stores IR; and projects every figure to ``--rows-for`` rows
(linear in rows: an estimate, since more ops share more kernels).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path


def kind_of(path: Path) -> str:
    parts = path.parts
    if path.name == "result.json":
        return "result.json"
    if "autotune_records" in parts:
        return "autotune records"
    if "ttgir" in parts:
        return "ttgir dumps"
    if "codegen" in parts:
        return "codegen records"
    return "other"


def count_rows(root: Path) -> int:
    rows = 0
    for path in root.rglob("result.json"):
        rows += len(json.loads(path.read_text(encoding="utf-8")).get("rows") or [])
    return rows


def sizes(root: Path) -> tuple[dict[str, int], int, int]:
    """Bytes per kind; TTGIR as distinct texts gzip'd; TTGIR distinct texts raw."""
    by_kind: dict[str, int] = {}
    distinct: dict[str, bytes] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        kind = kind_of(path.relative_to(root))
        by_kind[kind] = by_kind.get(kind, 0) + len(data)
        if kind == "ttgir dumps" and path.suffix == ".ttgir":
            distinct.setdefault(hashlib.sha256(data).hexdigest(), data)
    packed = sum(len(gzip.compress(d, compresslevel=9, mtime=0)) for d in distinct.values())
    return by_kind, packed, sum(len(d) for d in distinct.values())


def report(root: Path, rows_for: int) -> str:
    rows = count_rows(root)
    by_kind, packed, distinct_raw = sizes(root)
    total = sum(by_kind.values())
    scale = rows_for / rows if rows else 0
    lines = [f"{root}: {rows} rows, {total / 1024:.0f} KB in files", ""]
    lines += [f"| kind | KB | bytes/row | at {rows_for} rows |", "|---|---:|---:|---:|"]
    for kind, n in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        lines.append(_row(kind, n, rows, scale))
    lines.append(_row("total", total, rows, scale))
    lines.append(_row("ttgir: distinct texts only", distinct_raw, rows, scale))
    lines.append(_row("ttgir: distinct texts, gzip -9 (as codegen blobs)", packed, rows, scale))
    return "\n".join(lines)


def _row(kind: str, n: int, rows: int, scale: float) -> str:
    per_row = n / rows if rows else 0
    return f"| {kind} | {n / 1024:.0f} | {per_row:.0f} | {n * scale / 2**20:.0f} MB |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline", type=Path)
    ap.add_argument("--rows-for", type=int, default=50000)
    args = ap.parse_args(argv)
    print(report(args.baseline, args.rows_for))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
