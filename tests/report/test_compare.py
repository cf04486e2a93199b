"""`zlbench compare A B`: run, batch, gate output and baseline dirs; judged with the
gate's estimator and thresholds; exit 0 (nothing regressed), 1, 2 (bad input)."""

from __future__ import annotations

import pytest
from realdata import BASELINE, FAIL_SLOWDOWNS, RESULTS, inject

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import main
from zlbench.models import RowKey, ThresholdsFile
from zlbench.report.compare import compare, render_compare

S = "[1024]"


def results(tmp_path, name, add=1.0, mm=0.8):
    rows = [run_result("add", [crow("add", S, add)]), run_result("mm", [crow("mm", S, mm)])]
    return write_results(tmp_path / name, rows)


def test_same_numbers_exit_0(tmp_path, capsys):
    assert main(["compare", str(results(tmp_path, "a")), str(results(tmp_path, "b"))]) == 0
    out = capsys.readouterr().out
    assert "matched rows: 2" in out and "verdict: PASS (0 failing rows)" in out


def test_a_regressed_row_exits_1_with_the_reports_words(tmp_path, capsys):
    a, b = results(tmp_path, "a"), results(tmp_path, "b", add=0.8)  # torch 20 % faster
    assert main(["compare", str(a), str(b), "--thresholds", str(ratio_yaml(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "| `add` | `bfloat16` | `[1024]` | 1000.0 → 1000.0 | +0.0 % |" in out
    assert "| +25.0 % | +5.3 % | REGRESSION |" in out


def ratio_yaml(tmp_path):
    y = tmp_path / "th.yaml"
    y.write_text("estimator: ratio\n")
    return y


def test_baseline_dir_against_the_shipped_results_uses_the_manifest_estimator(capsys):
    assert main(["compare", str(BASELINE), str(RESULTS)]) == 0
    out = capsys.readouterr().out
    assert "matched rows: 49" in out and "only in B: 1 rows" in out
    assert "machine-speed correction: B measured torch" in out and "; corrected" in out


def test_injected_slowdown_against_the_baseline_exits_1(tmp_path, capsys):
    b = inject(tmp_path / "fail", FAIL_SLOWDOWNS)
    assert main(["compare", str(BASELINE), str(b)]) == 1
    out = capsys.readouterr().out
    assert "| 210.9 → 252.8 | +19.9 % |" in out and "verdict: FAIL (2 failing rows)" in out


def test_run_dirs_with_different_run_names_are_matched(tmp_path, capsys):
    a = write_results(tmp_path / "a", [run_result("add", [crow("add", S, 1.0)])]) / "main" / "add"
    b_res = run_result("add_v2", [crow("add", S, 1.1)])
    b = write_results(tmp_path / "b", [b_res]) / "main" / "add_v2"
    assert main(["compare", str(a), str(b)]) == 0
    assert "matched rows: 1" in capsys.readouterr().out


def test_a_gate_output_dir_is_read(tmp_path, capsys):
    gate_out = tmp_path / "gate"
    results(gate_out, "results")
    assert main(["compare", str(results(tmp_path, "a")), str(gate_out)]) == 0


@pytest.mark.parametrize("what", ["empty", "disjoint", "missing"])
def test_nothing_to_compare_exits_2_with_one_line(tmp_path, capsys, what):
    a = results(tmp_path, "a")
    if what == "empty":
        b = write_results(tmp_path / "b", [])
    elif what == "disjoint":
        b = write_results(tmp_path / "b", [run_result("x", [crow("x", "[9]", 1.0)])])
    else:
        b = tmp_path / "nope"
    assert main(["compare", str(a), str(b)]) == 2
    assert "Traceback" not in one_error_line(capsys)


def test_a_current_latency_that_is_no_number_fails_the_row():
    key = RowKey(repo="main", run_name="add", op="add", dtype="bfloat16", shape=S)
    a = {key: crow("add", S, 1.0)}
    b = {key: crow("add", S, 1.0).model_copy(update={"latency_ms": float("nan")})}
    c = compare(a, b, ThresholdsFile())
    assert c.exit_code == 1 and "FAILED: current FlagGems latency not usable" in render_compare(c)
