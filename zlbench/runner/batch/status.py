"""The batch files: ``ops_status.csv`` (one row per op) and ``summary.csv`` (one row
per measured row), both written atomically so a killed batch leaves valid files.

``summarize(batch_dir)`` rebuilds summary.csv from the run dirs alone (result.json,
else run.log parsed by :mod:`zlbench.parse`), so it also works on old batch dirs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    OP_STATUS_FIELDS,
    SUMMARY_FIELDS,
    OpStatus,
    Row,
    atomic_write_text,
)
from zlbench.protocol.layout import COMPLETE as COMPLETE  # re-exported for older importers
from zlbench.protocol.layout import OPS_STATUS, RESULT_JSON, RUN_LOG, SUMMARY_CSV
from zlbench.runner.execute.result import (
    load_run as load_run,  # re-exported: one reader of a run dir
)


def _csv_text(fields: list[str], records: Iterable[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({f: _cell(rec.get(f)) for f in fields})
    return buf.getvalue()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "value"):  # enums
        return str(value.value)
    return str(value)


def sort_statuses(statuses: Iterable[OpStatus]) -> list[OpStatus]:
    return sorted(statuses, key=lambda s: (s.repo, s.run_name))


def ops_status_text(statuses: Iterable[OpStatus]) -> str:
    recs = (s.model_dump() for s in sort_statuses(statuses))
    return _csv_text(OP_STATUS_FIELDS, recs)


def write_ops_status(batch_dir: Path, statuses: Iterable[OpStatus]) -> None:
    atomic_write_text(Path(batch_dir) / OPS_STATUS, ops_status_text(statuses))


def summary_records(repo: str, run_name: str, rows: Iterable[Row]) -> list[dict]:
    recs = []
    for row in rows:
        rec = row.model_dump()
        rec.update(repo=repo, run_name=run_name)
        recs.append({f: rec.get(f) for f in SUMMARY_FIELDS})
    return recs


def write_summary(batch_dir: Path, records: Iterable[dict]) -> int:
    recs = list(records)
    atomic_write_text(Path(batch_dir) / SUMMARY_CSV, _csv_text(SUMMARY_FIELDS, recs))
    return len(recs)


def find_run_dirs(batch_dir: Path) -> list[Path]:
    """``<batch>/<repo>/<run_name>/`` dirs holding a result.json or a run.log."""
    batch_dir = Path(batch_dir)
    found = []
    for repo_dir in sorted(p for p in batch_dir.iterdir() if p.is_dir()):
        if repo_dir.name.startswith("."):
            continue
        for run_dir in sorted(p for p in repo_dir.iterdir() if p.is_dir()):
            if (run_dir / RESULT_JSON).is_file() or (run_dir / RUN_LOG).is_file():
                found.append(run_dir)
    return found


def summarize(batch_dir: Path, out_dir: Path | None = None) -> int:
    """Rebuild ``<batch>/summary.csv`` (``<out_dir>/summary.csv`` when given: the batch
    dir is then not written) from its run dirs; returns the number of rows."""
    batch_dir = Path(batch_dir)
    if not batch_dir.is_dir():
        raise ZlbenchError(f"{batch_dir}: not a directory")
    run_dirs = find_run_dirs(batch_dir)
    if not run_dirs:
        raise ZlbenchError(
            f"{batch_dir}: no run dirs (<repo>/<run_name>/ with result.json "
            "or run.log): not a batch dir?"
        )
    records: list[dict] = []
    for run_dir in run_dirs:
        result = load_run(run_dir)
        if result is not None:
            records += summary_records(run_dir.parent.name, run_dir.name, result.rows)
    return write_summary(batch_dir if out_dir is None else Path(out_dir), records)
