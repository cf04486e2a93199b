"""Environment checks against the baseline manifest."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import ENV, FG_COMMIT, brow, crow, run_result, write_baseline
from zlbench.gate.env import check_environment, current_environment, mismatches
from zlbench.gate.load import load_baseline


@pytest.fixture
def baseline(tmp_path):
    return load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))


def _run(**env_changes):
    kw = {k: env_changes.pop(k) for k in ("timing", "shape_file_sha256") if k in env_changes}
    return run_result("x", [crow("x", "[1]", 1.0)], env=ENV.model_copy(update=env_changes), **kw)


def test_same_environment_has_no_mismatch(baseline):
    findings = check_environment(baseline, [_run()])
    assert mismatches(findings) == []
    fields = {f.field for f in findings}
    assert {"gpu_model", "timing", "shape_file_sha256", "flaggems_commit[main]"} <= fields


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu_model": "NVIDIA A100-SXM4-80GB"}, "gpu_model"),
        ({"gpu_model": None}, "gpu_model"),  # not recorded: cannot be verified
        ({"flaggems_commit": "0123456789abcdef"}, "flaggems_commit[main]"),
        ({"timing": "kernel"}, "timing"),
        ({"shape_file_sha256": "cd" * 32}, "shape_file_sha256"),
        ({"shape_file_sha256": None}, "shape_file_sha256"),
    ],
)
def test_each_checked_field_mismatches(baseline, change, field):
    bad = mismatches(check_environment(baseline, [_run(**change)]))
    assert [f.field for f in bad] == [field]


def test_short_commit_matches_full_commit(baseline):
    assert mismatches(check_environment(baseline, [_run(flaggems_commit=FG_COMMIT[:12])])) == []


def test_compiler_is_informational(baseline):
    findings = check_environment(
        baseline, [_run(triton_dist="triton", triton_version="3.5.0", flagtree_commit=None)]
    )
    assert mismatches(findings) == []
    info = {f.field: f for f in findings}
    assert info["compiler_dist"].current == "triton"
    assert info["compiler_version"].baseline == "3.6.0"


def test_results_from_two_gpus_mismatch_and_list_both(baseline):
    runs = [_run(), _run(gpu_model="NVIDIA A100")]
    (bad,) = mismatches(check_environment(baseline, runs))
    assert bad.current == "NVIDIA A100, NVIDIA H200"
    assert current_environment(runs).gpu_model == "NVIDIA H200, NVIDIA A100"
    assert current_environment(runs).gpu_count == 1
