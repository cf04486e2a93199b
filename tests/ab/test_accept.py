"""The accept list: bad entries are one line (exit 2 through the CLI); accepted
regressions pass within their allowance, never silently; entries matching nothing
are reported."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.errors import ZlbenchError
from zlbench.gate import verdict as judging
from zlbench.gate.accept import apply_accept, load_accept, match_entry
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import AcceptEntry, Verdict
from zlbench.workflow.ab import AbContext, AbOptions, judge_accept

S, T = "[4096]", "[8]"


def write(tmp_path, text):
    p = tmp_path / "accept.yaml"
    p.write_text(text)
    return p


GOOD = """
schema_version: 1
accept:
  - op: x
    shape: "[4096]"
    change: 0.12
    reason: "FlagTree#1: exact rounding"
"""


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("accept:\n  - {op: x, change: 0.1, reason: ''}", "accept.0.reason"),
        ("accept:\n  - {op: x, change: 0.1, reason: '   '}", "accept.0.reason"),
        ("accept:\n  - {op: x, change: 0.1}", "accept.0.reason"),
        ("accept:\n  - {change: 0.1, reason: r}", "accept.0.op"),
        ("accept:\n  - {op: x, change: 0, reason: r}", "accept.0.change"),
        ("accept:\n  - {op: x, change: -0.1, reason: r}", "accept.0.change"),
        ("accept:\n  - {op: x, change: .nan, reason: r}", "accept.0.change"),
        ("accept:\n  - {op: x, change: 3, reason: r}", "accept.0.change"),
        ("accept:\n  - {op: x, change: 0.1, reason: r, resaon: typo}", "accept.0.resaon"),
        ("accept:\n  - {op: x, change: 0.1, reason: r}\nschema_version: 7", "schema_version"),
        ("accept: [", "accept.yaml"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it(tmp_path, text, field):
    with pytest.raises(ZlbenchError) as e:
        load_accept(write(tmp_path, text))
    msg = str(e.value)
    assert "\n" not in msg and field in msg and str(tmp_path / "accept.yaml") in msg


def test_the_most_specific_entry_wins(tmp_path):
    entries = [
        AcceptEntry(op="x", change=0.05, reason="any x"),
        AcceptEntry(op="x", dtype="bfloat16", shape=S, change=0.2, reason="this row"),
        AcceptEntry(op="y", change=0.05, reason="y"),
    ]
    key = crow("x", S, 1.0).key("main", "x")
    assert match_entry(entries, key).reason == "this row"
    assert match_entry(entries, crow("x", T, 1.0).key("main", "x")).reason == "any x"
    assert match_entry(entries, crow("z", T, 1.0).key("main", "z")) is None


@pytest.fixture
def verdict(tmp_path):
    """x at S 10 % slower than the stored baseline, x at T and y unchanged."""
    base = {"x": [brow("x", S, 1.0), brow("x", T, 1.0)], "y": [brow("y", S, 1.0)]}
    b = load_baseline(write_baseline(tmp_path / "bl", base))
    cur = [
        run_result("x", [crow("x", S, 1 / 1.1, lat=1.1, torch_lat=1.0), crow("x", T, 1.0)]),
        run_result("y", [crow("y", S, 1.0)]),
    ]
    r = load_results(write_results(tmp_path / "res", cur))
    th = load_thresholds(None, b.manifest.thresholds)
    return judging.run_gate(b, r, th, judging.GateOptions())


def test_a_regression_within_its_allowance_passes_and_says_why(tmp_path, verdict):
    ctx = AbContext(AbOptions(), accept=load_accept(write(tmp_path, GOOD)).accept)
    out = judge_accept(verdict, ctx, "accept.yaml")
    r = next(r for r in out.rows if r.key.shape == S and r.key.run_name == "x")
    assert r.verdict is Verdict.PASS and r.accepted.applied
    assert "accepted up to +12.0 %: FlagTree#1: exact rounding" in r.reason
    assert out.exit_code == 0 and out.accept_source == "accept.yaml" and len(out.accept) == 1


def test_a_regression_beyond_its_allowance_still_fails(tmp_path, verdict):
    ctx = AbContext(AbOptions(), accept=[AcceptEntry(op="x", change=0.05, reason="small")])
    out = judge_accept(verdict, ctx, "a.yaml")
    r = next(r for r in out.rows if r.key.shape == S and r.key.run_name == "x")
    assert r.verdict is Verdict.REGRESSION and r.accepted.exceeded and not r.accepted.applied
    assert "beyond the allowance" in r.reason and out.exit_code == 1


def test_matched_rows_that_did_not_regress_still_carry_the_entry(verdict):
    rows, unmatched = apply_accept(
        verdict.rows,
        [
            AcceptEntry(op="y", change=0.1, reason="y"),
            AcceptEntry(op="nope", change=0.1, reason="n"),
        ],
    )
    y = next(r for r in rows if r.key.run_name == "y")
    assert y.verdict is Verdict.PASS and y.accepted is not None and not y.accepted.applied
    assert [e.op for e in unmatched] == ["nope"]


def test_no_accept_list_changes_nothing(verdict):
    assert judge_accept(verdict, AbContext(AbOptions()), "") is verdict
