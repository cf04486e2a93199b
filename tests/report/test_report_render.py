"""Golden report.md / junit.xml, JUnit schema validation, truncation, compare."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from scenario import build
from zlsynth import crow

from zlbench.models import (
    FAILING_VERDICTS,
    GateVerdict,
    OpVerdict,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.report.compare import render_compare
from zlbench.report.junit import render_junit
from zlbench.report.markdown import GITHUB_COMMENT_LIMIT, MARKER, render_markdown

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "gate"
XSD = Path(__file__).resolve().parent.parent / "data" / "junit" / "junit.xsd"


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture
def verdict(tmp_path) -> GateVerdict:
    return build(tmp_path)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ZLBENCH_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with ZLBENCH_UPDATE_GOLDEN=1 and review the diff"
    assert text == path.read_text(encoding="utf-8")


def test_scenario_covers_every_verdict(verdict):
    assert set(verdict.counts) == {v.value for v in Verdict}
    assert verdict.verdict == "FAIL" and verdict.exit_code == 1


def test_golden_markdown(verdict):
    check_golden("report.md", render_markdown(verdict))


def test_golden_junit(verdict):
    check_golden("junit.xml", render_junit(verdict))


def test_markdown_order_and_content(verdict):
    md = render_markdown(verdict)
    assert md.startswith(MARKER + "\n## ❌ zlbench gate: FAIL")
    order = [
        "### Regressions",
        "### Fallbacks",
        "### Failed ops",
        "### Missing rows",
        "### Improvements",
        "### Environment",
        "### Reproduce",
    ]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    assert "line 29\nRuntimeError: CUDA error" in md and "line 5\n" not in md  # last lines only
    assert "reason=key_missing kernel=mm_kernel" in md
    assert "`flagtree` 3.6.0, FlagTree commit `1234567890abcdef`" in md
    assert (
        'zlbench run --op add --repo main --flaggems-dir "$ZLBENCH_FLAGGEMS_DIR" '
        "--dtypes bfloat16 --mode cudagraph --replay-from baselines/vtest/main/add "
        "--out repro/add"
    ) in md


def test_junit_validates_and_never_passes_a_failing_row(verdict, schema):
    xml = render_junit(verdict)
    schema.validate(xml)
    root = ET.fromstring(xml)
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    for r in verdict.rows:
        occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
        c = cases[(f"{r.key.repo}.{r.key.op}", f"{r.key.dtype} {r.key.shape}{occ}")]
        kinds = {child.tag for child in c} - {"system-out"}
        if r.verdict in FAILING_VERDICTS:
            assert kinds in ({"failure"}, {"error"}), r
        elif r.verdict is Verdict.SKIPPED:
            assert kinds == {"skipped"}
        else:
            assert kinds == set(), r
    fail = next(c for c in root.iter("failure") if c.get("type") == "REGRESSION")
    msg = fail.get("message")
    assert "baseline speedup 1.000" in msg and "current speedup 0.880" in msg
    assert "ratio 0.8800" in msg and "threshold 5.0%" in msg
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["baseline.gpu_model"] == "NVIDIA H200"
    assert props["current.compiler_dist"] == "flagtree"


def _failing_count(xml: str) -> int:
    root = ET.fromstring(xml)
    return sum(1 for c in root.iter("testcase") for e in c if e.tag in ("failure", "error"))


def test_op_level_failure_gets_a_testcase(verdict, schema):
    # an op whose failure no row carries (geomean, unnamed marker, crash with no rows)
    v = verdict.model_copy(deep=True)
    v.rows = [r for r in v.rows if r.key.run_name != "index_put"]
    xml = render_junit(v)
    schema.validate(xml)
    assert 'classname="main.index_put"' in xml and 'type="FAILED"' in xml
    assert "signal 11" in xml


def test_error_verdict_is_an_error_testcase(tmp_path, schema):
    v = build(tmp_path, gpu="NVIDIA A100")
    assert v.verdict == "ERROR" and v.exit_code == 2
    xml = render_junit(v)
    schema.validate(xml)
    assert 'classname="zlbench.gate"' in xml
    md = render_markdown(v)
    assert "Not judged: the environment differs" in md and "NVIDIA A100" in md


def test_allowed_mismatch_shown_in_every_report(tmp_path):
    v = build(tmp_path, gpu="NVIDIA A100", allow_env_mismatch=True)
    assert v.verdict == "FAIL"
    assert "Judged despite an environment mismatch" in render_markdown(v)
    assert 'name="mismatch.gpu_model" value="allowed"' in render_junit(v)


def test_passing_gate_has_no_failure(tmp_path, schema):
    v = build(tmp_path)
    v.rows = [r for r in v.rows if r.verdict not in FAILING_VERDICTS]
    v.ops = [o for o in v.ops if o.verdict not in FAILING_VERDICTS]
    xml = render_junit(v)
    schema.validate(xml)
    assert _failing_count(xml) == 0


# --------------------------------------------------------------------------- truncation


def huge(verdict: GateVerdict, n: int) -> GateVerdict:
    v = verdict.model_copy(deep=True)
    for i in range(n):
        key = RowKey(
            repo="main", run_name="add", op="add", dtype="bfloat16", shape=f"[{i}, {'9' * 40}]"
        )
        v.rows.append(
            RowVerdict(
                key=key,
                verdict=Verdict.REGRESSION,
                baseline_speedup=1.0,
                current_speedup=0.5,
                ratio=0.5 + i / (4 * n),
                threshold=0.05,
            )
        )
        v.rows.append(
            RowVerdict(
                key=key.model_copy(update={"op": "mul"}),
                verdict=Verdict.IMPROVEMENT,
                ratio=1.5,
                threshold=0.05,
            )
        )
    v.counts["REGRESSION"] += n
    return v


def _tables(md: str) -> list[list[str]]:
    out, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line)) - 2


def test_huge_report_fits_a_pr_comment_with_whole_tables(verdict):
    v = huge(verdict, 20_000)
    md = render_markdown(v)
    assert len(md) <= GITHUB_COMMENT_LIMIT
    assert md.startswith(MARKER)
    assert "shortened to fit a GitHub comment" in md
    assert re.search(r"_… \d+ more regressed rows not shown", md)
    for t in _tables(md):
        assert re.fullmatch(r"\|( ---:? \|)+", t[1]), t[:2]  # header + separator
        assert len({_cells(line) for line in t}) == 1, t  # every row whole
    # worst first survives the cut
    assert "| -50.0% |" in md


def test_small_report_is_not_truncated(verdict):
    md = render_markdown(verdict)
    assert "shortened" not in md and "more regressed rows" not in md


@pytest.mark.parametrize("limit", [4_000, 8_000, 20_000])
def test_any_limit_is_respected(verdict, limit):
    assert len(render_markdown(huge(verdict, 500), limit=limit)) <= limit


def test_truncated_aggregate_regressions_show_the_full_count_and_a_note(verdict):
    v = verdict.model_copy(deep=True)
    n = 300
    v.ops += [
        OpVerdict(
            repo="main",
            run_name=f"agg{i:03d}_{'x' * 40}",
            op=f"agg{i:03d}",
            verdict=Verdict.REGRESSION,
            geomean_ratio=0.9,
            threshold=0.05,
            rows=2,
            reason="geomean ratio 0.900 < 0.950",
        )
        for i in range(n)
    ]
    full = render_markdown(v)
    assert f"### Op aggregate regressions ({n})" in full
    assert "more op aggregate regressions" not in full
    md = render_markdown(v, limit=8_000)
    assert len(md) <= 8_000
    head = next(t for t in _tables(md) if t[0].startswith("| op | geomean ratio |"))
    shown = len(head) - 2
    assert 0 <= shown < n
    assert f"### Op aggregate regressions ({n})" in md
    assert f"_… {n - shown} more op aggregate regressions not shown" in md


# --------------------------------------------------------------------------- compare


def test_compare_with_an_inf_speedup_shows_no_ratio_instead_of_crashing():
    def key(shape):
        return RowKey(repo="main", run_name="add", op="add", dtype="bfloat16", shape=shape)

    a = {key("[8]"): crow("add", "[8]", float("inf")), key("[16]"): crow("add", "[16]", 1.0)}
    b = {key("[8]"): crow("add", "[8]", 2.0), key("[16]"): crow("add", "[16]", 1.1)}
    out = render_compare(a, b)
    assert "| main/add | bfloat16 | [8] | inf | 2.000 | n/a |" in out
    assert "| main/add | bfloat16 | [16] | 1.000 | 1.100 | 1.1000 |" in out
    assert "matched rows: 2 · geomean B/A: 1.1000 (+10.00%)" in out
