"""At a batch's end, each op measured in row parts becomes one op again.

:class:`PartsMerge` joins the parts' run dirs into the op's (:func:`.parts.merge_part_dirs`)
and their ops_status.csv rows into the op's (:func:`.parts.merge_statuses`); the parts'
rows move to ``.parts/ops_status.csv``. An op merged by an earlier run (resumed) is kept;
one whose parts are not all final, or cannot be read, is left as parts.
"""

from __future__ import annotations

from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import OpStatus, RunStatus
from zlbench.runner.batch import progress
from zlbench.runner.batch.attempts import archive_run_dir, baseline_rows, load_previous
from zlbench.runner.batch.files import BatchFiles, mark_complete
from zlbench.runner.batch.parts import (
    PARTS_DIR,
    merge_part_dirs,
    merge_results,
    merge_statuses,
    part_dir,
    surplus_rows,
    whole_op,
    worst_status,
)
from zlbench.runner.batch.status import load_run
from zlbench.runner.catalog.select import SelectedOp


class PartsMerge:
    """The row parts among ``ops`` merged back in the batch ``files``; ``replay_root``
    holds the baseline whose rows the parts split."""

    def __init__(self, ops: list[SelectedOp], files: BatchFiles, replay_root: Path | None):
        self.ops = ops
        self.files = files
        self.out = files.out
        self.replay_root = replay_root

    def merge_all(self) -> None:
        """Every op whose parts are all final and that is not final itself."""
        final = self.files.final
        groups: dict[str, list[SelectedOp]] = {}
        for op in self.ops:
            if op.part:
                groups.setdefault(op.whole_key, []).append(op)
        # the parts' rows, for a --resume that reruns some of them (read once)
        kept = load_previous(self.out / PARTS_DIR) if groups else {}
        for key, parts in groups.items():
            if key in final or any(p.key not in final for p in parts):
                continue
            try:
                status = self.merge_op(parts)
            except (OSError, ValueError, ZlbenchError) as e:  # unreadable: left as parts
                self.files.say(f"        cannot merge the row parts of {key}: {e}")
                continue
            self.files.parts_merged(key, [p.key for p in parts], status, kept)
            self.files.say(progress.merged_line(status, len(parts)))

    def merge_op(self, parts: list[SelectedOp]) -> OpStatus:
        """Merge one op's parts into its run dir; its ops_status.csv row. A PASS with
        more rows of a (benchmark op, dtype) than the baseline holds is a FAIL: the parts
        did not split the rows (a benchmark the plugins' row filter does not reach
        measures every row in every part)."""
        whole = whole_op(parts[0])
        dirs = [part_dir(self.out, p.repo, p.run_name) for p in parts]
        loaded = [(p.part, load_run(d)) for p, d in zip(parts, dirs, strict=True)]
        results = [(part, r) for part, r in loaded if r is not None]
        final = merge_statuses([(p, self.files.final[p.key]) for p in parts], whole)
        base = baseline_rows(self.replay_root, whole.repo, whole.run_name)
        extra = surplus_rows([r for _, res in results for r in res.rows], base)
        if final.status is RunStatus.PASS and extra:
            why = (
                f"row parts measured more rows than the baseline holds ({extra}); "
                "measure this op with --split-rows off"
            )
            final = final.model_copy(update={"status": RunStatus.FAIL, "rc": 1,
                                             "note": f"{final.note}; {why}"})  # fmt: skip
        merged = merge_results(results, whole.run_name) if results else None
        if merged is not None:  # a part without result.json (crash) counts too
            merged = merged.model_copy(
                update={"status": worst_status([merged.status, final.status])}
            )
        dest = self.out / whole.repo / whole.run_name
        archive_run_dir(self.out, dest, whole.repo, whole.run_name, "previous")
        merge_part_dirs(dirs, merged, dest)
        mark_complete(dest, final)
        return final
