"""The seed scripts' CSV columns, for sheets and scripts built on them
(``zlbench summarize BATCH_DIR --legacy-csv -o DIR``; docs/screening.md).

zlbench's own ``ops_status.csv`` / ``summary.csv`` (``zlbench.models.batch``) are
what zlbench reads back and are never rewritten here: these files go to another
dir. ``ops_status.csv`` gets the old names of the renamed columns
(:data:`LEGACY_OPS_STATUS_FIELDS`): ``return_code`` (rc), ``elapsed_ms`` (seconds
x 1000), ``rows_total`` (rows), ``rows_success`` (success_rows), ``notes`` (note),
``out_dir`` (the run dir, joined to the batch dir as given); the columns whose name
did not change keep it and zlbench's own (``run_name``, ``signature``) come after.
``summary.csv`` (:data:`LEGACY_SUMMARY_FIELDS`) gets back ``op_status`` and
``notes`` (the op's ops_status.csv status and note) and one row for an op that
measured nothing (its measurement cells empty). ``extra_metrics`` and ``case_id``
cannot be known from what zlbench keeps: the columns are there, always empty.
"""

from __future__ import annotations

import os
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    SUMMARY_FIELDS,
    OpStatus,
    RunStatus,
    atomic_write_text,
    read_ops_status,
    resolve_inside,
)
from zlbench.protocol.layout import OPS_STATUS, SUMMARY_CSV
from zlbench.runner.batch.status import (
    _csv_text,
    find_run_dirs,
    load_run,
    sort_statuses,
    summary_records,
)

LEGACY_OPS_STATUS_FIELDS = [
    "repo",
    "op",
    "op_file",
    "status",
    "return_code",
    "attempts",
    "dtype_used",
    "elapsed_ms",
    "rows_total",
    "rows_success",
    "replay_fallbacks",
    "no_cudagraph",
    "gpu",
    "notes",
    "out_dir",
    "run_name",
    "signature",
]
# zlbench's columns, then the seed's that it lost (the row's op status and note)
LEGACY_SUMMARY_FIELDS = [*SUMMARY_FIELDS, "op_status", "notes", "extra_metrics", "case_id"]


def legacy_status_record(st: OpStatus, batch_dir: Path) -> dict:
    """One ops_status.csv row of ``st`` in the seed's column names."""
    rec = st.model_dump()
    rec.update(
        return_code=st.rc,
        elapsed_ms=round(st.seconds * 1000),
        rows_total=st.rows,
        rows_success=st.success_rows,
        notes=st.note,
        out_dir=str(Path(batch_dir) / st.run_dir) if st.run_dir else "",
    )
    return {f: rec.get(f) for f in LEGACY_OPS_STATUS_FIELDS}


def batch_statuses(batch_dir: Path) -> list[OpStatus]:
    """The batch's ops_status.csv rows; for an old batch dir without one, a row per
    run dir from what its result.json (or run.log) says (rc, times, GPU unknown)."""
    path = Path(batch_dir) / OPS_STATUS
    if path.is_file():
        return sort_statuses(read_ops_status(path))
    out = []
    for run_dir in find_run_dirs(batch_dir):
        result = load_run(run_dir)
        rows = result.rows if result is not None else []
        out.append(
            OpStatus(
                repo=run_dir.parent.name,
                op=result.op if result is not None else run_dir.name,
                run_name=run_dir.name,
                status=result.status if result is not None else RunStatus.ERROR,
                rows=len(rows),
                success_rows=sum(r.status == "SUCCESS" for r in rows),
                run_dir=os.path.relpath(run_dir, batch_dir),
                seconds=(result.duration_s or 0.0) if result is not None else 0.0,
            )
        )
    return out


def legacy_summary_records(statuses: list[OpStatus], batch_dir: Path) -> list[dict]:
    """summary.csv rows in the seed's columns: each op's measured rows with its status
    and note, or one row with only the op's cells when it measured nothing."""
    recs: list[dict] = []
    for st in statuses:
        where = f"{Path(batch_dir) / OPS_STATUS}: run_dir of {st.repo}/{st.run_name}"
        run_dir = resolve_inside(batch_dir, st.run_dir, where) if st.run_dir else None
        result = load_run(run_dir) if run_dir is not None else None
        rows = result.rows if result is not None else []
        extra = {"op_status": st.status, "notes": st.note, "extra_metrics": "", "case_id": ""}
        mine = summary_records(st.repo, st.run_name, rows)
        if not mine:
            mine = [{"repo": st.repo, "run_name": st.run_name, "op": st.op}]
        recs += [{f: (rec | extra).get(f) for f in LEGACY_SUMMARY_FIELDS} for rec in mine]
    return recs


def write_legacy_csvs(batch_dir: Path, out_dir: Path) -> tuple[int, int]:
    """``out_dir/ops_status.csv`` and ``out_dir/summary.csv`` in the seed's columns;
    (ops, summary rows)."""
    batch_dir, out_dir = Path(batch_dir), Path(out_dir)
    statuses = batch_statuses(batch_dir)
    if not statuses:
        raise ZlbenchError(f"{batch_dir}: no ops_status.csv rows and no run dirs: not a batch dir?")
    ops = [legacy_status_record(s, batch_dir) for s in statuses]
    rows = legacy_summary_records(statuses, batch_dir)
    atomic_write_text(out_dir / OPS_STATUS, _csv_text(LEGACY_OPS_STATUS_FIELDS, ops))
    atomic_write_text(out_dir / SUMMARY_CSV, _csv_text(LEGACY_SUMMARY_FIELDS, rows))
    return len(ops), len(rows)
