"""Autotune record then replay against the real FlagGems suite on a GPU (marker ``gpu``).

Drives ``zlbench run`` (bfloat16, core shapes, CUDA-graph timing) for softmax,
sum, layer_norm and mm: the replay must show zero AUTOTUNE_REPLAY_FALLBACK, the
mm records must include its LibTuner kernels, and the mm replay must not sweep
(the autotune summary line reports ``bench_calls=0``: no config benchmarked).

Needs ``ZLBENCH_FLAGGEMS_DIR`` (a FlagGems checkout). Set ``ZLBENCH_GPU_NUMBERS``
to a file path to get the wall times (record vs replay per op) as JSON for docs/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from flaggems_gpu import MARKS

torch = pytest.importorskip("torch")

pytestmark = MARKS

# mm is also in test_blas_perf_parallel.py: name the file, as ops/gate_core.txt does
OPS = ["softmax", "sum", "layer_norm", "mm@test_mm.py"]
NUMBERS: dict[str, dict[str, float]] = {}


def zlbench_run(op: str, out: Path, replay_from: Path | None = None) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "zlbench", "run", "--op", op, "--dtypes", "bfloat16"]
    cmd += ["--mode", "cudagraph", "--out", str(out)]
    # upstream core shapes, not the gate's single-shape set
    core = Path(os.environ["ZLBENCH_FLAGGEMS_DIR"]) / "benchmark" / "core_shapes.yaml"
    cmd += ["--shape-file", str(core)]
    if replay_from is not None:
        cmd += ["--replay-from", str(replay_from)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return wall, (out / "run.log").read_text(encoding="utf-8")


def summary(log: str) -> dict[str, str]:
    lines = re.findall(r"ZLBENCH_AUTOTUNE (run_name=.*)", log)
    assert lines, "no autotune summary line in run.log"
    return dict(part.split("=", 1) for part in lines[-1].split())


@pytest.fixture(scope="module", autouse=True)
def write_numbers():
    yield
    target = os.environ.get("ZLBENCH_GPU_NUMBERS")
    if target and NUMBERS:
        Path(target).write_text(json.dumps(NUMBERS, indent=2) + "\n")


def _result(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


def _records(run_dir: Path) -> dict:
    files = list((run_dir / "autotune_records").glob("*.json"))
    return json.loads(files[0].read_text())["kernels"] if files else {}


@pytest.mark.parametrize("op", OPS)
def test_record_then_replay_pins_every_config(op, tmp_path):
    rec_dir = tmp_path / "rec"
    rep_dirs = [tmp_path / "rep1", tmp_path / "rep2"]
    rec_wall, rec_log = zlbench_run(op, rec_dir)
    records = _records(rec_dir)  # {} for an op without autotuned kernels
    walls, logs = [], []
    for rep_dir in rep_dirs:  # two replays of the same record: their speedup spread
        wall, log = zlbench_run(op, rep_dir, replay_from=rec_dir)
        walls.append(wall)
        logs.append(log)
    results = [_result(d) for d in rep_dirs]
    spread = [
        abs(b["speedup"] / a["speedup"] - 1.0)
        for a, b in zip(results[0]["rows"], results[1]["rows"], strict=True)
        if a.get("speedup") and b.get("speedup")
    ]
    NUMBERS[op.split("@")[0]] = {
        "record_s": round(rec_wall, 1),
        "replay_s": round(walls[0], 1),
        "replay_bench_s": round(results[0]["bench_s"] or 0.0, 2),
        "rows": len(results[0]["rows"]),
        "kernels_recorded": len(records),
        "replay_spread_max": round(max(spread, default=0.0), 4),
        "replay_spread_median": round(sorted(spread)[len(spread) // 2], 4) if spread else 0.0,
    }
    for log, result in zip(logs, results, strict=True):
        assert "AUTOTUNE_REPLAY_FALLBACK" not in log
        assert not any(k.startswith("AUTOTUNE_REPLAY_FALLBACK") for k in result["marker_counts"])
        assert result["rows"], f"{op}: replay measured no rows"
    if records:
        rep = summary(logs[0])
        assert int(rep["pinned"]) > 0 and rep["tuned"] == "0"
    if op.startswith("mm@"):
        patched = re.search(r"ZLBENCH_AUTOTUNE_PATCHED (.*)", rec_log).group(1).split()
        assert "flag_gems.utils.libentry.LibTuner" in patched
        assert any(":mm" in kernel for kernel in records), sorted(records)
        assert summary(logs[0])["bench_calls"] == "0", "the mm replay swept configs"
