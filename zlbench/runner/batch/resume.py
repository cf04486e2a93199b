"""Which ops of a batch run, and which keep a status without running.

Dismissed and unconditionally skipped ops never run (:func:`left_out`: SKIP rows). With
``--resume`` (:class:`Resume`), the batch being resumed must have measured the same way
(:func:`check_resumable`), and an op it completed (or, with ``--keep-failed``, left FAIL,
TIMEOUT or CRASH) keeps its status; an op cut into row parts that an earlier run merged
runs no part again. Every other op becomes a track (:class:`OpAttempts`) of its worker
slot, its earlier run dir archived. An op that an earlier run started and did not finish
(cut by the stop of that run, or failed without ``--keep-failed``) runs after the slot's
ops not started yet: a batch resumed in calls shorter than its long ops otherwise spends
each call's start re-running the ops the last call cut, and never gets further.
"""

from __future__ import annotations

import os
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import BatchInfo, OpStatus, RunStatus
from zlbench.protocol.layout import RUN_LOG
from zlbench.runner.batch.attempts import (
    OpAttempts,
    archive_run_dir,
    baseline_rows,
    first_dtypes,
    is_complete,
    load_previous,
    nameable,
    row_dtypes,
)
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.parts import PARTS_DIR, part_dir, part_rows, picked_rows, whole_op
from zlbench.runner.batch.status import load_run
from zlbench.runner.catalog.select import OpSelection, SelectedOp

KEPT_FAILED = (RunStatus.FAIL, RunStatus.TIMEOUT, RunStatus.CRASH)
RESUME_SAME = ("mode", "replay_root", "timing", "dtypes", "shape_file_sha256", "gpu_share")


def check_resumable(old: BatchInfo | None, new: BatchInfo, out: Path) -> None:
    """--resume must measure the way the batch being resumed did."""
    if old is None:
        return
    for name in RESUME_SAME:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            raise ZlbenchError(
                f"cannot resume {out}: it was run with {name}={a!r}, this run asks {b!r}"
            )


def left_out(selection: OpSelection) -> dict[str, OpStatus]:
    """Dismissed and unconditionally skipped ops: SKIP rows that never ran."""
    rows = {}
    for op, entry in selection.dismissed:
        rows[op.key] = _skip_row(op, f"dismissed {entry.when}: {entry.reason}")
    for op in selection.skipped:
        rows[op.key] = _skip_row(op, f"unconditional skip: {op.skip}")
    return rows


def _skip_row(op: SelectedOp, note: str) -> OpStatus:
    return OpStatus(repo=op.repo, op=op.op, run_name=op.run_name, status=RunStatus.SKIP, note=note)


def started_before(run_dir: Path) -> bool:
    """An earlier run started the op in ``run_dir`` and did not complete it."""
    return (run_dir / RUN_LOG).is_file() and not is_complete(run_dir)


class Resume:
    """The resume decisions of a batch into ``out``: the ops kept go into ``final``
    (the batch's final statuses), the rest become tracks."""

    def __init__(self, config: BatchConfig, out: Path, final: dict[str, OpStatus]):
        self.config = config
        self.out = out
        self.final = final

    def tracks(
        self, dealt: dict[str, list[SelectedOp]], slot_gpu: dict[str, str]
    ) -> dict[str, list[OpAttempts]]:
        """The tracks per worker slot of the ops ``dealt`` to it (a slot with none left
        out); with --resume, complete ops are kept and not run again."""
        resume = self.config.resume
        previous = load_previous(self.out) if resume else {}
        # the rows of the parts merged by an earlier run (ops_status.csv has the op's)
        parts_before = load_previous(self.out / PARTS_DIR) if resume else {}
        todo: dict[str, list[OpAttempts]] = {}
        for slot, ops in dealt.items():
            tracks, started = [], []
            for op in ops:
                whole_dir = self.out / op.repo / op.whole_run_name
                merged = previous.get(op.whole_key)
                if op.part and (self.kept_failed(merged) or resume and is_complete(whole_dir)):
                    # merged by an earlier run (complete, or failed and --keep-failed):
                    # no part runs again
                    if op.whole_key not in self.final:
                        self.final[op.whole_key] = merged or self._from_result(
                            whole_op(op), whole_dir
                        )
                    continue
                run_dir = part_dir(self.out, op.repo, op.run_name) if op.part else whole_dir
                before = previous.get(op.key) or parts_before.get(op.key)
                if self.kept_failed(before):
                    self.final[op.key] = before
                    continue
                if resume and is_complete(run_dir):
                    self.final[op.key] = before or self._from_result(op, run_dir)
                    continue
                begun = resume and started_before(run_dir)
                (started if begun else tracks).append(self._track(op, run_dir, slot_gpu[slot]))
            if tracks or started:
                todo[slot] = tracks + started
        return todo

    def kept_failed(self, before: OpStatus | None) -> bool:
        """--resume --keep-failed: an op that ended FAIL, TIMEOUT or CRASH stays so."""
        c = self.config
        return c.resume and c.keep_failed and before is not None and before.status in KEPT_FAILED

    def _track(self, op: SelectedOp, run_dir: Path, gpu: str) -> OpAttempts:
        """``op`` to run in ``run_dir`` (an earlier run's moved aside) on ``gpu``: its
        first dtypes and expected rows from the replayed baseline's rows."""
        archive_run_dir(self.out, run_dir, op.repo, op.run_name, "previous")
        base = baseline_rows(self.config.replay_root, op.repo, op.whole_run_name)
        if op.part:
            base = part_rows(base, op.part)
        if op.rows:
            base = picked_rows(base, op.rows)
        # picks: only their rows' dtypes run (a dtype of no row fails its empty table)
        picked = nameable(row_dtypes(base)) if op.rows else ()
        dtypes = picked or first_dtypes(tuple(self.config.dtypes), row_dtypes(base))
        expected = len(base) if base is not None else None
        return OpAttempts(op, run_dir, gpu, dtypes, expected_rows=expected)

    def _from_result(self, op: SelectedOp, run_dir: Path) -> OpStatus:
        result = load_run(run_dir)
        status = result.status if result is not None else RunStatus.PASS
        rows = len(result.rows) if result is not None else 0
        return OpStatus(
            repo=op.repo,
            op=op.op,
            run_name=op.run_name,
            status=status,
            rows=rows,
            run_dir=os.path.relpath(run_dir, self.out),
            note="resumed (complete)",
        )
