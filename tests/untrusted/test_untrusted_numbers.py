"""Numeric flags are validated before any work (issue 16): a value out of range, NaN
or infinite is one error line and exit 2. Walks every ``type=int`` / ``type=float``
option of every command, so a new numeric flag without a rule fails here."""

from __future__ import annotations

import argparse

import pytest

from tests.support.zlsynth import one_error_line
from zlbench.cli import build_parser, main
from zlbench.cli.numbers import RULES, check_numbers
from zlbench.errors import ZlbenchError


def _subparsers(parser: argparse.ArgumentParser, path: list[str]):
    """(argv path, parser) for every leaf command, nested ones included."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _subparsers(sub, [*path, name])


def _required_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Dummy values for what the command requires (positionals, required options,
    required mutually exclusive groups)."""
    argv: list[str] = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if not a.option_strings:
            argv.append("x")
        elif a.required:
            argv += [a.option_strings[0], "x"]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            a = group._group_actions[0]
            argv += [a.option_strings[0]] + ([] if a.nargs == 0 else ["x"])
    return argv


def numeric_options():
    for path, parser in _subparsers(build_parser(), []):
        for a in parser._actions:
            if a.type in (int, float) and a.option_strings:
                yield path, parser, a


def _bad_values(action) -> list[str]:
    rule = RULES[action.dest]
    below = rule.low if rule.open_low else rule.low - 1
    values = [f"{below:g}" if action.type is float else str(int(below))]
    if action.type is float:
        values += ["nan", "inf", "-inf"]
    return values


CASES = [
    pytest.param(path, parser, a, v, id=f"{' '.join(path)} {a.option_strings[0]} {v}")
    for path, parser, a in numeric_options()
    for v in (_bad_values(a) if a.dest in RULES else ["?"])
]


def test_every_numeric_option_has_a_rule():
    missing = [
        f"{' '.join(p)} {a.option_strings[0]}"
        for p, _, a in numeric_options()
        if a.dest not in RULES
    ]
    assert not missing, f"numeric flags without a range in zlbench.cli.numbers.RULES: {missing}"
    assert len(CASES) >= 20  # the walk found the options (batch, refresh, gate, run, codegen)


@pytest.mark.parametrize(("path", "parser", "action", "value"), CASES)
def test_a_numeric_flag_out_of_range_is_one_line_exit_2(capsys, path, parser, action, value):
    assert action.dest in RULES
    flag = action.option_strings[0]
    rc = main([*path, *_required_argv(parser), f"{flag}={value}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert flag in err[0]


@pytest.mark.parametrize("dest", sorted(RULES))
def test_the_lowest_allowed_value_passes(dest):
    rule = RULES[dest]
    value = rule.low + 1 if rule.open_low else rule.low
    check_numbers(argparse.Namespace(**{dest: value}))  # raises nothing


def test_op_timeout_zero_stays_no_limit():
    check_numbers(argparse.Namespace(op_timeout=0.0))


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1/0", "-1/2", "a/b", "1"])
def test_bad_shard_specs_are_one_line_before_any_work(capsys, spec):
    assert main(["batch", "--all", f"--shard={spec}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shard" in err[0], err


def test_an_empty_gpu_list_is_one_line(capsys):
    assert main(["batch", "--all", "--gpus", ","]) == 2
    assert "GPU list" in capsys.readouterr().err


def test_confirm_has_an_upper_bound_too(capsys):
    """Each confirmation pass re-measures every flagged op: --confirm 1000000 would
    hold the runner until its job timeout."""
    from zlbench.gate.thresholds import MAX_CONFIRM_REPEATS

    check_numbers(argparse.Namespace(confirm=MAX_CONFIRM_REPEATS))  # raises nothing
    assert main(["gate", "--baseline", "baselines/v1", "--confirm", "1000000"]) == 2
    assert f"must be at most {MAX_CONFIRM_REPEATS}" in one_error_line(capsys)


def test_ab_rounds_has_an_upper_bound_as_confirm_does(capsys):
    """Ignored by the interleaved A/B but still validated (issue 26: 17): each round
    would measure every suspect op with both compilers."""
    from zlbench.workflow.ab import MAX_ROUNDS

    check_numbers(argparse.Namespace(ab_rounds=MAX_ROUNDS))  # raises nothing
    with pytest.raises(ZlbenchError, match=f"--ab-rounds {MAX_ROUNDS + 1}: must be at most"):
        check_numbers(argparse.Namespace(ab_rounds=MAX_ROUNDS + 1))
    assert main(["gate", "--baseline", "baselines/v1", "--ab-rounds", "1000000"]) == 2
    assert f"must be at most {MAX_ROUNDS}" in one_error_line(capsys)
