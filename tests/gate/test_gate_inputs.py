"""Inputs are checked, not guessed (issue 27): an op SPEC that names no baseline op and
a ``--results`` dir that is part of a results root are one error line, exit 2, before
anything is judged or measured."""

from __future__ import annotations

import pytest

from tests.support.batch_fakes import make_inventory
from tests.support.zlsynth import (
    brow,
    crow,
    gate,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline
from zlbench.gate.plan import baseline_scope, suggest_op
from zlbench.runner.catalog.inventory import inventory_op_keys

S = "[1024]"
OPS = ["abs", "mm@test_mm.py", "softmax"]


@pytest.fixture
def world(tmp_path):
    bl = write_baseline(
        tmp_path / "bl", {o.replace("@", "__at__"): [brow(o.split("@")[0], S, 1.0)] for o in OPS}
    )
    rdir = write_results(
        tmp_path / "r",
        [run_result(o.replace("@", "__at__"), [crow(o.split("@")[0], S, 1.0)]) for o in OPS],
    )
    make_inventory(tmp_path / "ops", "main", [*OPS, "cummax"])  # cummax: a wider tier's op
    return tmp_path, bl, rdir


def test_a_typo_in_ops_is_one_error_line_with_a_suggestion(world, capsys):
    tmp, bl, rdir = world
    rc, out = gate(tmp, bl, rdir, "--ops", "abs", "mm@test_mn.py", "--ops-dir", str(tmp / "ops"))
    assert rc == 2
    line = one_error_line(capsys)
    assert "'mm@test_mn.py'" in line and "did you mean 'mm@test_mm.py'" in line
    assert line.startswith("zlbench gate: error: --ops:")
    assert not (out / "verdict.json").exists()


def test_ops_names_an_inventory_op_outside_the_baseline_strictly(world, capsys):
    tmp, bl, rdir = world  # --ops is never a tier: every SPEC must be judged
    rc, _ = gate(tmp, bl, rdir, "--ops", "abs", "cummax", "--ops-dir", str(tmp / "ops"))
    assert rc == 2 and "'cummax'" in one_error_line(capsys)


def test_an_ops_file_typo_is_an_error_but_a_wider_tier_is_skipped(world, capsys):
    tmp, bl, rdir = world
    f = tmp / "tier.txt"
    f.write_text("abs\nmm@test_mn.py  # typo\ncummax\n")
    rc, out = gate(tmp, bl, rdir, "--ops-file", str(f), "--ops-dir", str(tmp / "ops"))
    assert rc == 2
    line = one_error_line(capsys)
    assert f"--ops-file {f}:" in line and "'mm@test_mn.py'" in line and "cummax" not in line
    assert not (out / "verdict.json").exists()
    f.write_text("abs\ncummax  # in FlagGems, not in this baseline\n")
    rc, _ = gate(tmp, bl, rdir, "--ops-file", str(f), "--ops-dir", str(tmp / "ops"))
    assert rc == 0
    assert "not in the baseline, skipped: cummax" in capsys.readouterr().err


def test_an_ops_file_without_an_inventory_is_strict(world):
    tmp, bl, _ = world
    baseline = load_baseline(bl)
    assert inventory_op_keys(tmp / "nothing") is None
    with pytest.raises(ZlbenchError, match="'cummax' names no op of baseline"):
        baseline_scope(baseline, ["abs", "cummax"], source="--ops-file f", known=None)
    known = inventory_op_keys(tmp / "ops")
    assert {"main/cummax", "main/cummax__at__test_cummax.py"} <= set(known)
    assert baseline_scope(baseline, ["abs", "cummax"], source="f", known=known) == (
        {"main/abs"},
        ["cummax"],
    )


def test_suggest_op_keeps_the_repo_and_gives_up_on_nothing_close():
    keys = ["main/mm__at__test_mm.py", "main/softmax"]
    assert suggest_op("main:sofmax", keys) == "main:softmax"
    assert suggest_op("zzzz", keys) is None


def test_results_at_one_run_dir_names_the_batch_dir(world, capsys):
    tmp, bl, rdir = world
    rc, out = gate(tmp, bl, rdir / "main" / "abs")
    assert rc == 2
    line = one_error_line(capsys)
    assert "is one op's run dir (main/abs)" in line and f"pass {rdir}," in line
    assert not (out / "verdict.json").exists()
    assert gate(tmp, bl, rdir / "main" / "abs", "--ops", "abs")[0] == 0  # narrowed: fine


def test_results_at_a_gate_dirs_results_names_the_gate_dir(world, capsys):
    tmp, bl, rdir = world
    gdir = tmp / "g"
    (gdir / "confirm").mkdir(parents=True)
    rdir.rename(gdir / "results")
    rc, _ = gate(tmp, bl, gdir / "results")
    assert rc == 2
    line = one_error_line(capsys)
    assert f"is the results/ of gate dir {gdir}: pass the gate dir" in line
    assert gate(tmp, bl, gdir)[0] == 0
    rc = main(["report", str(gdir / "results" / "main" / "abs"), "--baseline", str(bl),
               "--out", str(tmp / "rep")])  # fmt: skip
    assert rc == 2 and f"pass {gdir}," in one_error_line(capsys)
