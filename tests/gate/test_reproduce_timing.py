"""The reproduce command a report prints times the op as it was timed (issue 28 item 1):
the baseline's ``Timing`` rendered as ``zlbench run --mode M --timing-method X
--warmup-ms W --replays N``, and parsed back by the real CLI into the same Timing, down
to the plugin options the benchmark process reads it from."""

from __future__ import annotations

import argparse
import shlex

import pytest

from tests.support.zlsynth import ENV, brow, crow, load_judge_inputs, run_result
from zlbench.cli import build_parser
from zlbench.cli.run_cmd import pytest_args, timing_from_args
from zlbench.gate.restate import restate
from zlbench.gate.verdict import GateOptions, run_gate, timing_from_words
from zlbench.models import FAILING_VERDICTS, Timing, TimingMethod, Verdict
from zlbench.plugins.timing import configured_timing
from zlbench.protocol import options

NON_DEFAULT = [
    {"warmup_ms": 25.0, "replays": 5},
    {"warmup_ms": 0.125, "replays": 1},
    {"warmup_ms": 100.0, "replays": 10},  # the defaults, still named
]


def timings() -> list[Timing]:
    """Every method (a new member is covered by itself), at several budgets."""
    return [Timing(mode="cudagraph", method=m, **b) for m in TimingMethod for b in NON_DEFAULT]


def gate_verdict(tmp_path, how: Timing | None, *, results_how: Timing | None = None):
    """A gate of two ops, ``slow`` regressed, whose baseline and results were timed as
    ``how`` (the results as ``results_how`` when given)."""
    base_ops = {"slow": [brow("slow", "[1]", 1.0)], "fine": [brow("fine", "[1]", 1.0)]}
    env = ENV.model_copy(update={"timing": results_how or how})
    results = [
        run_result("slow", [crow("slow", "[1]", 1.0, lat=1.5, torch_lat=1.0)], env=env),
        run_result("fine", [crow("fine", "[1]", 1.0)], env=env),
    ]
    b, r, th = load_judge_inputs(tmp_path, base_ops, results)
    for res in b.ops.values():
        res.environment.timing = how
    opts = GateOptions(baseline_label="bl", allow_env_mismatch=True)
    return run_gate(b, r, th, opts)


def parsed(command: str) -> argparse.Namespace:
    argv = shlex.split(command)
    assert argv[:2] == ["zlbench", "run"]
    return build_parser().parse_args(argv[1:])


@pytest.mark.parametrize("how", timings(), ids=lambda t: t.text())
def test_the_reproduce_command_names_the_timing_and_parses_back_to_it(tmp_path, how):
    v = gate_verdict(tmp_path, how)
    (op,) = [o for o in v.ops if o.verdict in FAILING_VERDICTS]
    words = shlex.split(op.reproduce)
    assert words[words.index("--timing-method") + 1] == how.method.value
    if how.method.has_budgets:
        assert f"--warmup-ms {words[words.index('--warmup-ms') + 1]}" in op.reproduce
        assert float(words[words.index("--warmup-ms") + 1]) == how.warmup_ms
        assert int(words[words.index("--replays") + 1]) == how.replays
    else:
        assert "--warmup-ms" not in words and "--replays" not in words
    assert timing_from_args(parsed(op.reproduce)) == how
    assert timing_from_words(shlex.split(v.reproduce_template)) == how


@pytest.mark.parametrize("how", timings(), ids=lambda t: t.text())
def test_the_plugin_times_as_the_reproduce_command_says(tmp_path, how):
    """The reproduce command's flags reach the benchmark process as plugin options
    (protocol/options.py) from which the plugin reads back the same Timing."""
    v = gate_verdict(tmp_path, how)
    (op,) = [o for o in v.ops if o.verdict in FAILING_VERDICTS]
    args = parsed(op.reproduce)
    extra = pytest_args(args)
    assert extra == options.timing_args(how)
    plugin = argparse.ArgumentParser()
    options.add_options(plugin.add_argument)
    ns = plugin.parse_args(extra)

    class Config:
        def getoption(self, name):
            return getattr(ns, name)

    assert configured_timing(Config(), args.mode) == how


def test_an_op_failed_only_by_the_rejudging_gets_the_timing_too(tmp_path):
    how = Timing(mode="cudagraph", warmup_ms=25, replays=5)
    v = gate_verdict(tmp_path, how)
    rows = [
        r.model_copy(update={"verdict": Verdict.REGRESSION}) if r.key.op == "fine" else r
        for r in v.rows
    ]
    fine = next(o for o in restate(v, rows).ops if o.op == "fine")
    assert "--timing-method graph --warmup-ms 25 --replays 5" in fine.reproduce
    assert timing_from_args(parsed(fine.reproduce)) == how


def test_the_baselines_timing_wins_and_an_unrecorded_one_is_left_out(tmp_path):
    base = Timing(mode="cudagraph", warmup_ms=25, replays=5)
    other = Timing(mode="cudagraph", warmup_ms=50, replays=7)
    v = gate_verdict(tmp_path / "both", base, results_how=other)
    (op,) = [o for o in v.ops if o.verdict in FAILING_VERDICTS]
    assert timing_from_args(parsed(op.reproduce)) == base
    # a baseline of before the Timing: the results' own
    v = gate_verdict(tmp_path / "results", None, results_how=other)
    (op,) = [o for o in v.ops if o.verdict in FAILING_VERDICTS]
    assert timing_from_args(parsed(op.reproduce)) == other
    # neither: no timing flags (the plugin's defaults), as before the model
    v = gate_verdict(tmp_path / "none", None)
    (op,) = [o for o in v.ops if o.verdict in FAILING_VERDICTS]
    assert "--timing-method" not in op.reproduce and "--warmup-ms" not in v.reproduce_template
    assert timing_from_args(parsed(op.reproduce)) is None
    assert pytest_args(parsed(op.reproduce)) == []


@pytest.mark.parametrize("bad", [["--warmup-ms", "-1"], ["--replays", "0"]])
def test_zlbench_run_refuses_a_budget_out_of_range(bad):
    from zlbench.errors import ZlbenchError

    args = build_parser().parse_args(["run", "--op", "add", *bad])
    with pytest.raises(ZlbenchError):
        pytest_args(args)
