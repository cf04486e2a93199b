"""benchmarks/captures_diff.py: two captures of the same ops compared by what a replay
launches, values apart (a capture mode against another, docs/replay.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from zlbench.models import LAUNCHES_JSON, dump_json_model
from zlbench.models.replay import ArgSpec, LaunchCapture, LaunchSpec, RowLaunches, TensorStats

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _tool():
    spec = importlib.util.spec_from_file_location("captures_diff", BENCH / "captures_diff.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(root: Path, op: str, grid=(4, 1, 1), mean=0.0, truncated=False) -> None:
    x = ArgSpec(name="x", kind="tensor", dtype="float32", shape=[64], strides=[1],
                storage=64, stats=TensorStats(min=-1.0, max=1.0, mean=mean))  # fmt: skip
    launch = LaunchSpec(kernel_id="k1", kernel="k", grid=list(grid), args=[x])
    row = RowLaunches(run_name=op, op=op, dtype="float32", shape="[64]", launches=[launch],
                      truncated=truncated)  # fmt: skip
    dump_json_model(root / "main" / op / "codegen" / LAUNCHES_JSON, LaunchCapture(rows=[row]))


def test_captures_that_differ_in_values_alone_are_the_same(tmp_path, capsys):
    cd = _tool()
    a, b = tmp_path / "a", tmp_path / "b"
    for op in ("abs", "add"):
        _write(a, op)
        _write(b, op, mean=0.5)  # other inputs drawn: other statistics
    _write(a, "mm")
    assert cd.main([str(a), str(b)]) == 0
    assert "2 op(s) in both: 0 differ; 1 only in A, 0 only in B" in capsys.readouterr().out


def test_another_grid_or_a_truncated_row_is_a_difference(tmp_path, capsys):
    cd = _tool()
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a, "abs"), _write(b, "abs", grid=(8, 1, 1))
    _write(a, "add"), _write(b, "add", truncated=True)
    assert cd.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["main/abs: row float32 [64]: launches differ",
                       "main/add: row float32 [64]: truncated differ"]  # fmt: skip


def test_a_dir_that_is_not_there_is_one_line(tmp_path, capsys):
    assert _tool().main([str(tmp_path / "nope"), str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("captures_diff: ") and "not a dir" in err and "\n" not in err
