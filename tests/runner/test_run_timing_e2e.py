"""`zlbench run --timing-method/--warmup-ms/--replays` reach the benchmark process
(issue 28 item 1): one real pytest process on tests/benchpkg records the Timing asked
for, over the budgets PYTEST_ADDOPTS gives, as a gate's reproduce command needs."""

from __future__ import annotations

import shutil
from pathlib import Path

from zlbench.cli import main
from zlbench.models import RunResult, Timing, load_json_model

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"


def test_the_timing_flags_are_what_the_result_records(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "benchpkg"
    shutil.copytree(BENCHPKG, suite, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--iter 1 --zl-replays 2 --zl-warmup-ms 1")
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--op", "softmax", "--flaggems-dir", str(suite), "--mode", "kernel"]
    argv += ["--shape-file", str(suite / "benchmark" / "core_shapes.yaml")]
    argv += ["--timing-method", "graph", "--warmup-ms", "1.5", "--replays", "3"]
    rc = main(argv)
    assert rc == 0, capsys.readouterr()
    res = load_json_model(tmp_path / "runs" / "softmax" / "result.json", RunResult)
    assert res.environment.timing == Timing(mode="kernel", warmup_ms=1.5, replays=3)
