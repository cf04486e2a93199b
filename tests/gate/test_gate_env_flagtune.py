"""USE_FLAGTUNE (FlagGems' tuning space) is checked like the other environment fields."""

from __future__ import annotations

from zlsynth import ENV, brow, crow, run_result, write_baseline

from zlbench.gate.env import check_environment, mismatches
from zlbench.gate.load import load_baseline


def _findings(tmp_path, base: str | None, current: str | None):
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    baseline.manifest.use_flagtune = base
    env = ENV.model_copy(update={"use_flagtune": current})
    return check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=env)])


def test_a_different_tuning_space_is_a_mismatch(tmp_path):
    bad = mismatches(_findings(tmp_path, "0", "1"))
    assert [(f.field, f.baseline, f.current) for f in bad] == [("use_flagtune", "0", "1")]


def test_an_unrecorded_tuning_space_cannot_be_verified(tmp_path):
    assert [f.field for f in mismatches(_findings(tmp_path, "0", None))] == ["use_flagtune"]


def test_the_same_tuning_space_or_an_old_baseline_without_it_passes(tmp_path):
    assert mismatches(_findings(tmp_path, "0", "0")) == []
    assert mismatches(_findings(tmp_path, None, "0")) == []
