"""``zlbench baseline show``: a summary by default, each op with ``--table``, and no noise
figure for a baseline that never measured noise (repeats 0; issue 50 item 5)."""

from __future__ import annotations

from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.gate.baselines import OpSummary
from zlbench.models import BaselineManifest
from zlbench.report.baseline import render_show

OPS = [OpSummary("main/abs", 4, 1.2345, 0.0125), OpSummary("main/add", 2, None, 0.03)]


def _manifest(**kw) -> BaselineManifest:
    noise = {"rows": 6, "p50": 0.0, "p90": 0.0, "max": 0.0}
    return BaselineManifest(**{"name": "v9", "created": "t", "summary": {"noise": noise}, **kw})


def test_noise_never_measured_is_said_not_printed_as_zero():
    for table in (True, False):
        text = render_show(_manifest(repeats=0), OPS, table=table)
        assert "  row noise  not measured (repeats 0: no replay pass)" in text.splitlines()
        assert "0.00%" not in text and "1.25%" not in text  # no noise figure anywhere
        assert "noisiest" not in text


def test_the_summary_by_default_and_the_table_on_request():
    summary = render_show(_manifest(repeats=3), OPS, table=False).splitlines()
    assert summary[-3:] == [
        "  ops        2 (6 rows)",
        "  noisiest   main/add 3.00%, main/abs 1.25%",
        "  (one line per op: --table)",
    ]
    table = render_show(_manifest(repeats=3), OPS, table=True).splitlines()
    assert table[-2].split() == ["main/abs", "4", "1.234", "1.25%"]


def test_the_cli_shows_the_summary_unless_asked_for_the_table(tmp_path, capsys):
    bl = write_baseline(tmp_path / "bl", {"abs": [brow("abs", "[8]", 1.0)]})
    assert main(["baseline", "show", str(bl)]) == 0
    out = capsys.readouterr().out
    assert "  ops        1 (1 rows)" in out and "main/abs " not in out
    assert main(["baseline", "show", str(bl), "--table"]) == 0
    assert "main/abs " in capsys.readouterr().out
