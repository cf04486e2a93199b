"""One op in one pytest process: what ``zlbench run`` does below its CLI.

Validates everything a user can get wrong before anything starts (FlagGems
dir, op, shape file, replay records: each a one-line ZlbenchError), claims the
output dir atomically (docs/design.md §5.15), builds a one-entry WorkerPlan and
hands it to :func:`zlbench.runner.execute.worker.execute_plan`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import REPOS, OpStatus, PlanEntry, WorkerPlan
from zlbench.protocol.layout import RECORDS_DIR, op_dir, records_dir
from zlbench.runner.catalog.inventory import class_bases, class_chain, scan_checkout
from zlbench.runner.catalog.resolve import Selection, select
from zlbench.runner.catalog.shapes_migrate import load_shapes
from zlbench.runner.claim import claim_new_dir
from zlbench.runner.execute.proc import Sink
from zlbench.runner.execute.worker import (
    REUSE_TUNING_DB,
    check_reuse_tuning_db,
    execute_plan,
    exit_code_for,
)
from zlbench.runner.preflight import check_flaggems_dir

DEFAULT_RUNS_DIR = "runs"
SHIPPED_SINGLE = "shapes_single.yaml"


def shipped_ops_dir() -> Path | None:
    """``ops/`` of the zlbench source tree, when zlbench runs from one."""
    cand = Path(__file__).resolve().parents[2] / "ops"
    return cand if cand.is_dir() else None


def find_replay_records(replay_from: str | os.PathLike, repo: str, run_name: str) -> Path:
    """The ``autotune_records`` dir for one op under a run, batch or baseline dir."""
    root = Path(replay_from)
    if not root.is_dir():
        raise ZlbenchError(f"--replay-from {root}: no such directory")
    tried = [root / RECORDS_DIR, records_dir(op_dir(root, repo, run_name))]
    for cand in tried:
        if cand.is_dir() and any(cand.glob("*.json")):
            return cand.resolve()
    where = ", ".join(str(t) for t in tried)
    raise ZlbenchError(f"--replay-from {root}: no autotune records for {repo}/{run_name} ({where})")


def shape_keys(sel: Selection, flaggems_dir: Path) -> list[str]:
    """Keys of a shape file that would give this op its shapes, in upstream's order."""
    keys = [sel.op] + [r.op_name for r in sel.rows if r.op_name]
    classes = {r.bench_class for r in sel.rows if r.bench_class}
    if classes:
        bases = class_bases(flaggems_dir)
        for cls in sorted(classes):
            keys += class_chain(bases, cls)
    return list(dict.fromkeys(keys))


def choose_shape_file(
    sel: Selection, shape_file: str | os.PathLike | None, flaggems_dir: Path
) -> Path | None:
    """The shape file of a run: the explicit one (it must have a key that applies
    to the op: op id, op_name or a class of the Benchmark's MRO), else the shipped
    ``ops/shapes_single.yaml`` when one of its keys applies, else None (upstream's).
    """
    keys = shape_keys(sel, flaggems_dir)
    if shape_file is not None:
        data = load_shapes(shape_file)
        if not any(k in data for k in keys):
            has = ", ".join(list(data)[:8]) + (", ..." if len(data) > 8 else "")
            raise ZlbenchError(
                f"{shape_file}: no entry for op {sel.op!r} (looked for {', '.join(keys)};"
                f" the file has: {has or 'no keys'})"
            )
        return Path(shape_file).resolve()
    ops_dir = shipped_ops_dir()
    shipped = ops_dir / SHIPPED_SINGLE if ops_dir else None
    if shipped is None or not shipped.is_file():
        return None
    return shipped if any(k in load_shapes(shipped) for k in keys) else None


@dataclass
class RunRequest:
    """Everything ``zlbench run`` needs, already taken from argv / environment."""

    op: str
    flaggems_dir: str | None
    repo: str = "main"
    op_file: str | None = None
    shape_file: str | None = None
    dtypes: list[str] = field(default_factory=list)
    timing: str = "cudagraph"
    replay_from: str | None = None
    out: str | None = None
    timeout_s: float | None = None
    sweep_gpus: list[str] = field(default_factory=list)  # record via a multi-GPU sweep
    reuse_tuning_db: bool = False  # record with FlagGems' persistent tuning DB

    @property
    def selector(self) -> str:
        return f"{self.op}@{self.op_file}" if self.op_file and "@" not in self.op else self.op


def prepare(req: RunRequest) -> tuple[WorkerPlan, Path]:
    """Validate the request, claim the run dir, build the one-entry plan.

    Returns (plan, resolved FlagGems dir). Nothing is created on bad input.
    """
    if req.repo not in REPOS:
        raise ZlbenchError(f"unknown repo {req.repo!r} (expected one of {', '.join(REPOS)})")
    if req.sweep_gpus and req.replay_from:
        raise ZlbenchError("--sweep-gpus records configs; it cannot be combined with --replay-from")
    replay = "--replay-from" if req.replay_from else None
    check_reuse_tuning_db(req.reuse_tuning_db, replay=replay, sweep=",".join(req.sweep_gpus))
    fg = check_flaggems_dir(req.flaggems_dir, req.repo)
    sel = select(scan_checkout(fg, req.repo), req.selector)
    shapes = choose_shape_file(sel, req.shape_file, fg)
    records = None
    if req.replay_from:
        records = find_replay_records(req.replay_from, req.repo, sel.run_name)
    run_dir = claim_new_dir(req.out or Path(DEFAULT_RUNS_DIR) / sel.run_name).resolve()
    entry = PlanEntry(
        repo=req.repo,
        op=sel.selector,
        run_name=sel.run_name,
        run_dir=str(run_dir),
        nodeids=sel.nodeids,
        mode="replay" if records else "record",
        replay_records=str(records) if records else None,
        shape_file=str(shapes) if shapes else None,
        dtypes=list(req.dtypes),
    )
    return WorkerPlan(timing=req.timing, entries=[entry]), fg


@dataclass(frozen=True)
class RunOutcome:
    status: OpStatus
    run_dir: Path

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.status.status)


def run_plan(
    plan: WorkerPlan,
    flaggems_dir: str | os.PathLike,
    *,
    sink: Sink | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    python: str | None = None,
    sweep_gpus: list[str] | None = None,
    reuse_tuning_db: bool = False,
    extra_pytest_args: Sequence[str] = (),
) -> RunOutcome:
    """Execute a prepared one-entry plan in one process (``extra_pytest_args``
    appended to its pytest argv, e.g. the timing's plugin options).

    ``sweep_gpus``: record through a multi-GPU sweep (:mod:`zlbench.runner.sweep.run`),
    then measure in one process on the first of them. ``reuse_tuning_db``: a record
    run keeps FlagGems' persistent tuning DB (:data:`~.worker.REUSE_TUNING_DB`).
    """
    env = dict(os.environ if env is None else env)
    env.pop(REUSE_TUNING_DB, None)
    if reuse_tuning_db and plan.entries[0].mode == "record":
        env[REUSE_TUNING_DB] = "1"
    executor = execute_plan
    if sweep_gpus:
        from zlbench.runner.sweep.run import SweepExecutor, SweepSpec

        executor = SweepExecutor(SweepSpec(list(sweep_gpus), say=sink))
    (status,) = executor(
        plan,
        flaggems_dir=flaggems_dir,
        per_process=1,
        op_timeout_s=timeout_s,
        env=env,
        sink=sink,
        python=python,
        extra_pytest_args=extra_pytest_args,
    )
    return RunOutcome(status, Path(plan.entries[0].run_dir))
