"""``zlbench compare``: plain text on a terminal (no markdown escapes), markdown
otherwise or on request, and a note when a side's confirm re-measures are not used
(issue 50 item 7)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.cli.plaintext import inline, md_to_text
from zlbench.models import Selection
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

S = "[1024]"
OPS_DIR = Path(__file__).resolve().parents[1] / "ops"


def test_inline_markdown_becomes_its_text():
    assert inline(r"`a\|b` \*x\* **bold** \_y\_ ``x`y``") == "a|b *x* bold _y_ x`y"
    assert inline("mem\u2060@ber") == "mem@ber"


def test_a_table_becomes_aligned_columns():
    md = "| op | change |\n| --- | ---: |\n| `abs` | +1.0 % |\n| `a\\|b` | -12.5 % |\nafter"
    assert md_to_text(md).splitlines() == [
        "op    change",
        "abs   +1.0 %",
        "a|b  -12.5 %",
        "after",
    ]


@pytest.fixture
def gate_dir(tmp_path):
    """A gate dir with two confirm passes of a regressed op, and its baseline."""
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)], "mm": [brow("mm", S, 1.0)]})

    def measure(req):
        rows = [run_result("add", [crow("add", S, 0.8)]), run_result("mm", [crow("mm", S, 1.0)])]
        write_results(req.out_dir, [r for r in rows if f"main/{r.run_name}" in req.ops])
        return req.out_dir, 0

    job = GateJob(baseline=str(bl), out=tmp_path / "g", selection=Selection(ops_dir=OPS_DIR))
    assert run_gate(job, GateSeams(measure=measure, stdout=io.StringIO())) == 1
    assert (tmp_path / "g" / "confirm" / "2").is_dir()
    return bl, tmp_path / "g"


def test_text_has_no_markdown_and_says_confirm_is_not_used(gate_dir, capsys):
    bl, g = gate_dir
    assert main(["compare", str(bl), str(g), "--format", "text"]) == 1
    out = capsys.readouterr().out
    assert "`" not in out and "\\" not in out and "| ---" not in out
    assert "\nadd " in out or out.startswith("add ") or "\nadd  " in out
    assert (
        "note: B holds 2 confirm re-measure pass(es) (confirm/): compare judges each row on "
        "its first measurement only"
    ) in out


def test_markdown_when_asked_or_not_on_a_terminal(gate_dir, capsys):
    bl, g = gate_dir
    assert main(["compare", str(bl), str(g)]) == 1  # captured: not a terminal
    out = capsys.readouterr().out
    assert "| --- |" in out and "`add`" in out
    assert "confirm re\\-measure" not in out and "note: B holds 2 confirm re-measure" in out
    assert main(["compare", str(bl), str(g), "--format", "markdown"]) == 1
    assert "| --- |" in capsys.readouterr().out
