"""`zlbench run` input checks, output-dir claiming, and `zlbench inventory` (no plugins)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import RunStatus
from zlbench.runner.catalog.inventory import load_inventory
from zlbench.runner.run import RunRequest, prepare, run_plan

FAKE = Path(__file__).with_name("fake_pytest.py")

TEST_OK = """
import pytest

@pytest.mark.ok
def test_ok():
    Benchmark(op_name="ok_name").run()

@pytest.mark.ok2
def test_ok2():
    pass
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    bench = tmp_path / "fg" / "benchmark"
    bench.mkdir(parents=True)
    (bench / "base.py").write_text("class Benchmark: pass\nclass Sub(Benchmark): pass\n")
    (bench / "test_ok.py").write_text(TEST_OK)
    (bench / "core_shapes.yaml").write_text("ok: {shapes: [[1]]}\nSub: {shapes: [[2]]}\n")
    return tmp_path / "fg"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _bad(capsys, *argv: str, match: str) -> None:
    rc, _, err = _cli(capsys, *argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert match in lines[0], lines[0]


def test_missing_flaggems_dir(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("ZLBENCH_FLAGGEMS_DIR", raising=False)
    fix = "pass --flaggems-dir DIR or set ZLBENCH_FLAGGEMS_DIR"
    _bad(capsys, "run", "--op", "ok", match=f"no FlagGems checkout given: {fix}")
    gone = str(tmp_path / "nowhere")
    _bad(capsys, "run", "--op", "ok", "--flaggems-dir", gone, match="(no such directory): " + fix)
    _bad(capsys, "run", "--op", "ok", "--flaggems-dir", str(tmp_path), match="(benchmark/ missing)")


def test_flaggems_dir_from_environment(capsys, checkout, monkeypatch):
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(checkout))
    _bad(capsys, "run", "--op", "okk", match="unknown op 'okk'; did you mean: ok")


def test_shape_file_without_the_op(capsys, checkout, tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("softmax: {shapes: [[4]]}\nNormBenchmark: {shapes: [[4, 4]]}\n")
    fg = ["--flaggems-dir", str(checkout)]
    _bad(capsys, "run", "--op", "ok", *fg, "--shape-file", str(shapes), match="no entry for op")
    rc, _, err = _cli(capsys, "run", "--op", "ok", *fg, "--shape-file", str(shapes))
    assert "looked for ok, ok_name" in err and "softmax, NormBenchmark" in err


def test_broken_yaml(capsys, checkout, tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("ok: [unclosed\n")
    fg = ["--flaggems-dir", str(checkout)]
    _bad(capsys, "run", "--op", "ok", *fg, "--shape-file", str(shapes), match="not valid YAML")


def test_replay_dir_without_records(capsys, checkout, tmp_path):
    empty = tmp_path / "empty_run"
    (empty / "autotune_records").mkdir(parents=True)
    fg = ["--flaggems-dir", str(checkout)]
    _bad(capsys, "run", "--op", "ok", *fg, "--replay-from", str(empty), match="no autotune records")
    gone = str(tmp_path / "gone")
    _bad(capsys, "run", "--op", "ok", *fg, "--replay-from", gone, match="no such directory")


def test_nothing_claimed_on_bad_input(capsys, checkout, tmp_path):
    out = tmp_path / "out"
    fg = ["--flaggems-dir", str(checkout), "--out", str(out)]
    _bad(capsys, "run", "--op", "nope", *fg, match="unknown op")
    assert not out.exists()


def test_prepare_replay_run_and_batch_layouts(checkout, tmp_path):
    run_dir = tmp_path / "rec_run"
    (run_dir / "autotune_records").mkdir(parents=True)
    (run_dir / "autotune_records" / "ok.json").write_text("{}")
    batch = tmp_path / "batch"
    (batch / "main" / "ok" / "autotune_records").mkdir(parents=True)
    (batch / "main" / "ok" / "autotune_records" / "ok.json").write_text("{}")
    for src in (run_dir, batch):
        req = RunRequest(op="ok", flaggems_dir=str(checkout), replay_from=str(src))
        req.out = str(tmp_path / "o")
        plan, _ = prepare(req)
        entry = plan.entries[0]
        assert entry.mode == "replay"
        assert Path(entry.replay_records).parent.name in ("rec_run", "ok")
    assert (tmp_path / "o").is_dir() and (tmp_path / "o-2").is_dir()


def test_prepare_and_run_plan_with_fake_pytest(checkout, tmp_path):
    exe = tmp_path / "fake-python"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    shapes = tmp_path / "s.yaml"
    shapes.write_text("Sub: {shapes: [[2]]}\nBenchmark: {shapes: [[3]]}\n")
    req = RunRequest(
        op="ok",
        flaggems_dir=str(checkout),
        shape_file=str(shapes),
        dtypes=["bfloat16"],
        timing="kernel",
        out=str(tmp_path / "out"),
    )
    plan, fg = prepare(req)
    entry = plan.entries[0]
    assert (entry.mode, entry.nodeids, entry.dtypes) == (
        "record",
        ["benchmark/test_ok.py::test_ok"],
        ["bfloat16"],
    )
    assert entry.shape_file == str(shapes.resolve())  # the class-name fallback applies
    outcome = run_plan(plan, fg, python=str(exe))
    assert outcome.status.status is RunStatus.PASS and outcome.exit_code == 0
    log = (outcome.run_dir / "run.log").read_text()
    assert "--dtypes bfloat16" in log and "benchmark/test_ok.py::test_ok" in log
    assert json.loads((outcome.run_dir / "plan.json").read_text())["timing"] == "kernel"


def test_inventory_command_and_migrate(capsys, checkout, tmp_path):
    out = tmp_path / "ops"
    curated = tmp_path / "cur.yaml"
    curated.write_text("# curated set\nok: {shapes: [[7]]}\n")
    merged = tmp_path / "merged.yaml"
    rc, stdout, _ = _cli(
        capsys,
        "inventory",
        "--repo",
        f"main={checkout}",
        "--out",
        str(out),
        "--migrate-shapes",
        str(curated),
        "--shapes-out",
        str(merged),
    )
    assert rc == 0
    rows = load_inventory(out / "inventory_main.csv")
    assert [r.op for r in rows] == ["ok", "ok2"]
    assert "1 curated keys kept, 1 upstream keys added" in stdout
    text = merged.read_text()
    assert text.startswith("# curated set\n") and "Sub:" in text and "[7]" in text
    _bad(capsys, "inventory", "--repo", "bogus", match="expected LABEL=PATH")


def test_default_shape_file_is_the_shipped_set_when_it_applies(checkout, tmp_path, monkeypatch):
    import zlbench.runner.run as run_mod

    ops = tmp_path / "shipped_ops"
    ops.mkdir()
    monkeypatch.setattr(run_mod, "shipped_ops_dir", lambda: ops)
    req = RunRequest(op="ok", flaggems_dir=str(checkout), out=str(tmp_path / "o"))
    assert prepare(req)[0].entries[0].shape_file is None  # no shipped file: upstream's
    (ops / "shapes_single.yaml").write_text("softmax: {shapes: [[1]]}\n")
    assert prepare(req)[0].entries[0].shape_file is None  # no key applies to "ok"
    (ops / "shapes_single.yaml").write_text("Sub: {shapes: [[1]]}\nBenchmark: {shapes: [[1]]}\n")
    assert prepare(req)[0].entries[0].shape_file == str(ops / "shapes_single.yaml")
