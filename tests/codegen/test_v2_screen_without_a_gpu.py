"""The other-machine check of docs/codegen.md: the 61 kernels baselines/v2 recorded on
the H200, rebuilt on a machine without a GPU by the same triton, are identical at every
stage. Needs a FlagGems checkout of v2's commit in ZLBENCH_FLAGGEMS_DIR and FlagGems'
own dependency sqlalchemy (neither is a zlbench requirement): skipped without them."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zlbench.gitinfo import git_state
from zlbench.models import BaselineManifest, load_yaml_model

REPO = Path(__file__).resolve().parents[2]
V2 = REPO / "baselines" / "v2"


def _flaggems_dir() -> Path | None:
    d = os.environ.get("ZLBENCH_FLAGGEMS_DIR")
    if not d or not (Path(d) / "src" / "flag_gems").is_dir():
        return None
    want = load_yaml_model(V2 / "manifest.yaml", BaselineManifest).flaggems["main"]["commit"]
    return Path(d) if git_state(d)[0] == want else None


@pytest.mark.slow
@pytest.mark.skipif(
    _flaggems_dir() is None or importlib.util.find_spec("sqlalchemy") is None,
    reason="needs ZLBENCH_FLAGGEMS_DIR at baselines/v2's FlagGems commit and sqlalchemy",
)
def test_v2_kernels_recorded_on_the_h200_rebuild_identical_here(tmp_path):
    import triton

    if triton.__version__ != "3.6.0":
        pytest.skip(f"v2 was recorded with triton 3.6.0, this is {triton.__version__}")
    env = {**os.environ, "GEMS_VENDOR": "nvidia", "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    argv = ["codegen", "--baseline", str(V2), "--jobs", "2", "--out", str(tmp_path / "cg")]
    proc = subprocess.run(
        [sys.executable, "-m", "zlbench", *argv], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    screen = json.loads((tmp_path / "cg" / "codegen.json").read_text())
    assert len(screen["kernels"]) == 61
    assert {k["status"] for k in screen["kernels"]} == {"identical"}
