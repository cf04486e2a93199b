"""Tiers in ops/tiers/: built from the inventory, every op resolves, each tier covers
what it promises, and the PR tier fits its GPU budget by the recorded durations."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from zlbench.runner.batch.costs import PROCESS_START_S, estimate_costs, load_durations, op_families
from zlbench.runner.catalog.dismiss import load_dismiss
from zlbench.runner.catalog.inventory import InventoryRow, inventory_path, load_inventory
from zlbench.runner.catalog.select import read_ops_file, select_ops
from zlbench.runner.catalog.tiers import (
    MOE_DSV4_BODY,
    PR_BUDGET_S,
    TIERS,
    TIERS_DIR,
    families,
    nightly_specs,
    op_family,
    pr_body,
    render_tier,
)

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"


def _inventory() -> list[InventoryRow]:
    return load_inventory(inventory_path(OPS, "main"))


def _core() -> list[str]:
    return read_ops_file(OPS / "gate_core.txt")


def _dismissed() -> set[str]:
    """The main-repo SPECs of the dismiss list (``op`` or ``main:op`` entries)."""
    return {e.op for e in load_dismiss(OPS / "dismiss.txt") if e.repo in (None, "main")}


def _rendered() -> dict[str, str]:
    pr = pr_body(_core())
    nightly = nightly_specs(_inventory(), [s for s, _ in pr], _dismissed())
    return {
        "pr": render_tier(TIERS["pr"], pr),
        "nightly": render_tier(TIERS["nightly"], nightly),
        "moe-dsv4": render_tier(TIERS["moe-dsv4"], list(MOE_DSV4_BODY)),
    }


@pytest.mark.parametrize("name", ["pr", "nightly", "moe-dsv4"])
def test_shipped_tier_file_is_what_the_inventory_gives(name):
    path = OPS / TIERS_DIR / TIERS[name].file
    text = _rendered()[name]
    if os.environ.get("ZLBENCH_UPDATE_TIERS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, "rerun with ZLBENCH_UPDATE_TIERS=1 and review the diff"


@pytest.mark.parametrize("name", ["pr", "nightly", "moe-dsv4"])
def test_every_op_of_a_tier_resolves_in_the_inventory(name):
    sel = select_ops(OPS, ops_file=OPS / TIERS_DIR / TIERS[name].file)
    specs = read_ops_file(OPS / TIERS_DIR / TIERS[name].file)
    assert len(sel.ops) + len(sel.dismissed) + len(sel.skipped) == len(specs) == len(set(specs))


def test_tiers_nest_core_in_pr_in_nightly():
    pr = read_ops_file(OPS / TIERS_DIR / "pr.txt")
    nightly = read_ops_file(OPS / TIERS_DIR / "nightly.txt")
    assert set(_core()) <= set(pr) <= set(nightly)
    assert len(pr) > len(set(_core()))


def test_nightly_covers_every_op_family_of_the_inventory():
    nightly = set(read_ops_file(OPS / TIERS_DIR / "nightly.txt"))
    uncovered = [fam for fam, specs in families(_inventory()).items() if not nightly & set(specs)]
    assert uncovered == []


def test_nightly_holds_the_moe_benchmarks_with_their_deepseek_shapes():
    nightly = set(read_ops_file(OPS / TIERS_DIR / "nightly.txt"))
    assert "fused_marlin_moe@test_fused_marlin_moe_w4a16_mxfp4.py" in nightly
    moe = {f for f in families(_inventory()) if "moe" in f.lower()}
    assert len(moe) >= 10
    assert all(nightly & set(families(_inventory())[f]) for f in moe)


def test_moe_dsv4_tier_runs_its_op_at_the_shape_sets_shapes():
    # the shape file's one key is the op's Benchmark op_name, and it is the tier's file
    tier = TIERS["moe-dsv4"]
    shapes = yaml.safe_load((OPS / tier.shape_file).read_text())
    assert list(shapes) == ["fused_marlin_moe_w4a16_mxfp4"]
    assert [s[0] for s in shapes["fused_marlin_moe_w4a16_mxfp4"]["shapes"]] == [
        2**i for i in range(16)
    ]
    assert read_ops_file(OPS / TIERS_DIR / tier.file) == [s for s, _ in MOE_DSV4_BODY]
    text = (OPS / TIERS_DIR / tier.file).read_text()
    assert f"--shape-file ops/{tier.shape_file}" in text


def test_pr_tier_fits_its_budget_by_the_durations_measured_on_the_h200():
    """Every op of the tier has a replay time measured on the H200 at bfloat16 (the
    PR tier replayed as one screen, 2026-11-30, --precompile-jobs 15: 174 s of op
    time, kernels compiled before it); their sum plus one process start fits the
    budget. The screen's measured wall, precompile and process start included, was
    248.3 s (docs/screening.md). With the model this replaced (35 gate_core durations,
    family medians for the rest) the tier at two dtypes "fit" in 216 s;
    flash_attention_forward alone replays in 35.1 s."""
    sel = select_ops(OPS, ops_file=OPS / TIERS_DIR / "pr.txt")
    measured = load_durations(OPS / "durations_h200_pr_bf16.csv", per_dtype=False)
    costs = estimate_costs(sel.keys(), measured, op_families(OPS, ["main"]))
    assert TIERS["pr"].dtypes == ("bfloat16",) and costs.estimated() == []
    expected = sum(costs.seconds.values()) + PROCESS_START_S
    assert expected <= PR_BUDGET_S
    assert expected * 2 > PR_BUDGET_S  # why float16 is the nightly tier's


def _row(op: str, cls: str, file: str = "") -> InventoryRow:
    file = file or f"test_{op}.py"
    return InventoryRow("main", op, op, cls, f"benchmark/{file}", f"test_{op}", f"x::{op}", "", "")


def test_op_family_is_the_class_except_catch_alls_which_fold_variants():
    assert op_family(_row("exp", "UnaryPointwiseBenchmark")) == "UnaryPointwiseBenchmark"
    assert op_family(_row("abs_", "GenericBenchmark")) == "op:abs"
    assert op_family(_row("abs_out", "GenericBenchmark2DOnly")) == "op:abs"
    assert op_family(_row("odd", "")) == "op:odd"
    assert op_family(_row("odd", "Benchmark")) == "op:odd"


def test_nightly_picks_one_plain_op_per_family_and_keeps_included_ones():
    rows = [
        _row("exp", "Unary"),
        _row("exp_", "Unary"),
        _row("sin", "Unary"),
        _row("mm", "Blas", "test_mm.py"),
        _row("mm", "Blas", "test_blas.py"),
        _row("zz", "Odd"),
    ]
    got = nightly_specs(rows, include=["sin"], avoid={"zz"})
    assert got == [("mm@test_mm.py", "Blas"), ("zz", "Odd"), ("sin", "Unary")]


def test_render_tier_writes_the_run_command_and_one_spec_a_line():
    text = render_tier(TIERS["pr"], [("abs", "gate core"), ("sort", "sort")])
    assert "# Run: zlbench batch --ops-file ops/tiers/pr.txt --dtypes bfloat16\n" in text
    assert text.endswith("abs   # gate core\nsort  # sort\n")
