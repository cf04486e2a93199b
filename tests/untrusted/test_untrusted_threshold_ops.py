"""A threshold override for an op the baseline does not hold is an error (issue 26:
18), never ignored while the report shows it as in force: one line naming the field,
with the closest op, for the ``ops``, ``rows`` and ``paired_ops`` entries of a
``--thresholds`` file, in ``zlbench gate`` and ``zlbench compare``."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    gate,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main

S = "[1024]"


@pytest.fixture
def dirs(tmp_path):
    ops = {"softmax": [brow("softmax", S, 1.0)], "mm__at__test_mm.py": [brow("mm", S, 1.0)]}
    bl = write_baseline(tmp_path / "bl", ops)
    results = [run_result("softmax", [crow("softmax", S, 1.0)])]
    results.append(run_result("mm__at__test_mm.py", [crow("mm", S, 1.0)]))
    return bl, write_results(tmp_path / "r", results)


@pytest.mark.parametrize(
    "text,field",
    [
        ("ops:\n  sofmax: 0.5\n", "ops.sofmax"),
        ("rows:\n  - op: sofmax\n    threshold: 0.5\n", "rows.0.op"),
        ("paired_ops:\n  sofmax: 0.5\n", "paired_ops.sofmax"),
    ],
)
def test_an_override_of_no_baseline_op_is_refused(tmp_path, capsys, dirs, text, field):
    bl, results = dirs
    (tmp_path / "th.yaml").write_text(text)
    rc, out = gate(tmp_path, bl, results, "--thresholds", str(tmp_path / "th.yaml"))
    assert rc == 2 and not (out / "verdict.json").exists()
    line = one_error_line(capsys)
    assert f"field '{field}'" in line and "did you mean 'softmax'?" in line


@pytest.mark.parametrize("name", ["softmax", "mm", "mm__at__test_mm.py"])
def test_an_override_by_op_name_or_run_name_is_in_force(tmp_path, dirs, name):
    bl, results = dirs
    (tmp_path / "th.yaml").write_text(f"ops:\n  {name}: 0.5\n")
    assert gate(tmp_path, bl, results, "--thresholds", str(tmp_path / "th.yaml"))[0] == 0


def test_compare_refuses_an_override_of_neither_sides_ops(tmp_path, capsys, dirs):
    bl, results = dirs
    (tmp_path / "th.yaml").write_text("ops:\n  sofmax: 0.5\n")
    argv = ["compare", str(bl), str(results), "--thresholds", str(tmp_path / "th.yaml")]
    assert main(argv) == 2
    assert "did you mean 'softmax'?" in one_error_line(capsys)
