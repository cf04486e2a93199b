"""A refreshed baseline records the USE_FLAGTUNE its runs were measured with, so the
gate can check it (zlbench.gate.env)."""

from __future__ import annotations

import datetime as dt

from zlbench.models import BaselineResult, Environment
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.refresh import RefreshConfig, _manifest


def test_manifest_records_the_tuning_space_of_the_runs(tmp_path):
    cfg = RefreshConfig(
        out=tmp_path / "v9",
        batch=BatchConfig(out_dir=tmp_path / "b", flaggems_dirs={}, ops_dir=tmp_path),
        zlbench_commit="abc",
    )
    env = Environment(gpu_model="NVIDIA H200", use_flagtune="0")
    result = BaselineResult(repo="main", run_name="x", op="x", timing="kernel", environment=env)
    now = dt.datetime.now(dt.timezone.utc)
    manifest = _manifest(cfg, tmp_path, [result], now, now, {})
    assert manifest.use_flagtune == "0"
