"""Bytes per row of a baseline, by kind of file, and what it costs packed in git
(docs/baselines.md, "Size").

    python benchmarks/baseline_size.py BASELINE_DIR [--rows-for 50000]
    python benchmarks/baseline_size.py --git OLD_DIR [NEW_DIR ...] [--scratch DIR]

Rows = the rows of every ``result.json``. Kinds: ``result.json``, autotune records,
TTGIR dumps (``ttgir/``), the codegen index, the codegen stage texts by stage (the
old layout's ``codegen/blobs/<sha256>.gz``, the compact layout's ``store/``), the
manifest, other. Files as checked out, and for the TTGIR dumps the size if each
distinct text were stored once and gzip'd at level 9; every figure projected to
``--rows-for`` rows (linear in rows: an estimate, since more ops share more kernels).

``--git`` measures instead (not estimates): the dirs are committed one after the
other, each as the next commit of a scratch repository (``git init`` in a temp dir,
or ``--scratch``), then ``git gc``; each version's cost is the
``%(objectsize:disk)`` of every object its tree reaches (the packed, delta'd size;
trees included), and "adds" is that of the objects no earlier dir's tree reached:
what committing that version adds to a repository that holds the ones before it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

STAGE_NAMES = ("ttir", "ttgir", "llir", "ptx", "sass")


def stage_of_blob(root: Path) -> dict[str, str]:
    """Path (relative to ``root``) of every codegen stage text -> its stage, read from
    the codegen indexes: the old layout's ``<op>/codegen/blobs/``, the compact layout's
    ``store/`` (named by the text's sha256)."""
    out: dict[str, str] = {}
    store = {p.name.split(".")[0]: p for p in (root / "store").glob("*") if p.is_file()}
    for index in root.glob("*/*/codegen/index.json"):
        data = json.loads(index.read_text(encoding="utf-8"))
        for rec in data.get("records") or []:
            for stage, d in ((rec.get("result") or {}).get("stages") or {}).items():
                if d.get("blob"):
                    out[(index.parent / d["blob"]).relative_to(root).as_posix()] = stage
                if d["sha256"] in store:
                    out[store[d["sha256"]].relative_to(root).as_posix()] = stage
    return out


def kind_of(rel: str, stages: dict[str, str]) -> str:
    parts = Path(rel).parts
    if rel in stages:
        return f"codegen text: {stages[rel]}"
    if parts[-1] == "result.json":
        return "result.json"
    if parts[-1] == "manifest.yaml":
        return "manifest"
    if "autotune_records" in parts:
        return "autotune records"
    if "ttgir" in parts:
        return "ttgir dumps"
    if parts[-1] == "index.json" and "codegen" in parts:
        return "codegen index"
    if parts[0] == "store":
        return "store packs (ttir, ttgir)"
    if "codegen" in parts:
        return "codegen other"
    return "other"


def count_rows(root: Path) -> int:
    rows = 0
    for path in root.rglob("result.json"):
        rows += len(json.loads(path.read_text(encoding="utf-8")).get("rows") or [])
    return rows


def sizes(root: Path) -> tuple[dict[str, int], int, int]:
    """Bytes per kind; TTGIR as distinct texts gzip'd; TTGIR distinct texts raw."""
    stages = stage_of_blob(root)
    by_kind: dict[str, int] = {}
    distinct: dict[str, bytes] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        kind = kind_of(path.relative_to(root).as_posix(), stages)
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
    lines = [f"{root}: {rows} rows, {total / 1000:.0f} kB in files (as checked out)", ""]
    lines += [f"| kind | kB | bytes/row | at {rows_for} rows |", "|---|---:|---:|---:|"]
    for kind, n in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        lines.append(_row(kind, n, rows, scale))
    lines.append(_row("total", total, rows, scale))
    if distinct_raw:
        lines.append(_row("ttgir dumps: distinct texts only", distinct_raw, rows, scale))
        lines.append(_row("ttgir dumps: distinct texts, gzip -9", packed, rows, scale))
    return "\n".join(lines)


def _row(kind: str, n: int, rows: int, scale: float) -> str:
    per_row = n / rows if rows else 0
    return f"| {kind} | {n / 1000:.0f} | {per_row:.0f} | {n * scale / 1e6:.0f} MB |"


# --------------------------------------------------------------------------- in git


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, check=True
    ).stdout


def _tree_objects(repo: Path, commit: str, prefix: str) -> dict[str, str]:
    """object id -> path (relative to ``prefix``; trees end with '/') of every object
    the commit's ``prefix`` tree reaches, itself included."""
    out = {_git(repo, "rev-parse", f"{commit}:{prefix}").strip(): "/"}
    for line in _git(repo, "ls-tree", "-r", "-t", commit, prefix).splitlines():
        meta, path = line.split("\t", 1)
        _, typ, oid = meta.split()
        rel = path[len(prefix) + 1 :]
        out.setdefault(oid, rel + "/" if typ == "tree" else rel)
    return out


def git_report(dirs: list[Path], scratch: Path | None = None) -> str:
    """Commit each dir as the next version of a scratch repo, gc, and measure."""
    own = scratch is None
    repo = Path(tempfile.mkdtemp(prefix="zl-size-")) if own else scratch
    try:
        return _git_measure(repo, dirs)
    finally:
        if own:
            shutil.rmtree(repo, ignore_errors=True)


def _git_measure(repo: Path, dirs: list[Path]) -> str:
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "size@zlbench")
    _git(repo, "config", "user.name", "size")
    names, commits = [], []
    for d in dirs:
        name = d.name
        shutil.copytree(d, repo / "baselines" / name, symlinks=True)
        _git(repo, "add", f"baselines/{name}")
        _git(repo, "commit", "-q", "-m", name)
        names.append(name)
        commits.append(_git(repo, "rev-parse", "HEAD").strip())
    _git(repo, "gc", "-q")
    seen: set[str] = set()
    lines = []
    for d, name, commit in zip(dirs, names, commits, strict=True):
        objs = _tree_objects(repo, commit, f"baselines/{name}")
        ids = sorted(objs)
        disk = dict(
            line.split()
            for line in _git(
                repo,
                "cat-file",
                "--batch-check=%(objectname) %(objectsize:disk)",
                stdin="\n".join(ids) + "\n",
            ).splitlines()
        )
        stages = stage_of_blob(d)
        rows = count_rows(d)
        lines += _git_table(name, rows, objs, disk, stages, seen)
        seen |= set(ids)
    return "\n".join(lines)


def _git_table(name, rows, objs, disk, stages, seen) -> list[str]:
    total: dict[str, list[int]] = {}
    for oid, rel in objs.items():
        kind = "trees" if rel.endswith("/") else kind_of(rel, stages)
        t = total.setdefault(kind, [0, 0, 0])
        t[0] += 1
        t[1] += int(disk[oid])
        t[2] += 0 if oid in seen else int(disk[oid])
    all_ = [sum(t[i] for t in total.values()) for i in range(3)]
    head = f"{name}: {rows} rows; {all_[0]} objects, {all_[1] / 1000:.1f} kB packed in git"
    head += f" ({all_[1] / rows / 1000:.2f} kB per row)" if rows else ""
    lines = [head, "", "| kind | objects | packed kB | bytes/row | adds kB |"]
    lines.append("|---|---:|---:|---:|---:|")
    for kind, (n, b, add) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        per = f"{b / rows:.0f}" if rows else "-"
        lines.append(f"| {kind} | {n} | {b / 1000:.1f} | {per} | {add / 1000:.1f} |")
    per = f"{all_[1] / rows:.0f}" if rows else "-"
    lines.append(f"| total | {all_[0]} | {all_[1] / 1000:.1f} | {per} | {all_[2] / 1000:.1f} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baselines", type=Path, nargs="+")
    ap.add_argument("--rows-for", type=int, default=50000)
    ap.add_argument("--git", action="store_true", help="measure packed in a scratch git repo")
    ap.add_argument("--scratch", type=Path, help="with --git: keep the scratch repo here")
    args = ap.parse_args(argv)
    if args.git:
        print(git_report(args.baselines, args.scratch))
    else:
        for b in args.baselines:
            print(report(b, args.rows_for))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
