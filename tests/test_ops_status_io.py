"""``models.read_ops_status``: the one reader of ops_status.csv (runner and gate)."""

from __future__ import annotations

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import OP_STATUS_FIELDS, OpStatus, RunStatus, read_ops_status
from zlbench.runner.batch.status import write_ops_status


def test_reads_back_what_the_runner_writes(tmp_path):
    sts = [
        OpStatus(
            repo="main", op="a", run_name="a", status=RunStatus.PASS, rows=3, run_dir="main/a"
        ),
        OpStatus(repo="main", op="b", run_name="b", status=RunStatus.CRASH, rc=-11, note="x\ny"),
    ]
    write_ops_status(tmp_path, sts)
    assert read_ops_status(tmp_path / "ops_status.csv") == sts


def test_empty_cells_take_defaults_and_unknown_columns_are_ignored(tmp_path):
    p = tmp_path / "ops_status.csv"
    p.write_text("repo,op,run_name,status,rc,rows,added_later\nmain,add,add,FAIL,,,zzz\n")
    [st] = read_ops_status(p)
    assert (st.status, st.rc, st.rows, st.run_dir) == (RunStatus.FAIL, None, 0, "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b\n1,2\n", "not an ops_status.csv"),
        ("", "not an ops_status.csv"),
        ("repo,op,run_name\nmain,add,add\n", "not an ops_status.csv"),
        ("repo,op,run_name,status\nmain,add,add,GREAT\n", r"ops_status.csv:2: status: "),
        ("repo,op,run_name,status,rows\nmain,add,add,PASS,many\n", r"ops_status.csv:2: rows: "),
        # a quoted note spanning two lines: the bad row after it is named by its own line
        (
            'repo,op,run_name,status,note\nmain,a,a,PASS,"x\ny"\n,b,b,PASS,\n',
            r"ops_status.csv:4: repo: ",
        ),
    ],
)
def test_one_line_errors_name_file_line_and_field(tmp_path, text, message):
    p = tmp_path / "ops_status.csv"
    p.write_text(text)
    with pytest.raises(ZlbenchError, match=message) as e:
        read_ops_status(p)
    assert "\n" not in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(ZlbenchError, match="ops_status.csv: file not found"):
        read_ops_status(tmp_path / "ops_status.csv")


def test_header_is_the_model(tmp_path):
    write_ops_status(tmp_path, [])
    assert (tmp_path / "ops_status.csv").read_text().strip() == ",".join(OP_STATUS_FIELDS)
    assert read_ops_status(tmp_path / "ops_status.csv") == []
