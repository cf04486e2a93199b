"""A missing compiler or FlagGems is one line with the fix, before any work is done
(issue 27 item 1): ``gate``, ``batch`` and ``run`` without an importable triton, or
with a FlagGems dir that is not given, does not exist or has no ``benchmark/``, print
one line naming what is missing and the fix, exit 2, before the codegen screen or a
GPU starts and without writing ``--out``. ``gate --results`` needs neither."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.trees import shipped
from zlbench.cli import main

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
VARS = ("ZLBENCH_FLAGGEMS_DIR", "ZLBENCH_FLAGGEMS_VLLM_DIR")


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A baseline of one op (``abs``), its inventory, a FlagGems checkout ``fg`` (with
    benchmark/), a dir that is none ``nofg``; no checkout in the environment, and any
    executor or GPU start fails the test."""
    from tests.support.batch_fakes import make_inventory
    from tests.support.zlsynth import brow, write_baseline
    from zlbench.runner.batch import workers

    for var in VARS:
        monkeypatch.delenv(var, raising=False)

    def no_executor():
        raise AssertionError("a benchmark process was started")

    monkeypatch.setattr(workers, "default_executor", no_executor)
    make_inventory(tmp_path / "ops", "main", ["abs"])
    (tmp_path / "fg" / "benchmark").mkdir(parents=True)
    (tmp_path / "nofg").mkdir()
    write_baseline(tmp_path / "bl", {"abs": [brow("abs", "[8]", 1.0)]})
    return tmp_path


def one_line(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return out, lines[0]


def no_triton(monkeypatch) -> None:
    """``import triton`` fails in this process (and importlib finds none)."""
    monkeypatch.setitem(sys.modules, "triton", None)


CHECKOUTS = [
    (None, "no FlagGems checkout given: "),
    ("gone", "no FlagGems checkout at {w}/gone (no such directory): "),
    ("nofg", "no FlagGems checkout at {w}/nofg (benchmark/ missing): "),
]


@pytest.mark.parametrize(("fg", "what"), CHECKOUTS)
def test_gate_without_a_flaggems_checkout_stops_before_any_work(
    world, capsys, monkeypatch, fg, what
):
    if fg:
        monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(world / fg))
    out_dir = world / "out"
    argv = ["gate", "--baseline", str(world / "bl"), "--ops-dir", str(world / "ops")]
    assert main([*argv, "--out", str(out_dir)]) == 2
    out, line = one_line(capsys)
    fix = "set ZLBENCH_FLAGGEMS_DIR to a FlagGems checkout"  # gate has no --flaggems-dir
    assert line == "zlbench gate: error: " + what.format(w=world) + fix
    assert out == "" and not out_dir.exists()  # no screen, no measure, no --out


def test_gate_without_a_compiler_stops_before_any_work(world, capsys, monkeypatch):
    no_triton(monkeypatch)
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(world / "fg"))
    out_dir = world / "out"
    argv = ["gate", "--baseline", str(world / "bl"), "--ops-dir", str(world / "ops")]
    assert main([*argv, "--out", str(out_dir)]) == 2
    out, line = one_line(capsys)
    assert line.startswith("zlbench gate: error: no compiler to measure: `import triton` finds ")
    assert "install the compiler under test (the triton or FlagTree build)" in line
    assert line.endswith("(`gate --results DIR` judges stored results without one)")
    assert out == "" and not out_dir.exists()


def test_gate_results_judges_without_a_compiler_or_a_checkout(tmp_path, capsys, monkeypatch):
    """Judging stored results is what a CPU-only machine without triton does."""
    no_triton(monkeypatch)
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    results = shipped("examples/h200-gate-v2-no-coalesce")
    argv = ["gate", "--baseline", str(REPO / "baselines/v2"), "--results", str(results)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1  # its FAIL, judged
    assert (tmp_path / "out" / "verdict.json").is_file()
    assert sys.modules["triton"] is None  # nothing tried to import it


@pytest.mark.parametrize(("fg", "what"), CHECKOUTS)
def test_batch_without_a_flaggems_checkout_stops_before_any_work(
    world, capsys, monkeypatch, fg, what
):
    argv = ["batch", "--ops-dir", str(world / "ops"), "--ops", "abs", "--out", str(world / "out")]
    if fg:
        argv += ["--flaggems-dir", str(world / fg)]
    assert main(argv) == 2
    out, line = one_line(capsys)
    fix = "pass --flaggems-dir DIR or set ZLBENCH_FLAGGEMS_DIR"
    assert line == "zlbench batch: error: " + what.format(w=world) + fix
    assert out == "" and not (world / "out").exists()


def test_batch_names_the_vllm_checkout_it_lacks(world, capsys, monkeypatch):
    from tests.support.batch_fakes import make_inventory

    make_inventory(world / "ops", "vllm", ["abs"])
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(world / "fg"))
    argv = ["batch", "--ops-dir", str(world / "ops"), "--ops", "abs", "--repos", "vllm"]
    assert main([*argv, "--out", str(world / "out")]) == 2
    _, line = one_line(capsys)
    assert line == (
        "zlbench batch: error: no FlagGems checkout given for repo 'vllm': pass --flaggems-dir "
        "vllm=DIR or set ZLBENCH_FLAGGEMS_VLLM_DIR"
    )


def test_batch_without_a_compiler_stops_before_any_work(world, capsys, monkeypatch):
    no_triton(monkeypatch)
    argv = ["batch", "--ops-dir", str(world / "ops"), "--ops", "abs", "--out", str(world / "out")]
    assert main([*argv, "--flaggems-dir", str(world / "fg")]) == 2
    out, line = one_line(capsys)
    assert line.startswith("zlbench batch: error: no compiler to measure: `import triton`")
    assert out == "" and not (world / "out").exists()


def test_run_without_a_compiler_or_a_checkout_stops_before_the_run_dir(world, capsys, monkeypatch):
    run_dir = world / "run"
    argv = ["run", "--op", "abs", "--out", str(run_dir)]
    assert main([*argv, "--flaggems-dir", str(world / "nofg")]) == 2
    _, line = one_line(capsys)
    assert line == (
        f"zlbench run: error: no FlagGems checkout at {world}/nofg (benchmark/ missing): "
        "pass --flaggems-dir DIR or set ZLBENCH_FLAGGEMS_DIR"
    )
    no_triton(monkeypatch)
    assert main([*argv, "--flaggems-dir", str(world / "fg")]) == 2
    _, line = one_line(capsys)
    assert line.startswith("zlbench run: error: no compiler to measure: `import triton`")
    assert not run_dir.exists()
