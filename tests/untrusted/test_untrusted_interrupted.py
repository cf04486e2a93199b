"""A results dir whose run was interrupted (INTERRUPTED beside its ops_status.csv, issue
49 item 4) holds only the ops decided before the stop: the judge refuses it in one line
instead of judging the rest as missing."""

from __future__ import annotations

import shutil
from pathlib import Path

from zlbench.cli import main
from zlbench.protocol.layout import INTERRUPTED

REPO = Path(__file__).resolve().parents[2]


def test_an_interrupted_results_dir_is_refused_and_its_copy_without_the_marker_judged(
    tmp_path, capsys
):
    results = tmp_path / "results"
    shutil.copytree(REPO / "examples" / "h200-gate-v1", results)
    argv = ["report", str(results), "--baseline", str(REPO / "baselines" / "v1")]
    assert main([*argv, "--out", str(tmp_path / "ok")]) == 0
    capsys.readouterr()
    (results / INTERRUPTED).write_text("interrupted: partial, 3 of 35 ops decided\n")
    assert main([*argv, "--out", str(tmp_path / "partial")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "was interrupted (INTERRUPTED)" in err and "partial" in err
    assert not (tmp_path / "partial" / "verdict.json").exists()
