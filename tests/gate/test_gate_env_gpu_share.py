"""--gpu-share is checked like the other environment fields: a shared GPU measures small
kernels ~2 % faster (docs/screening.md), so results and baseline must share alike; a
baseline or result from before sharing existed counts as one process per GPU."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.support.zlsynth import brow, env_findings, write_baseline
from zlbench.gate.env import check_environment, mismatches
from zlbench.gate.load import load_baseline
from zlbench.models import BaselineResult, Environment
from zlbench.plugins import environment
from zlbench.protocol.turn import GPU_SHARE_VAR
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.refresh import RefreshConfig, _manifest


def _findings(tmp_path, base: int | None, current: int | None):
    return env_findings(tmp_path, "gpu_share", base, current)


def test_a_shared_screen_against_an_unshared_baseline_is_a_mismatch(tmp_path):
    bad = mismatches(_findings(tmp_path, None, 4))  # v1-v3: recorded before sharing
    assert [(f.field, f.baseline, f.current) for f in bad] == [("gpu_share", "1", "4")]
    bad = mismatches(_findings(tmp_path, 4, None))  # old results against a shared baseline
    assert [(f.field, f.baseline, f.current) for f in bad] == [("gpu_share", "4", "1")]


def test_the_same_share_or_neither_recorded_passes(tmp_path):
    assert mismatches(_findings(tmp_path, 4, 4)) == []
    assert mismatches(_findings(tmp_path, None, None)) == []
    assert mismatches(_findings(tmp_path, 1, None)) == []


def test_a_refreshed_manifest_records_the_share_of_its_passes(tmp_path):
    batch = BatchConfig(out_dir=tmp_path / "b", flaggems_dirs={}, ops_dir=tmp_path, gpu_share=3)
    cfg = RefreshConfig(out=tmp_path / "v9", batch=batch, zlbench_commit="abc")
    env = Environment(gpu_model="NVIDIA H200")
    result = BaselineResult(repo="main", run_name="x", op="x", timing="kernel", environment=env)
    now = dt.datetime.now(dt.timezone.utc)
    assert _manifest(cfg, tmp_path, [result], now, now, {}).gpu_share == 3


@pytest.mark.parametrize(("value", "expected"), [(None, 1), ("4", 4), ("0", 1), ("x", 1)])
def test_the_environment_probe_reads_the_share_the_runner_set(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(GPU_SHARE_VAR, raising=False)
    else:
        monkeypatch.setenv(GPU_SHARE_VAR, value)
    assert environment._gpu_share() == expected


def test_with_no_measured_run_an_old_baseline_has_no_share_mismatch(tmp_path):
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    baseline.manifest.gpu_share = None
    findings = {f.field: f for f in check_environment(baseline, [])}
    assert not findings["gpu_share"].mismatch  # like use_flagtune, not a made-up "1 vs ?"


def test_a_refresh_refuses_passes_measured_under_different_shares(tmp_path):
    from zlbench.errors import ZlbenchError

    batch = BatchConfig(out_dir=tmp_path / "b", flaggems_dirs={}, ops_dir=tmp_path)
    cfg = RefreshConfig(out=tmp_path / "v9", batch=batch, zlbench_commit="abc")
    results = [
        BaselineResult(
            repo="main", run_name=n, op=n, timing="kernel", environment=Environment(gpu_share=s)
        )
        for n, s in (("x", 1), ("y", 3))
    ]
    now = dt.datetime.now(dt.timezone.utc)
    with pytest.raises(ZlbenchError, match="different --gpu-share: 1, 3"):
        _manifest(cfg, tmp_path, results, now, now, {})
    results[0].environment.gpu_share = 3  # all recorded 3: the manifest says 3, not cfg's 1
    assert _manifest(cfg, tmp_path, results, now, now, {}).gpu_share == 3
