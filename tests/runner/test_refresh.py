"""refresh's helpers: when reused batches ran (``_work_span``)."""

from __future__ import annotations

import datetime as dt

from zlbench.models import BatchInfo
from zlbench.runner.batch.config import BatchOutcome
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.refresh import _work_span


def _outcome(d):
    d.mkdir(parents=True, exist_ok=True)
    return BatchOutcome(out_dir=d, statuses=[], counts={}, summary_rows=0, exit_code=0)


def test_work_span_reads_batch_json(tmp_path):
    record, replay = _outcome(tmp_path / "record"), _outcome(tmp_path / "replay-1")
    write_batch_info(record.out_dir, BatchInfo(created="2025-01-02T03:04:05Z"))
    write_batch_info(
        replay.out_dir,
        BatchInfo(created="2025-01-02T04:00:00Z", finished="2025-01-02T05:06:07+00:00"),
    )
    start, end = _work_span(record, [replay])
    assert start == dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert end == dt.datetime(2025, 1, 2, 5, 6, 7, tzinfo=dt.timezone.utc)


def test_work_span_without_usable_batch_json(tmp_path):
    record, replay = _outcome(tmp_path / "record"), _outcome(tmp_path / "replay-1")
    (record.out_dir / "batch.json").write_text("{not json")
    write_batch_info(replay.out_dir, BatchInfo(created="2025-01-02T04:00:00Z"))  # unfinished
    before = dt.datetime.now(dt.timezone.utc)
    start, end = _work_span(record, [replay])
    assert start >= before and end is None
    missing = _outcome(tmp_path / "missing")
    write_batch_info(record.out_dir, BatchInfo(created="not a date"))
    start, end = _work_span(record, [missing])
    assert start >= before and end is None
