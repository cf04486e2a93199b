"""The screen on a CPU job with the real codegen screen (docs/codegen.md, "The screen
on a CPU job"): the benchpkg kernels recorded for sm_90 under the stand-in driver
(tests/support/codegen.py) are a baseline's records; ``gate --screen-only`` rebuilds
them with this triton (nothing changed: only the sentinel op is listed, every other op
proven unchanged) and stamps the plan with this interpreter's compiler fingerprint;
``gate --screen`` then takes that real codegen.json, re-proves every skip from it and
times only the sentinel. Timing is the gate's measure seam (synthetic results)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

pytest.importorskip("triton")

from tests.support.codegen import REPO, record_benchpkg, write_op_codegen  # noqa: E402
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results  # noqa: E402
from zlbench.models import (  # noqa: E402
    GateVerdict,
    Selection,
    TimingPlanFile,
    load_json_model,
)
from zlbench.workflow.codegen import compiler_fingerprint  # noqa: E402
from zlbench.workflow.gate import GateJob, GateSeams  # noqa: E402
from zlbench.workflow.screen_job import run_gate_job  # noqa: E402

pytestmark = pytest.mark.slow

S = "[1024]"
OPS = {"add": "add_kernel", "softmax": "softmax_kernel", "mm": "mm_kernel"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cgrec")
    record_benchpkg(root)
    return root


@pytest.fixture
def bl(recorded, tmp_path, monkeypatch) -> Path:
    """Each op holds the records of its kernel, used by its row; the rebuild workers
    find the recorded helpers on their path."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(recorded / "helpers")]))
    root = tmp_path / "bl"
    write_op_codegen(recorded, root, OPS, S)
    return write_baseline(root, {op: [brow(op, S, 1.0)] for op in OPS})


class Measure:
    def __init__(self):
        self.requests = []

    def __call__(self, req):
        self.requests.append(req)
        rows = [run_result(op, [crow(op, S, 1.0)]) for op in OPS if f"main/{op}" in req.ops]
        write_results(req.out_dir, rows)
        return req.out_dir, 0


def test_a_real_screen_from_a_cpu_job_times_only_what_it_listed(bl, tmp_path):
    ops_dir = tmp_path / "ops"
    ops_dir.mkdir()
    (ops_dir / "sentinels.txt").write_text("add\n")

    def job(out: Path) -> GateJob:
        flaggems = {"main": REPO / "tests" / "benchpkg"}
        return GateJob(baseline=str(bl), out=out, selection=Selection(ops_dir=ops_dir),
                       flaggems_dirs=flaggems, time="changed", codegen_jobs=2,
                       confirm=0)  # fmt: skip

    err, cpu, gpu = io.StringIO(), tmp_path / "cpu", tmp_path / "gpu"
    cpu_measure = Measure()
    seams = GateSeams(measure=cpu_measure, stdout=err, stderr=err)  # the real screen
    assert run_gate_job(job(cpu), seams, screen_only=True) == 0, err.getvalue()
    assert cpu_measure.requests == []
    plan = load_json_model(cpu / "codegen" / "timing.json", TimingPlanFile)
    assert plan.order == ["main/add"] and set(plan.skipped) == {"main/mm", "main/softmax"}
    assert plan.compiler == compiler_fingerprint() != ""

    measure, err = Measure(), io.StringIO()
    seams = GateSeams(measure=measure, stdout=err, stderr=err)
    assert run_gate_job(job(gpu), seams, screen=cpu) == 0, err.getvalue()
    assert [r.ops for r in measure.requests] == [{"main/add"}]
    assert "codegen: chunk" not in err.getvalue()  # not screened again
    v = load_json_model(gpu / "verdict.json", GateVerdict)
    assert v.codegen.kernels == plan_kernels(cpu) and "from a CPU job" in v.codegen.note
    assert set(v.codegen.not_timed) == {"main/mm", "main/softmax"}


def plan_kernels(screen_out: Path) -> int:
    from zlbench.models import CodegenScreen

    return len(load_json_model(screen_out / "codegen" / "codegen.json", CodegenScreen).kernels)
