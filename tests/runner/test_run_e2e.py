"""`zlbench run` end to end on the small FlagGems-shaped suite (tests/benchpkg),
real plugins, Triton interpreter on CPU: record, then replay from the record."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import AutotuneRecords, MarkerKind, RunResult, load_json_model

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"

pytestmark = pytest.mark.slow


@pytest.fixture
def suite(tmp_path: Path, monkeypatch) -> Path:
    dest = tmp_path / "benchpkg"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(BENCHPKG, dest, ignore=ignore)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    # Interpreted kernels are slow; the numbers are not judged here.
    monkeypatch.setenv("PYTEST_ADDOPTS", "--iter 1 --zl-replays 2 --zl-warmup-ms 1")
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.chdir(tmp_path)
    return dest


def _run(capsys, *argv: str) -> tuple[int, str]:
    rc = main(["run", *argv])
    out, err = capsys.readouterr()
    return rc, out + err


def test_record_then_replay(suite, tmp_path, capsys):
    shapes = str(suite / "benchmark" / "core_shapes.yaml")  # tiny shapes, not ops/'s
    common = ["--op", "softmax", "--flaggems-dir", str(suite), "--mode", "kernel"]
    common += ["--shape-file", shapes]
    rc, out = _run(capsys, *common)
    assert rc == 0, out
    rec_dir = tmp_path / "runs" / "softmax"
    rec = load_json_model(rec_dir / "result.json", RunResult)
    assert (rec.status.value, rec.mode, rec.timing) == ("PASS", "record", "kernel")
    assert rec.rows and all(r.status == "SUCCESS" for r in rec.rows)
    assert list((rec_dir / "autotune_records").glob("*.json"))

    rc, out = _run(capsys, *common, "--replay-from", str(rec_dir))
    assert rc == 0, out
    rep_dir = tmp_path / "runs" / "softmax-2"  # the output dir was taken: claimed as -2
    assert f"run dir: {rep_dir}" in out
    rep = load_json_model(rep_dir / "result.json", RunResult)
    assert (rep.status.value, rep.mode) == ("PASS", "replay")
    assert [(r.op, r.dtype, r.shape) for r in rep.rows] == [
        (r.op, r.dtype, r.shape) for r in rec.rows
    ]
    assert not [m for m in rep.markers if m.kind is MarkerKind.REPLAY_FALLBACK]
    assert not any(k.startswith(MarkerKind.REPLAY_FALLBACK.value) for k in rep.marker_counts)
    log = (rep_dir / "run.log").read_text()
    assert "ZLBENCH_OP_BEGIN run_name=softmax" in log and "ZLBENCH_OP_END" in log
    assert "AUTOTUNE_REPLAY_FALLBACK" not in log and "\x1b[" not in log


def test_op_without_tuned_kernels_records_empty_and_replays(suite, tmp_path, capsys):
    """FlagGems softmax/sum tune nothing (seen on the H200): their record must still be
    replayable, with an explicit empty record rather than no record at all."""
    shapes = str(suite / "benchmark" / "core_shapes.yaml")
    common = ["--op", "nonzero", "--flaggems-dir", str(suite), "--mode", "kernel"]
    common += ["--shape-file", shapes]
    rc, out = _run(capsys, *common)
    assert rc == 0, out
    rec_dir = tmp_path / "runs" / "nonzero"
    record = load_json_model(rec_dir / "autotune_records" / "nonzero.json", AutotuneRecords)
    assert record.kernels == {}
    rc, out = _run(capsys, *common, "--replay-from", str(rec_dir))
    assert rc == 0, out
    rep = load_json_model(tmp_path / "runs" / "nonzero-2" / "result.json", RunResult)
    assert rep.mode == "replay" and rep.rows
