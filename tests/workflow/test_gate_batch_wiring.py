"""What the gate hands the batch runner and takes back from it (issue 15): a time
budget sized by the baseline's recorded durations, the baseline's USE_FLAGTUNE, and
the batch's systemic failures and never-measured ops leading the reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.gate.load import load_baseline
from zlbench.models import BatchInfo, GateVerdict, OpStatus, RunStatus, Selection
from zlbench.models.batch import SystemicFailure
from zlbench.runner.batch.budget import DEFAULT_BUDGET_FACTOR
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.batch.status import write_ops_status
from zlbench.workflow.gate import GateJob, MeasureRequest, dismissed_ops, measure_batch

S = "[1024]"
LINE = (
    "2 ops fail the same way under the compiler under test: "
    "SystemError in triton/backends/nvidia/driver.py:328 (1 of them not run)"
)


def _baseline(tmp_path: Path, *, durations: bool) -> Path:
    root = tmp_path / "bl"
    root.mkdir()
    if durations:  # a baseline may ship the ops_status.csv of its record pass
        write_ops_status(root, [
            OpStatus(repo="main", op="add", run_name="add", status=RunStatus.PASS,
                     seconds=12.0, dtype_used="bfloat16"),
            OpStatus(repo="main", op="mm", run_name="mm", status=RunStatus.PASS,
                     seconds=30.0, dtype_used="bfloat16,float16"),
        ])  # fmt: skip
    ops = {"add": [brow("add", S, 1.0)], "mm": [brow("mm", S, 0.8)]}
    return write_baseline(root, ops, use_flagtune="1")


@pytest.mark.parametrize("durations", [True, False])
def test_measure_batch_passes_the_budget_the_durations_and_use_flagtune(
    tmp_path, batch_configs, durations
):
    seen = batch_configs
    baseline = load_baseline(_baseline(tmp_path, durations=durations))
    job = GateJob(
        baseline=str(baseline.path),
        out=tmp_path / "out",
        selection=Selection(ops_dir=tmp_path / "ops"),
    )
    req = MeasureRequest(baseline, {"main/add", "main/mm"}, tmp_path / "out" / "r", None, job)
    measure_batch(req)
    (config,) = seen
    assert config.budget_factor == DEFAULT_BUDGET_FACTOR
    assert config.use_flagtune == "1"
    want = {"main/add": 12.0, "main/mm": 15.0} if durations else {}  # seconds per dtype
    assert config.durations == want
    # the progress header's forecast names whose seconds they are and their GPU model
    assert config.durations_source == "the baseline's"
    assert config.durations_gpu == baseline.manifest.gpu_model


@pytest.mark.parametrize("add_passes", [True, False])
def test_gate_reports_lead_with_the_systemic_failure_and_the_ops_not_measured(
    tmp_path, capsys, add_passes
):
    bl = write_baseline(
        tmp_path / "bl",
        {"add": [brow("add", S, 1.0)], "mm": [brow("mm", S, 0.8)], "abs": [brow("abs", S, 1.0)]},
    )
    failed = dict(status=RunStatus.FAIL, error="SystemError: launch returned NULL")
    passed = run_result("add", [crow("add", S, 1.0)])
    add = passed if add_passes else run_result("add", [], **failed)
    results = [add, run_result("mm", [], **failed)]
    not_run = OpStatus(repo="main", op="abs", run_name="abs", status=RunStatus.ERROR,
                       note="NOT MEASURED: the time budget was spent")  # fmt: skip
    batch = write_results(tmp_path / "r", results, [not_run])
    info = BatchInfo(
        created="2026-11-30T00:00:00Z",
        systemic=[SystemicFailure(signature="x", ops=["main/add", "main/mm"], line=LINE)],
        not_measured=["main/abs"],
    )
    write_batch_info(batch, info)
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(batch), "--out", str(out)])
    # one op measured: FAIL; none measured: ERROR (nothing measured), the lines still lead
    assert rc == (1 if add_passes else 2), capsys.readouterr().err
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.systemic == [LINE] and v.not_measured == ["main/abs"]
    report = (out / "report.md").read_text()
    assert "Systemic failures (1)" in report and "driver.py:328" in report
    # the ops never measured, by the name a person types; in an ERROR report too
    assert "Not measured (1 ops)" in report and "`abs`" in report
    assert report.index("Systemic failures") < report.index("Not measured")
    assert ("ERROR (nothing judged)" in report) is not add_passes
    # `zlbench report` over a measuring gate's dir finds the batch in its results/
    gate_dir = tmp_path / "gate"
    shutil.copytree(batch, gate_dir / "results")
    again = tmp_path / "again"
    assert main(["report", "--baseline", str(bl), str(gate_dir), "--out", str(again)]) == rc
    assert GateVerdict.model_validate_json((again / "verdict.json").read_text()).systemic == [LINE]


def test_an_undated_dismiss_entry_reads_undated_not_none(tmp_path, capsys):
    ops_dir = tmp_path / "ops"
    ops_dir.mkdir()
    (ops_dir / "dismiss.txt").write_text("add  # flaky on H20\nmm  # 2026-01-02 hangs\n")
    got = dismissed_ops(ops_dir, ["main/add", "main/mm", "main/abs"])
    assert got == {"main/add": "flaky on H20 (undated)", "main/mm": "hangs (2026-01-02)"}
    assert "no date" in capsys.readouterr().err
