"""``zlbench merge``: shard batch dirs -> one batch dir; shard gate dirs -> one gate dir.

Batch dirs are merged by :func:`zlbench.runner.batch.merge.merge_batches`. Gate
dirs (``zlbench gate --shard K/N --out DIR``: ``results/`` and, when the shard
confirmed a regression, ``confirm/<i>/``; an A/B run's ``ab/<i>/``): the output
is gate-shaped too, ``<out>/results/`` the merge of the shards' ``results/``,
``<out>/confirm/<i>/`` the merge of the shards' ``confirm/<i>/`` that exist (a
shard with fewer passes adds nothing to the higher ones) and ``<out>/ab/`` the
merge of their A/B rounds (:func:`zlbench.runner.ab.merge.merge_ab`) and
``<out>/codegen/`` the first shard's codegen screen, which
``zlbench gate --results`` judges with the confirmation samples
(:func:`zlbench.gate.load.load_results`). The output is built in a temp dir next
to ``out`` and renamed at the end, so an interrupted merge leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.load import pass_order
from zlbench.models import OpStatus, check_tree_inside, resolve_inside
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, CONFIRM_DIR, OPS_STATUS, RESULTS_DIR
from zlbench.runner.ab.merge import merge_ab
from zlbench.runner.batch.merge import merge_batches


@dataclass
class MergeOutcome:
    """What :func:`merge_dirs` wrote. ``passes``: names of the merged ``confirm/``
    passes (gate dirs only), in the order the judge reads them."""

    out: Path
    statuses: list[OpStatus]
    rows: int
    gate: bool = False
    passes: list[str] = field(default_factory=list)


def is_gate_dir(path: Path) -> bool:
    """A ``zlbench gate --out`` dir: ``results/`` inside, no ops_status.csv of its own."""
    path = Path(path)
    return (path / RESULTS_DIR).is_dir() and not (path / OPS_STATUS).is_file()


def _confirm_passes(gate_dirs: list[Path]) -> dict[str, list[Path]]:
    """Pass name -> the shards' ``confirm/<name>/`` dirs that exist, in shard order."""
    passes: dict[str, list[Path]] = {}
    for g in gate_dirs:
        root = resolve_inside(g, CONFIRM_DIR)
        if root.is_dir():
            for p in root.iterdir():
                if p.is_dir():
                    passes.setdefault(p.name, []).append(
                        resolve_inside(g, f"{CONFIRM_DIR}/{p.name}")
                    )
    return {name: passes[name] for name in sorted(passes, key=pass_order)}


def merge_gate_dirs(gate_dirs: list[Path], out: Path) -> MergeOutcome:
    """Merge shard gate dirs into a new gate-shaped dir ``out`` (module docstring)."""
    out = Path(out)
    gate_dirs = [Path(g) for g in gate_dirs]
    if out.exists():
        raise ZlbenchError(f"{out} already exists: merge writes a new dir")
    passes = _confirm_passes(gate_dirs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        results = [resolve_inside(g, RESULTS_DIR) for g in gate_dirs]
        _, statuses, rows = merge_batches(results, tmp / RESULTS_DIR)
        for name, dirs in passes.items():
            merge_batches(dirs, tmp / CONFIRM_DIR / name)
        merge_ab(gate_dirs, tmp)  # the shards' A/B rounds, ab/<i>/
        _copy_codegen(gate_dirs, tmp)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MergeOutcome(out, statuses, rows, gate=True, passes=list(passes))


def _copy_codegen(gate_dirs: list[Path], into: Path) -> None:
    """The first shard's codegen screen (``codegen/``; every shard screened the same
    baseline with the same compiler), so the judge explains rows and fails on a
    kernel that no longer compiles as an unsharded gate does."""
    for g in gate_dirs:
        if (g / CODEGEN_SCREEN_DIR / "codegen.json").is_file():
            check_tree_inside(g, CODEGEN_SCREEN_DIR)
            shutil.copytree(resolve_inside(g, CODEGEN_SCREEN_DIR), into / CODEGEN_SCREEN_DIR)
            return


def merge_dirs(dirs: list[Path], out: Path) -> MergeOutcome:
    """``zlbench merge``: batch dirs -> a batch dir, gate dirs -> a gate dir (never mixed)."""
    dirs = [Path(d) for d in dirs]
    if not dirs:
        raise ZlbenchError("nothing to merge: give at least one shard dir")
    gates = [d for d in dirs if is_gate_dir(d)]
    if gates and len(gates) != len(dirs):
        other = next(d for d in dirs if not is_gate_dir(d))
        raise ZlbenchError(
            f"cannot merge gate dirs with batch dirs: {gates[0]} is a gate dir "
            f"(results/ inside) but {other} is not"
        )
    if gates:
        return merge_gate_dirs(dirs, out)
    out, statuses, rows = merge_batches(dirs, out)
    return MergeOutcome(out, statuses, rows)
