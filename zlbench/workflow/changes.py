"""``zlbench changes``: read the store's series, find change points
(:mod:`zlbench.history.changepoints`), write changes.json, report.md, summary.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.history.changepoints import (
    Detector,
    render_report,
    render_summary,
    row_changes,
    since_filter,
)
from zlbench.models.base import atomic_write_text, dump_json_model
from zlbench.models.bisect import CHANGES_JSON, ChangesReport
from zlbench.protocol.layout import REPORT_MD

SUMMARY_MD = "summary.md"


@dataclass
class ChangesJob:
    store: str
    out: Path
    branch: str = "main"
    since: str = ""
    op: str | None = None
    window: int = 30
    max_pvalue: float = 0.001
    min_magnitude: float = 0.02


def run_changes(job: ChangesJob, store=None) -> str:
    """Every row's change points; the files written; the summary returned."""
    from zlbench.history.store import open_store

    if job.window < 2:
        raise ZlbenchError(f"--window {job.window}: must be at least 2")
    if not 0 < job.max_pvalue < 1:
        raise ZlbenchError(f"--max-pvalue {job.max_pvalue}: must be between 0 and 1")
    det = Detector(job.window, job.max_pvalue, job.min_magnitude)
    own = store is None
    store = store or open_store(job.store, create=False)
    try:
        rows = store.rows(job.op)
        changes, scanned, since_seen = [], 0, not job.since
        for row in rows:
            points = store.series(row, branch=job.branch)
            if not points:
                continue
            try:
                points = since_filter(points, job.since)
                since_seen = True
            except ZlbenchError:
                continue  # this row has no point at --since
            scanned += 1
            changes += row_changes(row, points, det)
    finally:
        if own:
            store.close()
    if not since_seen:
        raise ZlbenchError(f"--since {job.since}: no row of {job.branch} has a point there")
    rep = ChangesReport(
        store=str(job.store),
        branch=job.branch,
        since=job.since,
        detector=det.label(),
        rows_scanned=scanned,
        changes=sorted(changes, key=lambda c: (c.position, c.row)),
    )
    summary = render_summary(rep)
    job.out.mkdir(parents=True, exist_ok=True)
    dump_json_model(job.out / CHANGES_JSON, rep)
    atomic_write_text(job.out / REPORT_MD, render_report(rep))
    atomic_write_text(job.out / SUMMARY_MD, summary)
    return summary
