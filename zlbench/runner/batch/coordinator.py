"""The stateful half of a batch: :class:`BatchRun` runs its steps in order.

:func:`zlbench.runner.batch.run.run_batch` validates and plans; :class:`BatchRun`
executes, through its collaborators: :class:`.files.BatchFiles` (the final statuses,
batch.json, ops_status.csv, gpu_turns.csv, the progress lines), :class:`.resume.Resume`
(which ops run), :class:`.workers.SlotWorkers` (the worker threads and their queues),
:class:`.outcomes.AttemptOutcomes` (retry or final, after each attempt) and
:class:`.partmerge.PartsMerge` (row parts joined back at the end).
"""

from __future__ import annotations

import time
from pathlib import Path

from zlbench.runner.batch import progress
from zlbench.runner.batch.attempts import exit_code, write_final_files
from zlbench.runner.batch.budget import budget_seconds
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.batch.costs import OpCosts
from zlbench.runner.batch.files import BatchFiles, batch_info
from zlbench.runner.batch.outcomes import AttemptOutcomes
from zlbench.runner.batch.partmerge import PartsMerge
from zlbench.runner.batch.plan import deal
from zlbench.runner.batch.resume import Resume, check_resumable, left_out
from zlbench.runner.batch.systemic import not_measured, systemic_failures
from zlbench.runner.batch.workers import SlotWorkers, slot_gpus
from zlbench.runner.catalog.select import OpSelection
from zlbench.runner.execute import stop


class BatchRun:
    """One batch of ``selection`` by ``config`` into ``out_dir``; ``costs``: the
    selection's expected seconds (plan.selection_costs)."""

    def __init__(self, config: BatchConfig, selection: OpSelection, out_dir: Path, costs: OpCosts):
        self.config = config
        self.selection = selection
        self.out = out_dir
        self.costs = costs
        self.t0 = time.monotonic()
        self.slot_gpu = slot_gpus(config.gpus, config.gpu_share)  # worker slot -> its GPU
        self.files = BatchFiles(out_dir, config.progress, self.t0)
        self.resume = Resume(config, out_dir, self.files.final)
        self.budget_s = config.budget_s  # or derived from the durations in run

    def run(self) -> BatchOutcome:
        """The batch; interrupted (SIGINT, SIGTERM), it leaves ``INTERRUPTED`` beside
        the partial ops_status.csv (files.INTERRUPTED) and re-raises."""
        c, files = self.config, self.files
        info = batch_info(c, self.selection)
        if c.resume:
            check_resumable(files.read_info(), info, self.out)
        files.write_info(info)
        files.clear_interrupted()  # a resumed run: the dir is no longer what was cut
        with stop.unit():  # an interrupted CLI waits for this to unwind
            try:
                return self._run(info)
            except KeyboardInterrupt:
                files.mark_interrupted()
                raise

    def _run(self, info) -> BatchOutcome:
        c, files = self.config, self.files
        files.final |= left_out(self.selection)
        if self.budget_s is None and c.budget_factor:
            self.budget_s = self._budget()
        todo = self.resume.tracks(
            deal(self.selection, list(self.slot_gpu), self.costs), self.slot_gpu
        )
        if c.resume and files.final:
            files.say(f"resume: {len(files.final)} op(s) already complete or left out")
        files.total = sum(len(v) for v in todo.values())
        mine = {t.sel.key for v in todo.values() for t in v}  # the ETA's ops: this run's
        files.expected = progress.Expected({k: self.costs.seconds.get(k, 0.0) for k in mine})
        files.say(f"batch: {files.total} op(s) to run on {len(todo)} worker(s) -> {self.out}")
        if self.budget_s is not None:
            files.say(f"batch: time budget {progress.fmt_seconds(self.budget_s)}")
        files.write_status()
        outcomes = AttemptOutcomes(c, files, self.budget_s, self.t0)
        workers = SlotWorkers(
            c, self.out, self.slot_gpu, outcomes.attempt_done, self.budget_s, self.t0
        )
        with files.turns(c.gpu_share) as turn_dir:
            workers.run(todo, turn_dir)
        PartsMerge(self.selection.ops, files, c.replay_root).merge_all()
        return self._finish(info)

    def _budget(self) -> float | None:
        """The time budget from the recorded durations, dealt one process per GPU: the
        durations were measured so, and a shared GPU is never slower than that (an
        upper bound)."""
        per_gpu = deal(self.selection, self.config.gpus, self.costs)
        bins = [[o.key for o in ops] for ops in per_gpu.values()]
        factor, per = self.config.budget_factor, self.config.per_process
        return budget_seconds(self.costs, bins, factor, per)

    def _finish(self, info) -> BatchOutcome:
        """summary.csv and batch.json's end; the closing lines; the outcome."""
        files = self.files
        statuses = files.sorted_statuses()
        rows, info = write_final_files(self.out, statuses, info)
        info.systemic = systemic_failures(statuses)
        info.budget_s = self.budget_s
        info.not_measured = not_measured(statuses)
        files.write_info(info)
        wall = time.monotonic() - self.t0
        files.say(progress.count_table(statuses, rows, wall))
        for line in files.turn_lines(self.config.gpu_share, wall):
            files.say(line)
        for line in progress.ending_lines(statuses, info.systemic):
            files.say(line)
        code = exit_code(statuses, rows)
        return BatchOutcome(self.out, statuses, info.counts, rows, code)


__all__ = ["BatchRun"]
