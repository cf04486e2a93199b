"""Helpers of the plugin tier: run the fake FlagGems suite (tests/benchpkg) under zlbench."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from zlbench.models import PlanEntry, RunResult, WorkerPlan, load_json_model

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"
# Tiny timing budget: interpreted kernels are slow and the numbers are not judged here.
# The CPU backend even on a GPU host: the fake kernels run in the interpreter on CPU tensors.
FAST = ["--level", "core", "--iter", "1", "--zl-replays", "2", "--zl-warmup-ms", "1",
        "--zl-timing-backend", "cpu"]  # fmt: skip


def copy_benchpkg(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(BENCHPKG, dest, ignore=ignore)
    return dest


@dataclass
class BenchRun:
    rc: int
    out: str
    root: Path

    @property
    def lines(self) -> pytest.LineMatcher:
        return pytest.LineMatcher(self.out.splitlines())

    def result(self, run_name: str, repo: str = "main") -> RunResult:
        return load_json_model(self.root / "runs" / repo / run_name / "result.json", RunResult)

    def run_dir(self, run_name: str, repo: str = "main") -> Path:
        return self.root / "runs" / repo / run_name


def entry(root: Path, op: str, nodeid: str, **kw) -> PlanEntry:
    run_dir = root / "runs" / kw.get("repo", "main") / op
    return PlanEntry(op=op, run_name=op, run_dir=str(run_dir), nodeids=[nodeid], **kw)


def run_plan(root: Path, entries: list[PlanEntry], *extra: str, timeout: float = 240) -> BenchRun:
    """Run ``entries`` in one pytest process inside the copied suite at ``root``."""
    plan = WorkerPlan(entries=entries)
    plan_path = root / f"plan-{len(list(root.glob('plan-*.json')))}.json"
    plan_path.write_text(plan.model_dump_json(), encoding="utf-8")
    nodeids = [n for e in entries for n in e.nodeids]
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "zlbench.plugins.loader",
           "--zl-plan", str(plan_path), *FAST, *extra, *nodeids]  # fmt: skip
    env = dict(os.environ)
    env.update(
        TRITON_INTERPRET="1",
        TRITON_CACHE_DIR=str(root / "triton-cache"),
        FLAGGEMS_CACHE_DIR=str(root / "flaggems-cache"),
        PYTHONHASHSEED="0",
    )
    env.pop("GEMS_VENDOR", None)
    proc = subprocess.run(
        cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    return BenchRun(rc=proc.returncode, out=proc.stdout + proc.stderr, root=root)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
