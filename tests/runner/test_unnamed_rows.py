"""A benchmark whose own ``init_user_config`` never calls upstream's (upstream
``ChunkGatedDeltaRuleBenchmark``, ``MultiMarginLossBenchmark``) is never seen by the
plugins' patched config: its rows must not be named after the previous test's
benchmark, and the run log says they were not recorded. A real process over the
benchpkg suite (TRITON_INTERPRET=1)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from benchpkg_batch import BENCHPKG, FAST

from zlbench.models import PlanEntry, RunResult, RunStatus, WorkerPlan, load_json_model
from zlbench.runner.execute.worker import execute_plan

NOSUPER = """
import flag_gems, torch
from . import base
from .conftest import Config


class NoSuper(base.BinaryPointwiseBenchmark):
    def init_user_config(self):
        self.mode = Config.mode
        self.set_dtypes(Config.user_desired_dtypes)
        self.set_metrics(Config.user_desired_metrics)
        self.shapes = [(64,), (32,), (16,), (8,)]


def test_first():
    base.BinaryPointwiseBenchmark(
        op_name="first", torch_op=torch.add, gems_op=flag_gems.ops.add, dtypes=[torch.float32]
    ).run()


def test_nosuper():
    NoSuper(
        op_name="nosuper", torch_op=torch.add, gems_op=flag_gems.ops.add, dtypes=[torch.float32]
    ).run()
"""


@pytest.mark.slow
def test_rows_of_a_benchmark_the_plugins_cannot_see_are_not_misnamed(tmp_path):
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (fg / "benchmark" / "test_nosuper.py").write_text(NOSUPER)
    tests = ["benchmark/test_nosuper.py::test_first", "benchmark/test_nosuper.py::test_nosuper"]
    entry = PlanEntry(op="x", run_name="x", run_dir=str(tmp_path / "x"), dtypes=["float32"],
                      nodeids=tests)  # fmt: skip
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("GEMS_VENDOR", None)
    plan = WorkerPlan(timing="kernel", entries=[entry])
    (status,) = execute_plan(plan, flaggems_dir=fg, env=env, extra_pytest_args=FAST)
    assert status.status is RunStatus.PASS
    result = load_json_model(Path(entry.run_dir) / "result.json", RunResult)
    assert [(r.op, r.shape) for r in result.rows] == [  # test_first's rows only
        ("first", "[torch.Size([32]), torch.Size([32])]"),
        ("first", "[torch.Size([4, 8]), torch.Size([4, 8])]"),
    ]
    log = (Path(entry.run_dir) / "run.log").read_text()
    assert "a benchmark measured rows zlbench cannot name" in log
