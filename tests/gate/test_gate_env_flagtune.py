"""USE_FLAGTUNE (FlagGems' tuning space) is checked like the other environment fields."""

from __future__ import annotations

from tests.support.zlsynth import env_findings
from zlbench.gate.env import mismatches


def _findings(tmp_path, base: str | None, current: str | None):
    return env_findings(tmp_path, "use_flagtune", base, current)


def test_a_different_tuning_space_is_a_mismatch(tmp_path):
    bad = mismatches(_findings(tmp_path, "0", "1"))
    assert [(f.field, f.baseline, f.current) for f in bad] == [("use_flagtune", "0", "1")]


def test_an_unrecorded_tuning_space_cannot_be_verified(tmp_path):
    assert [f.field for f in mismatches(_findings(tmp_path, "0", None))] == ["use_flagtune"]


def test_the_same_tuning_space_or_an_old_baseline_without_it_passes(tmp_path):
    assert mismatches(_findings(tmp_path, "0", "0")) == []
    assert mismatches(_findings(tmp_path, None, "0")) == []
