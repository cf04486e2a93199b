"""Judging an interleaved A/B (``ab/pairs.json``) through ``zlbench gate --results``, as
CI's judge does: the four verdicts of the pair rule, reasons that state the numbers
they were decided on, the inconclusive rows first in the report."""

from __future__ import annotations

import itertools

from tests.support.interleaved import S, batch, gate_dir, pairs_of
from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.models import (
    GateVerdict,
    Verdict,
    load_json_model,
)


def judge(tmp_path, bl, gate) -> tuple[int, GateVerdict, str]:
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out)])
    return rc, load_json_model(out / "verdict.json", GateVerdict), (out / "report.md").read_text()


def row(v: GateVerdict, op: str):
    return next(r for r in v.rows if r.key.op == op)


def test_a_row_10_percent_slower_than_the_base_is_a_regression_naming_its_interval(tmp_path):
    bl, gate = gate_dir(tmp_path, {"big": pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)})
    rc, v, md = judge(tmp_path, bl, gate)
    assert rc == 1 and v.verdict == "FAIL"
    r = row(v, "big")
    assert r.verdict is Verdict.REGRESSION and r.ab.decision == "REGRESSION"
    assert r.ab.change_lo > 0.09 and r.ab.change_hi < 0.11 and r.ab.rounds == 5
    assert r.reason.startswith("slower than the base: +10.0 % [+9.5, +10.5] (+10.00 µs")
    assert "5 pairs" in r.reason
    assert "Judged on this runner: an interleaved A/B" in md.split("\n## ", 2)[1]


def test_a_1_4us_kernel_20_percent_slower_is_caught_by_the_default_floor(tmp_path):
    bl, gate = gate_dir(tmp_path, {"mv": pairs_of([1.68, 1.69, 1.67, 1.68, 1.70], 1.4)})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert rc == 1 and row(v, "mv").verdict is Verdict.REGRESSION  # +0.27 µs at least > 0.2 µs


def test_slower_than_the_stored_baseline_but_not_the_base_is_inherited(tmp_path):
    same = pairs_of([100.1, 99.9, 100.0, 100.2, 99.8], 100.0)
    bl, gate = gate_dir(tmp_path, {"stale": same}, screen=1.2)
    rc, v, _ = judge(tmp_path, bl, gate)
    r = row(v, "stale")
    assert rc == 0 and r.verdict is Verdict.PASS and r.ab.inherited
    assert r.reason.startswith("inherited from the base (baseline vtest is stale here): +0.0 %")
    assert r.reason.endswith("+20.0 % vs vtest")  # both numbers, each named


def test_a_small_kernel_beyond_the_threshold_but_within_the_floor_passes_and_says_so(tmp_path):
    tiny = pairs_of([1.035, 1.04, 1.03, 1.036, 1.034], 1.0)  # +3.5 %, +0.035 µs
    bl, gate = gate_dir(tmp_path, {"tiny": tiny})
    rc, v, _ = judge(tmp_path, bl, gate)
    r = row(v, "tiny")
    assert rc == 0 and r.verdict is Verdict.PASS and r.ab.within_floor
    assert r.reason.startswith("within the 0.2 µs floor: +3.5 %")
    assert "µs [+0.03, +0.04]) vs the base, 5 pairs" in r.reason  # what the floor passed


def test_a_row_still_straddling_after_its_budget_is_inconclusive_first_in_the_report(tmp_path):
    noisy = pairs_of(
        list(itertools.islice(itertools.cycle([100.0, 106.0, 101.0, 105.0]), 16)), 100.0
    )
    big = pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)
    bl, gate = gate_dir(tmp_path, {"noisy": noisy, "big": big})
    rc, v, md = judge(tmp_path, bl, gate)
    r = row(v, "noisy")
    assert r.verdict is Verdict.INCONCLUSIVE and r.ab.rounds == 16
    assert r.reason.startswith(
        "inconclusive: +3.0 % [+1.0, +5.0] (+3.00 µs [+1.00, +5.00]) vs the base, 16 pairs"
    )
    assert "; the change interval straddles +3 % (this runner" in r.reason  # the µs one: beyond
    assert rc == 1  # by the regression of `big`, not by the inconclusive row
    op = next(o for o in v.ops if o.run_name == "noisy")
    assert op.verdict is Verdict.INCONCLUSIVE
    assert md.index("## Inconclusive rows") < md.index("## Regress")


def test_an_inconclusive_row_alone_does_not_fail_the_gate(tmp_path):
    noisy = pairs_of(
        list(itertools.islice(itertools.cycle([100.0, 106.0, 101.0, 105.0]), 16)), 100.0
    )
    bl, gate = gate_dir(tmp_path, {"noisy": noisy})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert rc == 0 and v.verdict == "PASS" and v.counts == {"INCONCLUSIVE": 1}


def test_faster_than_the_base_beyond_both_is_an_improvement(tmp_path):
    bl, gate = gate_dir(tmp_path, {"fast": pairs_of([80.0, 80.5, 79.5, 80.2, 79.8], 100.0)})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert rc == 0 and row(v, "fast").verdict is Verdict.IMPROVEMENT


def test_without_a_base_compiler_the_report_says_the_stored_baseline_decided(tmp_path):
    bl = write_baseline(tmp_path / "bl", {"x": [brow("x", S, 1.0, lat=0.1)]})
    res = batch(tmp_path / "res", {"x": 100.0})
    out = tmp_path / "out"
    assert main(["gate", "--baseline", str(bl), "--results", str(res), "--out", str(out)]) == 0
    head = (out / "report.md").read_text().split("\n## ", 2)[1]
    assert "Judged against the stored baseline `vtest` alone (no base compiler" in head
