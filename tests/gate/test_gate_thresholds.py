"""Thresholds: overrides (most specific wins), noise floor, improvement, aggregate, validation."""

from __future__ import annotations

import pytest

from zlbench.errors import ZlbenchError
from zlbench.gate.thresholds import (
    aggregate_threshold,
    configured_threshold,
    improvement_threshold,
    load_thresholds,
    row_threshold,
)
from zlbench.models import RowKey, RowOverride, ThresholdDefaults, ThresholdsFile


def key(op="mm", dtype="bfloat16", shape="[64, 64]", run_name=None):
    return RowKey(repo="main", run_name=run_name or op, op=op, dtype=dtype, shape=shape)


TH = ThresholdsFile(
    default=0.05,
    ops={"mm": 0.08},
    rows=[
        RowOverride(op="mm", threshold=0.10),
        RowOverride(op="mm", dtype="float16", threshold=0.12),
        RowOverride(op="mm", shape="[64, 64]", threshold=0.15),
        RowOverride(op="mm", dtype="float16", shape="[64, 64]", threshold=0.20),
    ],
)


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (key(op="add"), 0.05),  # default
        (key(op="softmax", run_name="softmax"), 0.05),
        (key(shape="[1]"), 0.10),  # op-only row override beats the ops map
        (key(dtype="float16", shape="[1]"), 0.12),  # op + dtype
        (key(), 0.15),  # op + shape
        (key(dtype="float16"), 0.20),  # op + dtype + shape
    ],
)
def test_most_specific_override_wins(k, expected):
    assert configured_threshold(TH, k) == expected


def test_ops_map_matches_op_or_run_name():
    th = ThresholdsFile(ops={"mm__at__test_blas.py": 0.3})
    assert configured_threshold(th, key(op="mm", run_name="mm__at__test_blas.py")) == 0.3
    assert configured_threshold(ThresholdsFile(ops={"mm": 0.3}), key()) == 0.3


def test_later_override_wins_a_tie():
    th = ThresholdsFile(
        rows=[RowOverride(op="mm", threshold=0.1), RowOverride(op="mm", threshold=0.2)]
    )
    assert configured_threshold(th, key()) == 0.2


def test_noise_floor_raises_the_threshold_never_lowers_it():
    th = ThresholdsFile(default=0.05, noise_multiplier=2.0)
    assert row_threshold(th, key(op="add"), noise=0.01) == 0.05
    assert row_threshold(th, key(op="add"), noise=0.04) == pytest.approx(0.08)


def test_improvement_threshold_defaults_to_the_regression_one():
    th = ThresholdsFile(default=0.05)
    assert improvement_threshold(th, key(op="add"), 0.0) == 0.05
    th.improvement = 0.2
    assert improvement_threshold(th, key(op="add"), 0.0) == 0.2
    assert improvement_threshold(th, key(op="add"), 0.15) == pytest.approx(0.3)


def test_aggregate_threshold():
    assert aggregate_threshold(TH, "mm", "mm") == 0.08
    assert aggregate_threshold(TH, "add", "add") == 0.05
    assert aggregate_threshold(ThresholdsFile(op_aggregate=0.02), "mm", "mm") == 0.02


def test_file_overrides_only_the_fields_it_sets(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("default: 0.07\nops: {mm: 0.1}\n")
    th = load_thresholds(f, ThresholdDefaults(noise_multiplier=3.0, confirm_repeats=4))
    assert (th.default, th.ops, th.noise_multiplier, th.confirm_repeats) == (
        0.07,
        {"mm": 0.1},
        3.0,
        4,
    )


def test_no_file_uses_the_manifest_defaults():
    th = load_thresholds(None, ThresholdDefaults(default=0.06))
    assert th.default == 0.06 and th.rows == []


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("default: 1.5\n", "default"),
        ("default: fast\n", "default"),
        ("ops: {mm: -0.1}\n", "ops.mm"),
        ("rows: [{op: mm, threshold: 2}]\n", "rows.0.threshold"),
        ("rows: [{dtype: bfloat16, threshold: 0.1}]\n", "rows.0.op"),
        ("bogus: 1\n", "bogus"),
        ("schema_version: 99\n", "schema_version"),
        ("default: [\n", "line"),
    ],
)
def test_bad_thresholds_file_names_file_and_field(tmp_path, text, field):
    f = tmp_path / "thr.yaml"
    f.write_text(text)
    with pytest.raises(ZlbenchError) as e:
        load_thresholds(f, ThresholdDefaults())
    msg = str(e.value)
    assert "thr.yaml" in msg and field in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("text", "field"),
    [
        # each of these let every regression pass (issue 16)
        ("noise_multiplier: .inf\n", "noise_multiplier"),
        ("noise_multiplier: .nan\n", "noise_multiplier"),
        ("noise_multiplier: 1000\n", "noise_multiplier"),
        ("noise_multiplier: -1\n", "noise_multiplier"),
        ("default: .nan\n", "default"),
        ("default: .inf\n", "default"),
        ("default: -0.05\n", "default"),
        ("improvement: .nan\n", "improvement"),
        ("op_aggregate: -.inf\n", "op_aggregate"),
        ("ops: {mm: .nan}\n", "ops.mm"),
        ("rows: [{op: mm, threshold: .nan}]\n", "rows.0.threshold"),
        ("confirm_repeats: -1\n", "confirm_repeats"),
        ("confirm_repeats: 1000000\n", "confirm_repeats"),  # a gate that never ends
        ('schema_version: "1"\n', "schema_version"),
    ],
)
def test_thresholds_must_be_finite_and_in_range(tmp_path, text, field):
    f = tmp_path / "thr.yaml"
    f.write_text(text)
    with pytest.raises(ZlbenchError) as e:
        load_thresholds(f, ThresholdDefaults())
    msg = str(e.value)
    assert "thr.yaml" in msg and f"'{field}'" in msg and "\n" not in msg


def test_manifest_thresholds_out_of_range_are_refused_too():
    with pytest.raises(ZlbenchError, match="baseline manifest 'thresholds'.*noise_multiplier"):
        load_thresholds(None, ThresholdDefaults(noise_multiplier=float("inf")))


@pytest.mark.parametrize("value", [0.0, 2.0, 10.0])
def test_noise_multiplier_in_range_is_kept(tmp_path, value):
    f = tmp_path / "thr.yaml"
    f.write_text(f"noise_multiplier: {value}\n")
    assert load_thresholds(f, ThresholdDefaults()).noise_multiplier == value


@pytest.mark.parametrize("flag", ["--thresholds", None])
def test_gate_with_an_infinite_noise_multiplier_exits_2(tmp_path, capsys, flag):
    from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
    from zlbench.cli import main

    s = "[1024]"
    kw = {} if flag else {"thresholds": ThresholdDefaults(noise_multiplier=float("inf"))}
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", s, 1.0, noise=0.01)]}, **kw)
    r = write_results(tmp_path / "r", [run_result("add", [crow("add", s, 0.5)])])
    (tmp_path / "thr.yaml").write_text("noise_multiplier: .inf\n")
    extra = [flag, str(tmp_path / "thr.yaml")] if flag else []
    rc = main(
        ["gate", "--baseline", str(bl), "--results", str(r), "--out", str(tmp_path / "o")] + extra
    )
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "noise_multiplier" in err[0]
    assert not (tmp_path / "o" / "verdict.json").exists()
