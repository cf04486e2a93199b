"""`zlbench summarize -o DIR` and `--legacy-csv`: the seed scripts' CSV columns for
the sheets built on them, written beside the batch, never over it (issue 30)."""

from __future__ import annotations

import csv
import io

import pytest

from tests.support.batch_fakes import FakeExecutor, batch_config_factory
from zlbench.cli import main
from zlbench.models import OP_STATUS_FIELDS, SUMMARY_FIELDS
from zlbench.runner.batch.legacy import LEGACY_OPS_STATUS_FIELDS, LEGACY_SUMMARY_FIELDS
from zlbench.runner.batch.run import run_batch


def read(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


@pytest.fixture
def batch(tmp_path):
    config = batch_config_factory(tmp_path, ["abs", "add", "mul"])
    fake = FakeExecutor({"add": ["NOROWS"], "mul": ["FAIL"]}, default="PASS:3")
    out = run_batch(config(fake, max_retries=0, progress=io.StringIO()))
    return out.out_dir


def snapshot(batch_dir):
    return {p.name: p.read_bytes() for p in batch_dir.iterdir() if p.is_file()}


def test_legacy_csvs_have_the_seed_columns_and_a_row_for_every_op(batch, tmp_path, capsys):
    before = snapshot(batch)
    legacy = tmp_path / "legacy"
    assert main(["summarize", str(batch), "--legacy-csv", "-o", str(legacy)]) == 0
    assert "3 op(s)" in capsys.readouterr().out
    assert snapshot(batch) == before  # zlbench's own files are untouched

    fields, ops = read(legacy / "ops_status.csv")
    assert fields == LEGACY_OPS_STATUS_FIELDS
    assert {"return_code", "elapsed_ms", "rows_total", "rows_success", "notes", "out_dir"} <= set(
        fields
    )
    by_op = {r["op"]: r for r in ops}
    assert by_op["abs"]["status"] == "PASS" and by_op["abs"]["return_code"] == "0"
    assert (by_op["abs"]["rows_total"], by_op["abs"]["rows_success"]) == ("3", "3")
    assert by_op["abs"]["elapsed_ms"] == "500"  # the fake's 0.5 s
    assert by_op["abs"]["out_dir"] == str(batch / "main" / "abs")
    assert "measured no row" in by_op["add"]["notes"]

    fields, rows = read(legacy / "summary.csv")
    assert fields == LEGACY_SUMMARY_FIELDS
    assert [r["op"] for r in rows].count("abs") == 3
    # an op that measured nothing still has its row, with its status and note
    (add,) = [r for r in rows if r["run_name"] == "add"]
    assert add["op_status"] == "FAIL" and "measured no row" in add["notes"]
    assert add["speedup"] == "" and add["dtype"] == ""
    assert {r["op_status"] for r in rows if r["run_name"] == "mul"} == {"FAIL"}
    assert all(r["extra_metrics"] == "" and r["case_id"] == "" for r in rows)


def test_summarize_o_writes_elsewhere_and_leaves_the_batch(batch, tmp_path, capsys):
    before = snapshot(batch)
    assert main(["summarize", str(batch), "-o", str(tmp_path / "sheets")]) == 0
    fields, rows = read(tmp_path / "sheets" / "summary.csv")
    assert fields == SUMMARY_FIELDS and len(rows) == 3  # abs 3; add and mul measured none
    assert snapshot(batch) == before
    assert fields == read(batch / "summary.csv")[0]  # zlbench's own format, unchanged
    assert read(batch / "ops_status.csv")[0] == OP_STATUS_FIELDS


@pytest.mark.parametrize(
    "argv,text",
    [
        (["--legacy-csv"], "name a dir with -o"),
        (["--legacy-csv", "-o", "{batch}"], "is the batch dir"),
    ],
)
def test_legacy_csv_refusals(batch, capsys, argv, text):
    before = snapshot(batch)
    argv = [a.replace("{batch}", str(batch)) for a in argv]
    assert main(["summarize", str(batch), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err
    assert snapshot(batch) == before


def test_legacy_csv_of_an_old_batch_dir_without_ops_status(tmp_path, flaggems_h200_dir):
    import shutil

    batch = tmp_path / "old"
    (batch / "main" / "add").mkdir(parents=True)
    shutil.copy(flaggems_h200_dir / "kernel_add.log", batch / "main" / "add" / "run.log")
    assert main(["summarize", str(batch), "--legacy-csv", "-o", str(tmp_path / "l")]) == 0
    _, ops = read(tmp_path / "l" / "ops_status.csv")
    assert [(r["op"], r["status"], r["rows_total"]) for r in ops] == [("add", "PASS", "20")]
    assert ops[0]["return_code"] == ""  # not known without ops_status.csv


def test_legacy_csv_of_a_dir_without_ops_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["summarize", str(tmp_path / "empty"), "--legacy-csv", "-o", str(tmp_path / "l")])
    assert "not a batch dir?" in capsys.readouterr().err
    assert not (tmp_path / "l").exists()
