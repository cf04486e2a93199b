"""ops_status.csv / summary.csv round trips, summarize of an old batch dir, progress lines."""

from __future__ import annotations

import csv
import shutil

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import (
    OP_STATUS_FIELDS,
    SUMMARY_FIELDS,
    OpStatus,
    Row,
    RunResult,
    RunStatus,
    dump_json_model,
    read_ops_status,
)
from zlbench.runner.batch import progress
from zlbench.runner.batch.status import (
    find_run_dirs,
    load_run,
    summarize,
    write_ops_status,
)


def _st(op, status=RunStatus.PASS, **kw):
    return OpStatus(repo="main", op=op, run_name=op, status=status, **kw)


def test_ops_status_round_trip(tmp_path):
    sts = [
        _st("b", RunStatus.CRASH, rc=-11, attempts=3, note='a "quoted", note\nwith newline'),
        _st("a", rows=5, seconds=1.25, dtype_used="bfloat16", gpu="0", run_dir="main/a"),
        _st("c", RunStatus.TIMEOUT),
    ]
    write_ops_status(tmp_path, sts)
    with open(tmp_path / "ops_status.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == OP_STATUS_FIELDS
        assert [r["op"] for r in reader] == ["a", "b", "c"]  # sorted by (repo, run_name)
    back = read_ops_status(tmp_path / "ops_status.csv")
    assert back == sorted(sts, key=lambda s: s.run_name)
    assert back[2].rc is None and back[1].rc == -11


def test_read_ops_status_errors(tmp_path):
    p = tmp_path / "ops_status.csv"
    with pytest.raises(ZlbenchError, match="file not found"):
        read_ops_status(p)
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ZlbenchError, match="not an ops_status.csv"):
        read_ops_status(p)
    write_ops_status(tmp_path, [_st("a")])
    p.write_text(p.read_text().replace("PASS", "GREAT"))
    with pytest.raises(ZlbenchError, match=r"ops_status.csv:2: status"):
        read_ops_status(p)


def _write_result(run_dir, rows, status=RunStatus.PASS):
    run_dir.mkdir(parents=True)
    res = RunResult(
        repo=run_dir.parent.name,
        run_name=run_dir.name,
        op=run_dir.name,
        status=status,
        mode="record",
        timing="cudagraph",
        rows=rows,
    )
    dump_json_model(run_dir / "result.json", res)


def test_summarize_old_batch_dir_from_logs_and_results(tmp_path, flaggems_h200_dir):
    """An old batch dir: run.log only (upstream output), no ops_status.csv."""
    batch = tmp_path / "old"
    for op in ("add", "mm"):
        (batch / "main" / op).mkdir(parents=True)
        shutil.copy(flaggems_h200_dir / f"kernel_{op}.log", batch / "main" / op / "run.log")
    _write_result(
        batch / "vllm" / "x",
        [
            Row(
                op="x",
                dtype="float16",
                shape="[64]",
                speedup=1.5,
                latency_ms=0.1,
                latency_base_ms=0.15,
            )
        ],
    )
    (batch / "main" / "empty").mkdir()  # no log, no result: ignored
    (batch / ".attempts" / "main" / "add" / "1").mkdir(parents=True)
    assert [p.name for p in find_run_dirs(batch)] == ["add", "mm", "x"]
    n = summarize(batch)
    with open(batch / "summary.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == SUMMARY_FIELDS
        recs = list(reader)
    assert n == len(recs) == 20 + len(load_run(batch / "main" / "mm").rows) + 1
    add = [r for r in recs if r["run_name"] == "add"]
    assert {r["dtype"] for r in add} == {"float16", "float32", "bfloat16", "complex64"}
    assert add[0]["speedup"] == "0.96" and add[0]["status"] == "SUCCESS"
    assert recs[-1]["repo"] == "vllm" and recs[-1]["no_cudagraph"] == "false"


def test_result_json_wins_over_log(tmp_path, flaggems_h200_dir):
    run = tmp_path / "b" / "main" / "add"
    _write_result(run, [Row(op="add", dtype="bfloat16", shape="[1]")])
    shutil.copy(flaggems_h200_dir / "kernel_add.log", run / "run.log")
    assert len(load_run(run).rows) == 1
    (run / "result.json").write_text("{truncated")  # corrupt: fall back to the log
    assert len(load_run(run).rows) == 20


def test_summarize_errors(tmp_path):
    with pytest.raises(ZlbenchError, match="not a directory"):
        summarize(tmp_path / "nope")
    with pytest.raises(ZlbenchError, match="no run dirs"):
        summarize(tmp_path)


def test_progress_lines():
    st = _st("abs", rows=5, seconds=12.34, attempts=2, dtype_used="bfloat16")
    line = progress.done_line(st, 3, 40, elapsed_s=6.0)
    assert line == "[ 3/40] PASS    main/abs 12.3s rows=5 dtype=bfloat16 attempts=2 ETA 1m14s"
    assert "ETA" not in progress.done_line(st, 40, 40, 100.0)
    assert progress.fmt_seconds(3725) == "1h02m05s"
    table = progress.count_table([st, _st("x", RunStatus.FAIL)], rows=5, wall_s=61)
    assert table.splitlines() == [
        "status    ops",
        "PASS        1",
        "FAIL        1",
        "total       2   rows=5   wall 1m01s",
    ]
