"""Check that every shard of a gate run left its artifact; list their gate dirs.

Usage: python ci/collect_shards.py SHARDS_ROOT --count N --list-out FILE

SHARDS_ROOT holds the downloaded artifacts, one folder each, named
``zlbench-shard-<K>-of-<N>`` (K is 1-based); with N = 1 the artifact's files may
also sit in SHARDS_ROOT itself (how download-artifact extracts a lone match).
Each folder is what ci/run_shard.sh wrote: ``shard.json`` ({"shard": K,
"count": N, "exit_code": rc}) and ``gate/``, the ``--out`` dir of
``zlbench gate --shard K/N``.

Every shard must be there, must say it is shard K of N, must have measured
(exit code 0 or 1), and nothing in its folder may be a symlink leading out of
SHARDS_ROOT (an artifact is written by the job that ran the PR's compiler).
Anything else fails with one line naming every bad shard and exit 2: the judge
never passes with a shard missing. On success FILE gets one
gate dir per line, in shard order (``gate``, holding ``results/`` and, when the
shard confirmed a regression, ``confirm/<i>/``), ready for ``zlbench merge``,
which merges them into one gate-shaped dir for ``zlbench gate --results``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gha import CiError, output, run_main  # noqa: E402

ARTIFACT_RE = re.compile(r"^zlbench-shard-(\d+)-of-(\d+)$")


def artifact_name(k: int, n: int) -> str:
    return f"zlbench-shard-{k}-of-{n}"


def _shard_dir(root: Path, k: int, n: int) -> Path:
    """Where shard k/n was downloaded. download-artifact puts each artifact in a
    folder of its name, except when the pattern matched a single artifact: then
    its files land in ``root`` itself."""
    if n == 1 and (root / "shard.json").is_file():
        return root
    return root / artifact_name(k, n)


def _links_out(root: Path, d: Path) -> str | None:
    """Why shard dir ``d`` (or anything in it) leads out of ``root`` through a
    symlink, or None: a link would be followed by the merge and the upload."""
    from zlbench.errors import ZlbenchError
    from zlbench.models import check_tree_inside

    rel = d.relative_to(root).as_posix() if d != root else ""
    try:
        check_tree_inside(root, rel, rel or ".")
    except ZlbenchError as e:
        return str(e)
    return None


def _check_one(root: Path, k: int, n: int) -> tuple[Path | None, str | None]:
    """(gate dir, None) for a good shard, else (None, problem)."""
    d = _shard_dir(root, k, n)
    if not d.is_dir():
        return None, f"{k}/{n} missing (no artifact {artifact_name(k, n)})"
    out = _links_out(root, d)
    if out is not None:
        return None, f"{k}/{n} has a link outside the artifacts: {out}"
    try:
        info = json.loads((d / "shard.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None, f"{k}/{n} has no readable shard.json"
    if not isinstance(info, dict) or (info.get("shard"), info.get("count")) != (k, n):
        return None, f"{k}/{n} artifact says it is shard {info.get('shard')}/{info.get('count')}"
    rc = info.get("exit_code")
    if type(rc) is not int or rc not in (0, 1):  # not true, 1.0 or "1"
        return None, f"{k}/{n} could not measure (zlbench gate exit {rc})"
    gate = d / "gate"
    if not (gate / "results").is_dir():
        return None, f"{k}/{n} has no gate/ results"
    return gate, None


def collect(root: Path, n: int) -> list[Path]:
    """Gate dirs of shards 1..n; CiError naming every bad or stray shard."""
    if n < 1:
        raise CiError(f"shard count must be at least 1, got {n}")
    problems, dirs = [], []
    for k in range(1, n + 1):
        d, problem = _check_one(root, k, n)
        if problem:
            problems.append(problem)
        else:
            dirs.append(d)
    if root.is_dir():
        for child in sorted(root.iterdir()):
            m = ARTIFACT_RE.match(child.name)
            if m and (int(m.group(2)) != n or not 1 <= int(m.group(1)) <= n):
                problems.append(f"stray artifact {child.name} (this run has {n} shards)")
    if problems:
        raise CiError(f"shard artifacts incomplete, refusing to judge: {'; '.join(problems)}")
    return dirs


def failed_slices_note(dirs: list[Path], n: int) -> str:
    """One line naming the shards whose gate exited 1 on their own slice (a
    regression, a failed op or a kernel that no longer compiles), "" when none did:
    they measured, and the judge re-judges them with every shard's screen, but a
    failing shard is never taken in silently."""
    failed = []
    for k, gate in enumerate(dirs, start=1):
        info = json.loads((gate.parent / "shard.json").read_text(encoding="utf-8"))
        if info.get("exit_code") == 1:
            failed.append(f"{k}/{n}")
    if not failed:
        return ""
    return (
        f"shard(s) {', '.join(failed)} exited 1 on their own slice (a regression, a "
        "failed op or a kernel that no longer compiles): the judge re-judges them with "
        "every shard"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--list-out", type=Path, required=True)
    args = ap.parse_args(argv)
    dirs = collect(args.root, args.count)
    args.list_out.write_text("".join(f"{d}\n" for d in dirs), encoding="utf-8")
    output("shards_found", str(len(dirs)))
    print(f"all {len(dirs)} shard artifacts present")
    if note := failed_slices_note(dirs, args.count):
        print(note)
    return 0


if __name__ == "__main__":
    run_main(main)
