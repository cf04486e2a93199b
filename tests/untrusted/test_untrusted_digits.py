"""Unicode digits in dir names and the workflow's shard count (issue 26): ``"²"`` is
a digit to ``str.isdigit()`` but not to ``int()``; never a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main

S = "[1024]"
CI = Path(__file__).resolve().parents[2] / "ci"


def test_a_confirm_pass_named_with_a_unicode_digit_is_judged(tmp_path):
    from zlbench.gate.load import pass_order

    assert pass_order("³") == (1 << 30, "³") and pass_order("2") == (2, "")
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    res = write_results(tmp_path / "g" / "results", [run_result("add", [crow("add", S, 1.0)])])
    write_results(tmp_path / "g" / "confirm" / "³", [run_result("add", [crow("add", S, 1.0)])])
    rc = main(
        ["gate", "--baseline", str(bl), "--results", str(res.parent), "--out", str(tmp_path / "o")]
    )
    assert rc == 0


@pytest.mark.parametrize("text", ["²", "٣", "1²"])
def test_a_shard_count_in_unicode_digits_is_one_line(text):
    # the script puts its own dir (ci/: gha.py) on sys.path
    spec = importlib.util.spec_from_file_location("zl_gate_setup", CI / "gate_setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(mod.CiError, match="shard count must be an integer"):
        mod.parse_shards(text)


def test_an_ab_round_dir_named_with_a_unicode_digit_is_not_a_round(tmp_path):
    from zlbench.runner.ab.rounds import round_dirs

    for name in ("1", "²"):
        write_results(tmp_path / "ab" / name / "pr", [run_result("add", [crow("add", S, 1.0)])])
    assert [p.parent.name for p, _ in round_dirs(tmp_path / "ab")] == ["1"]
