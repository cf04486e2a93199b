"""Artifact text printed by the CLI never becomes a GitHub workflow command on the
judge step's stdout/stderr (issue 16): op names and error text with newlines,
carriage returns, ``::`` or ``##[`` reach the log inert."""

from __future__ import annotations

import csv
import io
import re

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.cli.logsafe import LogSafeStream, log_safe
from zlbench.models import OP_STATUS_FIELDS, BatchInfo, OpStatus, RunStatus, dump_json_model

EVIL = "x\n::warning::pwned\r::add-mask::secret\r\n \u00a0::error::y ##[error]v1"
S = "[1024]"


def workflow_commands(text: str) -> list[str]:
    """The lines a GitHub runner would obey: split at \\n, \\r or \\r\\n; a line
    whose text after leading whitespace starts with ``::``, or holding ``##[``."""
    lines = re.split(r"\r\n|\r|\n", text)
    return [ln for ln in lines if ln.lstrip().startswith("::") or "##[" in ln]


def test_the_judge_reads_these_as_commands():  # the detector detects
    assert len(workflow_commands(EVIL)) == 3


@pytest.mark.parametrize(
    "text",
    [
        EVIL,
        "::add-mask::secret",
        "\t::set-output name=a::b",
        "ok\r::stop-commands::tok",
        "\u2003::notice::x",
        "a ##[warning]b",
    ],
)
def test_log_safe_leaves_no_command(text):
    out = log_safe(text)
    assert workflow_commands(out) == []
    assert out.replace("\u2060", "") == text  # reads the same


def test_a_command_split_over_two_writes_is_caught():
    buf = io.StringIO()
    stream = LogSafeStream(buf)
    for piece in ["start\n", "  :", ":warning::split\n", ":", "", ":x\n", "a", "::fine\n"]:
        stream.write(piece)
    assert workflow_commands(buf.getvalue()) == []
    assert "a::fine" in buf.getvalue()  # "::" inside a line is left alone


def test_gate_error_with_a_hostile_op_name_prints_no_command(tmp_path, capsys):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    r = write_results(tmp_path / "r", [run_result("add", [crow("add", S, 1.0)])])
    # the run dir's result.json records another (hostile) op: one error line naming it
    hostile = run_result(EVIL, [crow("add", S, 1.0)])
    dump_json_model(r / "main" / "add" / "result.json", hostile)
    rc = main(["gate", "--baseline", str(bl), "--results", str(r), "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "pwned" in err  # the text is shown ...
    assert workflow_commands(out + err) == []  # ... but inert


def _shard(root, run_name: str, speedup: float):
    res = run_result("add", [crow("add", S, speedup)])
    res = res.model_copy(update={"run_name": run_name})
    dump_json_model(root / "main" / "op" / "result.json", res)
    st = OpStatus(
        repo="main", op="add", run_name=run_name, status=RunStatus.PASS, rows=1, run_dir="main/op"
    )
    with open(root / "ops_status.csv", "w", newline="") as f:  # csv quotes the newlines
        w = csv.writer(f)
        w.writerow(OP_STATUS_FIELDS)
        rec = st.model_dump(mode="json")
        w.writerow(["" if rec[k] is None else rec[k] for k in OP_STATUS_FIELDS])
    dump_json_model(root / "batch.json", BatchInfo(created="2026-01-01T00:00:00Z"))
    return root


def test_merge_conflict_on_a_hostile_op_name_prints_no_command(tmp_path, capsys):
    a = _shard(tmp_path / "a", EVIL, 1.0)
    b = _shard(tmp_path / "b", EVIL, 2.0)
    rc = main(["merge", str(a), str(b), "--out", str(tmp_path / "m")])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "pwned" in err
    assert workflow_commands(out + err) == []
