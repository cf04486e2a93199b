"""`-p zlbench.plugins.phases` with codegen recording (the benchpkg kernels compiled
for sm_90 under the stand-in driver): timings.json splits what runs after an op's
last test and before its ZLBENCH_OP_END by op-end hook (codegen index and SASS
disassembly, TTGIR dumps, ...), and the op's wall time stops at its last test."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("triton")

from _corerun import FAST, copy_benchpkg, entry  # noqa: E402

from tests.support.codegen import subprocess_env  # noqa: E402
from zlbench.models import WorkerPlan, load_codegen_index, load_json_model  # noqa: E402
from zlbench.models.timings import TIMINGS_JSON, OpTimings  # noqa: E402

OPS = [("add", "benchmark/test_add.py::test_add"), ("mm", "benchmark/test_mm.py::test_mm"),
       ("softmax", "benchmark/test_softmax.py::test_softmax")]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = copy_benchpkg(tmp_path_factory.mktemp("opend") / "suite")
    plan = root / "plan.json"
    entries = [entry(root, op, nodeid, dtypes=["float32"]) for op, nodeid in OPS]
    plan.write_text(WorkerPlan(entries=entries).model_dump_json(), encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "zlbench.plugins.loader", "-p",
           "zlbench.plugins.phases", "--zl-plan", str(plan), *FAST,
           "--zl-codegen-standin", "cuda:90", *[n for _, n in OPS]]  # fmt: skip
    env = subprocess_env(root, src=root / "src")
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "runs" / "main"


def test_op_end_hooks_are_timed_by_plugin_and_fit_in_the_op_end_time(runs):
    for op, _ in OPS:
        t = load_json_model(runs / op / TIMINGS_JSON, OpTimings)
        kernels = len(load_codegen_index(runs / op).records)
        assert kernels > 0 and t.op_end_hooks.get("codegen", 0) > 0, t.op_end_hooks
        assert "phases" not in t.op_end_hooks  # its own hook runs last, untimed
        assert all(v >= 0 for v in t.op_end_hooks.values())
        assert sum(t.op_end_hooks.values()) <= t.op_end_s + 0.01
        assert t.setup_s + t.call_s + t.teardown_s <= t.op_wall_s + 0.05


def test_phase_breakdown_prints_the_op_end_hooks(runs):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "phase_breakdown.py"
    spec = importlib.util.spec_from_file_location("phase_breakdown", path)
    pb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pb)
    totals = pb.breakdown(runs.parent)
    ops = [load_json_model(runs / op / TIMINGS_JSON, OpTimings) for op, _ in OPS]
    assert totals["ops"] == 3
    assert abs(totals["op end: codegen"] - sum(t.op_end_hooks["codegen"] for t in ops)) < 1e-6
    other = sum(max(0.0, t.op_end_s - sum(t.op_end_hooks.values())) for t in ops)
    assert totals["op end: other"] == pytest.approx(other, abs=1e-6)
