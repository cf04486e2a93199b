"""``zlbench merge``: shard batch dirs -> one batch dir; shard gate dirs -> one gate dir.

Batch dirs are merged by :func:`zlbench.runner.batch.merge.merge_batches`. Gate
dirs (``zlbench gate --shard K/N --out DIR``: ``results/`` and, when the shard
confirmed a regression, ``confirm/<i>/``; an A/B run's ``ab/<i>/``): the output
is gate-shaped too, ``<out>/results/`` the merge of the shards' ``results/``,
``<out>/confirm/<i>/`` the merge of the shards' ``confirm/<i>/`` that exist (a
shard with fewer passes adds nothing to the higher ones) and ``<out>/ab/`` the
merge of their A/B rounds (:func:`zlbench.runner.ab.merge.merge_ab`) and
``<out>/codegen/`` the shards' codegen screen (they must agree) and ``<out>/replay/``
their kernel replay (the op path of a ``--replay`` gate sharded: ``gate --replayed
PARTS --shard K/N``, each shard holding the same replay taken from the parts; they
must agree), which ``zlbench gate --results`` judges with the confirmation samples
(:func:`zlbench.gate.load.load_results`). Shards that are not one gate run are refused
in one line, whatever their order: every field that changes a verdict is part of a
shard's identity (batch.json's settings and environment,
:mod:`zlbench.runner.batch.merge`; the codegen screen and its timing plan, below;
ab.json's mode, method, caliber, rule, sampling, A/A claim and compilers,
:func:`zlbench.runner.ab.merge._identity`), and the shards that measured ops either all
carry an A/B or none does (:func:`_check_ab_everywhere`). The output is built in a temp dir next
to ``out`` and renamed at the end, so an interrupted merge leaves nothing behind.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.codegen.screen import SCREEN_JSON
from zlbench.errors import ZlbenchError
from zlbench.gate.load import pass_order
from zlbench.models import (
    REPLAY_DIR,
    REPLAY_JSON,
    REPLAY_PAIRS,
    CodegenScreen,
    OpStatus,
    PairsFile,
    ReplayRun,
    TimingPlanFile,
    check_tree_inside,
    load_json_model,
    read_ops_status,
    resolve_inside,
)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, CONFIRM_DIR, OPS_STATUS, RESULTS_DIR
from zlbench.runner.ab.merge import merge_ab
from zlbench.runner.ab.rounds import AB_DIR, AB_FILE
from zlbench.runner.batch.merge import merge_batches
from zlbench.runner.derived import stage_beside
from zlbench.workflow.gate_record import carry_record


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


def _holds_ops(gate_dir: Path) -> bool:
    """Did this shard measure anything (an empty shard of ``gate --shard`` writes an
    empty ``results/ops_status.csv`` and nothing else)?"""
    status = resolve_inside(gate_dir, f"{RESULTS_DIR}/{OPS_STATUS}")
    return status.is_file() and bool(read_ops_status(status))


def _check_ab_everywhere(gate_dirs: list[Path]) -> None:
    """Shards of one gate either all carry an A/B (``ab/ab.json``) or none does: a gate
    with a base compiler measures every shard's ops as its A/B, so a shard without one
    beside shards with one is another gate run, whose rows the merged A/B would not
    judge. An empty shard (no op measured) cannot disagree and is left out. One line."""
    holding = [g for g in gate_dirs if _holds_ops(g)]
    with_ab = [g for g in holding if resolve_inside(g, f"{AB_DIR}/{AB_FILE}").is_file()]
    if with_ab and len(with_ab) != len(holding):
        bare = next(g for g in holding if g not in with_ab)
        raise ZlbenchError(
            f"{bare} has no A/B ({AB_DIR}/{AB_FILE}) but {with_ab[0]} has one: every shard "
            "of one gate run with a base compiler measures its ops as an A/B; merge shards "
            "of one gate run only"
        )


def merge_gate_dirs(gate_dirs: list[Path], out: Path) -> MergeOutcome:
    """Merge shard gate dirs into a new gate-shaped dir ``out`` (module docstring)."""
    out = Path(out)
    gate_dirs = [Path(g) for g in gate_dirs]
    if out.exists():
        raise ZlbenchError(f"{out} already exists: merge writes a new dir")
    passes = _confirm_passes(gate_dirs)
    _check_ab_everywhere(gate_dirs)
    tmp = stage_beside(out)  # a killed merge's stage is swept by the next (git-ignored)
    tmp.mkdir()
    try:
        results = [resolve_inside(g, RESULTS_DIR) for g in gate_dirs]
        _, statuses, rows = merge_batches(results, tmp / RESULTS_DIR)
        for name, dirs in passes.items():
            merge_batches(dirs, tmp / CONFIRM_DIR / name)
        merge_ab(gate_dirs, tmp)  # the shards' A/B rounds, ab/<i>/
        _copy_codegen(gate_dirs, tmp)
        _copy_replay(gate_dirs, tmp)
        carry_record(gate_dirs, tmp)  # how the shards were gated, when they agree
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MergeOutcome(out, statuses, rows, gate=True, passes=list(passes))


def _kernels(s: CodegenScreen) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Kernel id -> (class, first changed stage, ops that launched it)."""
    return {
        k.kernel_id: (k.status.value, k.first_stage or "", tuple(sorted(k.ops))) for k in s.kernels
    }


def _screen_difference(a: CodegenScreen, b: CodegenScreen) -> str:
    """The first thing two shards' screens disagree on ("" when they agree): each
    kernel's class, first changed stage and ops, the ops without records, the
    compiler; never timings, paths or dates (every shard screens the whole baseline
    with the same compiler)."""
    ka, kb = _kernels(a), _kernels(b)
    if ka != kb:
        kid = min(i for i in ka.keys() | kb.keys() if ka.get(i) != kb.get(i))
        sa, sb = (k[kid][0] if kid in k else "absent" for k in (ka, kb))
        return f"kernel {kid[:80]!r}: {sa} vs {sb}"
    if sorted(a.ops_without_records) != sorted(b.ops_without_records):
        return "ops without records"
    if sorted(a.ops_without_kernels) != sorted(b.ops_without_kernels):
        return "ops without kernels"
    if a.ops_with_unrecorded != b.ops_with_unrecorded:
        return "ops with unrecorded kernels"
    return "compiler" if a.compiler != b.compiler else ""


def _copy_codegen(gate_dirs: list[Path], into: Path) -> None:
    """The shards' codegen screen (``codegen/``): every shard screened the whole
    baseline with the same compiler, so the screens (and ``--time changed`` plans) must
    agree; then one is copied, so the judge explains rows and fails on a kernel that no
    longer compiles as an unsharded gate does. Shards that disagree, or some with a
    screen and some without, are refused in one line: the verdict never depends on
    which shard comes first."""
    from zlbench.workflow.codegen_step import TIMING_JSON

    found: list[tuple[Path, CodegenScreen, TimingPlanFile | None]] = []
    for g in gate_dirs:
        if (g / CODEGEN_SCREEN_DIR).exists() or (g / CODEGEN_SCREEN_DIR).is_symlink():
            check_tree_inside(g, CODEGEN_SCREEN_DIR)
        cg = resolve_inside(g, CODEGEN_SCREEN_DIR)
        if not (cg / SCREEN_JSON).is_file():
            continue
        timing = cg / TIMING_JSON
        plan = load_json_model(timing, TimingPlanFile) if timing.is_file() else None
        found.append((g, load_json_model(cg / SCREEN_JSON, CodegenScreen), plan))
    if not found:
        return
    first_dir, first, first_plan = found[0]
    _every_shard_or_none(
        gate_dirs, [d for d, _, _ in found], "codegen screen",
        "every shard of one gate run screens the whole baseline",
    )  # fmt: skip
    for d, screen, plan in found[1:]:
        why = _screen_difference(first, screen)
        if not why and (plan is None) != (first_plan is None):
            why = "one has a timing plan, the other none"
        elif not why and plan is not None and first_plan is not None:
            a, b = plan.model_dump(), first_plan.model_dump()
            why = next((f"timing plan {k}" for k in a if a[k] != b[k]), "")
        if why:
            raise ZlbenchError(
                f"the codegen screens of {first_dir} and {d} disagree ({why}): "
                "merge shards of one gate run only (re-run the gate if they are)"
            )
    shutil.copytree(resolve_inside(first_dir, CODEGEN_SCREEN_DIR), into / CODEGEN_SCREEN_DIR)


def _every_shard_or_none(gate_dirs: list[Path], holding: list[Path], what: str, why: str) -> None:
    """Shards of one gate run hold ``what`` all or none (``holding``: those that do, at
    least one); else one line naming a shard without it."""
    if len(holding) != len(gate_dirs):
        bare = next(g for g in gate_dirs if g not in set(holding))
        raise ZlbenchError(
            f"{bare} has no {what} but {holding[0]} has one: {why}; merge shards of one "
            "gate run only"
        )


def _copy_replay(gate_dirs: list[Path], into: Path) -> None:
    """The shards' kernel replay (``replay/``): the shards of a ``--replayed`` gate's op
    path each took the same parts, so their replay runs (but the step's own seconds)
    and samples must agree; then one is copied, and the judge re-derives every replayed
    row's statistic from its samples. Some shards with a replay and some without, or
    replays that differ, are refused in one line."""
    found: list[tuple[Path, dict, PairsFile]] = []
    for g in gate_dirs:
        if not (g / REPLAY_DIR).exists() and not (g / REPLAY_DIR).is_symlink():
            continue
        check_tree_inside(g, REPLAY_DIR)
        run = load_json_model(resolve_inside(g, f"{REPLAY_DIR}/{REPLAY_JSON}"), ReplayRun)
        pairs = load_json_model(resolve_inside(g, f"{REPLAY_DIR}/{REPLAY_PAIRS}"), PairsFile)
        found.append((g, run.model_dump(exclude={"seconds"}), pairs))
    if not found:
        return
    first_dir, first_run, first_pairs = found[0]
    _every_shard_or_none(
        gate_dirs, [d for d, _, _ in found], f"kernel replay ({REPLAY_DIR}/)",
        "every shard of a --replayed gate takes the same parts",
    )  # fmt: skip
    for d, run, pairs in found[1:]:
        what = next((f"replay.json {k}" for k in first_run if run.get(k) != first_run[k]), "")
        if not what and pairs != first_pairs:
            what = "their samples"
        if what:
            raise ZlbenchError(
                f"the kernel replays of {first_dir} and {d} disagree ({what}): merge shards "
                "of one gate run only (each shard given the same --replayed parts)"
            )
    shutil.copytree(resolve_inside(first_dir, REPLAY_DIR), into / REPLAY_DIR)


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
