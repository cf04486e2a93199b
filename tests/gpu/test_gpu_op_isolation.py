"""Two ops of one process that launch one FlagGems LibEntry kernel with the same
arguments each run their own pinned config (docs/design.md §5 item 25; marker ``gpu``).

``sqrt`` and ``sqrt_`` both launch FlagGems' Hopper ``sqrt_kernel`` (a ``libtuner`` under
a ``libentry``). A record batch of both, then their records edited so that the two ops
pin different BLOCK_SIZEs for every key, then a replay batch of both in one pytest
process: each op's codegen index must show only its own BLOCK_SIZE, whichever ran
first. Before the launch caches were emptied at each op's start the second op ran the
first op's config (v7's sqrt ran sqrt_'s 2048 for its own 1024 on an H100).

Needs ``ZLBENCH_FLAGGEMS_DIR`` (a FlagGems checkout) and an sm_90 GPU (the Hopper op).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from flaggems_gpu import MARKS

torch = pytest.importorskip("torch")

pytestmark = MARKS

PINS = {"sqrt": 512, "sqrt_": 2048}
KERNEL = "sqrt_kernel"


def batch(out: Path, replay_root: Path | None = None) -> str:
    cmd = [sys.executable, "-m", "zlbench", "batch", "--ops", *PINS, "--dtypes", "bfloat16"]
    cmd += ["--mode", "cudagraph", "--gpus", "0", "--out", str(out)]
    if replay_root is not None:
        cmd += ["--replay-root", str(replay_root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout + proc.stderr


def blocks(run_dir: Path) -> set[int]:
    """The BLOCK_SIZEs the op launched sqrt_kernel with (its codegen index)."""
    index = json.loads((run_dir / "codegen" / "index.json").read_text())
    out = set()
    for r in index["records"]:
        if r["request"]["kernel"]["qualname"] == KERNEL and r["used_by"]:
            names = list(r["request"]["signature"])
            for c in r["request"]["constexprs"]:
                if names[c["path"][0]] == "BLOCK_SIZE":
                    out.add(c["value"])
    return out


def test_each_op_of_one_process_runs_its_own_pin(tmp_path):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("FlagGems' Hopper sqrt_kernel is an sm_90 op")
    rec = tmp_path / "rec"
    batch(rec)
    for op, block in PINS.items():
        path = rec / "main" / op / "autotune_records" / f"{op}.json"
        data = json.loads(path.read_text())
        (kernel,) = [k for k in data["kernels"] if k.endswith(":" + KERNEL)]
        for config in data["kernels"][kernel].values():
            config["kwargs"]["BLOCK_SIZE"] = block
        path.write_text(json.dumps(data))
    rep = tmp_path / "rep"
    batch(rep, replay_root=rec)
    for op, block in PINS.items():
        assert blocks(rep / "main" / op) == {block}, op
    logs = "".join((rep / "main" / op / "run.log").read_text() for op in PINS)
    assert "AUTOTUNE_REPLAY_FALLBACK" not in logs
    resets = [int(n) for n in re.findall(r"ZLBENCH_AUTOTUNE .*entries_reset=(\d+)", logs)]
    assert sorted(resets)[-1] >= 1  # the second op of the process found the first's entry
