"""`zlbench report` says on stderr what it judges and when it is done (issue 50 item 5
follow-up: re-judging a gate dir against baselines/v7 took ~8 s with no output): the
start line on a terminal only (a refusal in a log stays one line), the end line always."""

from __future__ import annotations

import io
import re

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.errors import ZlbenchError
from zlbench.models import Selection
from zlbench.workflow.gate import GateJob, GateSeams, rejudge

S = "[4096]"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def job(tmp_path, results) -> GateJob:
    bl = write_baseline(tmp_path / "bl", {op: [brow(op, S, 1.0)] for op in ("add", "mm")})
    return GateJob(
        baseline=str(bl), out=tmp_path / "out", results=str(results),
        selection=Selection(ops_dir=tmp_path / "ops"),
    )  # fmt: skip


def results(tmp_path):
    runs = [run_result(op, [crow(op, S, 1.0)]) for op in ("add", "mm")]
    return write_results(tmp_path / "res", runs)


@pytest.mark.parametrize("tty", [True, False])
def test_report_says_what_it_judges_and_when_it_is_done(tmp_path, tty):
    err = Terminal() if tty else io.StringIO()
    rc = rejudge(job(tmp_path, results(tmp_path)), GateSeams(stdout=io.StringIO(), stderr=err))
    assert rc == 0
    lines = err.getvalue().splitlines()
    start = [ln for ln in lines if ln.startswith("zlbench report: judging")]
    if tty:
        assert start and re.fullmatch(r"zlbench report: judging 2 op\(s\) of .*res against .*bl …",
                                      start[0])  # fmt: skip
    else:
        assert start == []
    assert re.fullmatch(r"zlbench report: judged in \d+\.\d s", lines[-1])


def test_a_refused_report_on_a_terminal_ends_with_no_done_line(tmp_path):
    err = Terminal()
    bad = tmp_path / "res" / "main" / "add"  # one op's run dir: refused after the start line
    results(tmp_path)
    with pytest.raises(ZlbenchError):
        rejudge(job(tmp_path, bad), GateSeams(stdout=io.StringIO(), stderr=err))
    assert "judged in" not in err.getvalue()
