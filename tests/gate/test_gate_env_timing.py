"""zlbench's timing method and budgets are part of the environment the gate checks
(issue 28 item 1): a gate measured with other --warmup-ms / --replays than its
baseline is a mismatch (the budgets change the noise, docs/screening.md); a baseline
recorded before the method was is not compared."""

from __future__ import annotations

import pytest
from zlsynth import ENV, brow, crow, run_result, write_baseline

from zlbench.gate.env import check_environment, mismatches
from zlbench.gate.load import load_baseline
from zlbench.plugins import environment

DEFAULT = environment.timing_text("graph", 100.0, 10)


def findings(tmp_path, base: str | None, current: str | None):
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    for result in baseline.ops.values():
        result.environment.timing_method = base
    env = ENV.model_copy(update={"timing_method": current})
    return check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=env)])


def test_the_method_reads_as_results_record_it():
    assert DEFAULT == "graph warmup_ms=100 replays=10"
    assert environment.timing_text("graph", 25.0, 5) == "graph warmup_ms=25 replays=5"
    assert environment.timing_text("upstream", 100.0, 10) == "upstream"


@pytest.mark.parametrize(
    ("base", "current"),
    [
        (DEFAULT, "graph warmup_ms=25 replays=5"),  # other budgets
        (DEFAULT, "upstream"),  # upstream's do_bench instead of zlbench's graph timing
        (DEFAULT, None),  # results that do not say: cannot be verified
    ],
)
def test_other_budgets_or_method_than_the_baselines_is_a_mismatch(tmp_path, base, current):
    (bad,) = mismatches(findings(tmp_path, base, current))
    assert (bad.field, bad.baseline) == ("timing_method", DEFAULT)


@pytest.mark.parametrize(("base", "current"), [(DEFAULT, DEFAULT), (None, DEFAULT), (None, None)])
def test_the_same_method_or_a_baseline_that_never_recorded_one_passes(tmp_path, base, current):
    assert mismatches(findings(tmp_path, base, current)) == []


def test_the_probe_records_the_method_given():
    env = environment.probe(None, "cudagraph", "core", DEFAULT)
    assert env.timing_method == DEFAULT
    assert environment.probe(None, "cudagraph", "core").timing_method is None
