"""How a run was timed (``models.Timing``: upstream's mode, zlbench's method and its
budgets) is part of the environment the gate checks, as a whole (issue 28 item 1): a
gate measured with other --warmup-ms / --replays or another method than its baseline
is a mismatch (the budgets change the noise, docs/screening.md); a baseline recorded
before the method was is not compared."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import ENV, brow, crow, run_result, write_baseline
from zlbench.cli import main
from zlbench.gate.env import check_environment, mismatches
from zlbench.gate.load import load_baseline
from zlbench.models import Timing, TimingMethod
from zlbench.plugins import environment

DEFAULT = Timing(mode="cudagraph")
OTHERS = [
    Timing(mode="cudagraph", warmup_ms=25.0, replays=5),  # other budgets
    Timing(mode="cudagraph", replays=11),  # one budget other
    Timing(mode="cudagraph", warmup_ms=100.5),
    Timing(mode="kernel"),  # upstream's other mode
    *(Timing(mode="cudagraph", method=m) for m in TimingMethod if m is not TimingMethod.GRAPH),
    None,  # results that do not say: cannot be verified
]


def findings(tmp_path, base: Timing | None, current: Timing | None):
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    for result in baseline.ops.values():
        result.environment.timing = base
    env = ENV.model_copy(update={"timing": current})
    return check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=env)])


@pytest.mark.parametrize("current", OTHERS, ids=lambda t: t.text() if t else "none")
def test_other_budgets_or_method_than_the_baselines_is_a_mismatch(tmp_path, current):
    (bad,) = [f for f in mismatches(findings(tmp_path, DEFAULT, current)) if f.field != "timing"]
    assert (bad.field, bad.baseline) == ("timing_method", DEFAULT.text())
    assert bad.current == (current.text() if current else "(not recorded)")


@pytest.mark.parametrize("method", list(TimingMethod))
def test_every_method_against_itself_passes_and_against_every_other_mismatches(tmp_path, method):
    mine = Timing(mode="cudagraph", method=method)
    assert mismatches(findings(tmp_path / "same", mine, mine)) == []
    for other in TimingMethod:
        if other is not method:
            theirs = Timing(mode="cudagraph", method=other)
            assert [
                f.field for f in mismatches(findings(tmp_path / other.value, mine, theirs))
            ] == ["timing_method"]


@pytest.mark.parametrize(("base", "current"), [(DEFAULT, DEFAULT), (None, DEFAULT), (None, None)])
def test_the_same_timing_or_a_baseline_that_never_recorded_one_passes(tmp_path, base, current):
    assert mismatches(findings(tmp_path, base, current)) == []


def test_an_old_baselines_string_is_compared_as_the_model(tmp_path):
    """A baseline written with the string ``timing_method``: parsed, upstream's mode
    from its result's ``timing``; the same Timing passes, other budgets do not."""
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    for key, result in baseline.ops.items():
        data = result.model_dump(mode="json")
        data["environment"].pop("timing", None)
        data["environment"]["timing_method"] = "graph warmup_ms=25 replays=5"
        data["environment"]["mode"] = None
        baseline.ops[key] = type(result).model_validate(data)
    rows = [crow("x", "[1]", 1.0)]

    def bad(t: Timing):
        env = ENV.model_copy(update={"timing": t})
        return mismatches(check_environment(baseline, [run_result("x", rows, env=env)]))

    assert bad(Timing(mode="cudagraph", warmup_ms=25, replays=5)) == []
    assert [f.field for f in bad(DEFAULT)] == ["timing_method"]


def test_a_gate_at_other_budgets_exits_2(tmp_path, capsys, monkeypatch):
    """The whole gate: results measured at other budgets than the baseline's are not
    judged (exit 2, the mismatch named)."""
    from tests.support import zlsynth

    monkeypatch.setattr(zlsynth, "ENV", ENV.model_copy(update={"timing": DEFAULT}))
    bl = write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]})
    monkeypatch.undo()
    write_results = zlsynth.write_results
    other = ENV.model_copy(update={"timing": Timing(mode="cudagraph", replays=3)})
    res = write_results(tmp_path / "res", [run_result("x", [crow("x", "[1]", 1.0)], env=other)])
    rc = main(["gate", "--baseline", str(bl), "--results", str(res), "--out", str(tmp_path / "g")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "environment differs from the baseline: timing_method: baseline " in err
    assert "replays=3" in err and "; " not in err.split("timing_method")[1].split("(")[0]
    same = ENV.model_copy(update={"timing": DEFAULT})
    res = write_results(tmp_path / "same", [run_result("x", [crow("x", "[1]", 1.0)], env=same)])
    out = str(tmp_path / "g2")
    assert main(["gate", "--baseline", str(bl), "--results", str(res), "--out", out]) == 0


def test_the_probe_records_the_timing_given():
    env = environment.probe(None, "cudagraph", "core", DEFAULT)
    assert env.timing == DEFAULT
    assert environment.probe(None, "cudagraph", "core").timing is None


def test_the_manifests_timing_is_the_baselines_when_it_recorded_one(tmp_path):
    # a refreshed baseline records its Timing in manifest.yaml; it decides even where
    # its ops' result.json files say nothing (derived or older per-op files)
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    for result in baseline.ops.values():
        result.environment.timing = None
    baseline.manifest.timing_method = DEFAULT
    other = ENV.model_copy(update={"timing": OTHERS[0]})
    (bad,) = mismatches(
        check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=other)])
    )
    assert (bad.field, bad.baseline, bad.current) == (
        "timing_method",
        DEFAULT.text(),
        OTHERS[0].text(),
    )
    same = ENV.model_copy(update={"timing": DEFAULT})
    assert (
        mismatches(
            check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=same)])
        )
        == []
    )


def test_refresh_records_the_one_timing_and_refuses_passes_timed_differently():
    from zlbench.errors import ZlbenchError
    from zlbench.runner.refresh import _timing

    def res(t):
        r = run_result("x", [crow("x", "[1]", 1.0)], env=ENV.model_copy(update={"timing": t}))
        return r

    assert _timing([res(DEFAULT), res(DEFAULT)]) == DEFAULT
    assert _timing([res(None)]) is None
    with pytest.raises(ZlbenchError, match="timed differently"):
        _timing([res(DEFAULT), res(OTHERS[0])])


def test_refresh_refuses_passes_of_the_capture_method():
    """``--zl-timing capture`` runs two untimed calls (``baseline capture --untimed``): its
    latencies are no measurements, and no baseline is made of them."""
    from zlbench.errors import ZlbenchError
    from zlbench.runner.refresh import _timing

    untimed = Timing(mode="cudagraph", method="capture")
    env = ENV.model_copy(update={"timing": untimed})
    with pytest.raises(ZlbenchError, match="not measurements") as e:
        _timing([run_result("x", [crow("x", "[1]", 1.0)], env=env)])
    assert "\n" not in str(e.value)
