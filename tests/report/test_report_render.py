"""Golden reports (PASS, FAIL, large FAIL, ERROR, every verdict kind) and what the
markdown report promises: numbers that agree, a PASS that informs, a FAIL whose
first screen is enough. Refresh goldens with ZLBENCH_UPDATE_GOLDEN=1 and review
the diff by eye."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cases import error, every_verdict, large_fail, real_aa, real_fail, real_slower
from realdata import BASELINE, FAIL_SLOWDOWNS, RESULTS, inject, real_verdict

from tests.support.mdcheck import fences, live_text
from zlbench.gate.load import load_baseline, load_results
from zlbench.models import GateVerdict, ThresholdsFile, Verdict
from zlbench.report.compare import compare, render_compare
from zlbench.report.facts import ReportExtras
from zlbench.report.html import render_html
from zlbench.report.info import CHART_OPS
from zlbench.report.junit import render_junit
from zlbench.report.markdown import MARKER, render_comment, render_markdown

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ZLBENCH_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with ZLBENCH_UPDATE_GOLDEN=1 and review the diff"
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, GateVerdict]:
    tmp = tmp_path_factory.mktemp("cases")
    every = every_verdict(tmp / "every")
    return {
        "pass": real_slower(tmp),
        "fail": real_fail(tmp),
        "every-verdict": every,
        "large-fail": large_fail(every, 150),
        "error": error(tmp / "error"),
    }


@pytest.mark.parametrize("case", ["pass", "fail", "every-verdict", "large-fail", "error"])
def test_golden_report_and_junit(verdicts, case):
    v = verdicts[case]
    check_golden(f"{case}/report.md", render_markdown(v))
    check_golden(f"{case}/junit.xml", render_junit(v))


def test_golden_comment_of_a_large_failure(verdicts):
    check_golden("large-fail/comment.md", render_comment(verdicts["large-fail"], limit=20_000))


def test_every_kind_and_exit_code(verdicts):
    ab_only = {Verdict.INCONCLUSIVE.value}  # the interleaved A/B's (tests/ab)
    assert set(verdicts["every-verdict"].counts) == {v.value for v in Verdict} - ab_only
    assert [verdicts[k].verdict for k in ("pass", "fail", "error")] == ["PASS", "FAIL", "ERROR"]


# --------------------------------------------------------------------------- numbers agree


def test_numbers_agree_in_report_junit_verdict_json_and_compare(verdicts, tmp_path):
    v = verdicts["fail"]
    row = next(r for r in v.rows if r.key.op == "softmax")
    assert row.verdict is Verdict.REGRESSION
    us, change = "210.9 → 252.8", "+19.9 %"
    assert (row.baseline_us, row.current_us) == pytest.approx((210.9, 252.8), abs=0.05)
    assert row.judged_change == pytest.approx(0.199, abs=0.0005)
    assert row.judged_change == pytest.approx(1 / row.ratio - 1)  # the judged statistic
    data = json.loads(v.model_dump_json())
    js = next(r for r in data["rows"] if r["key"]["op"] == "softmax")
    assert js["judged_change"] == row.judged_change and js["ratio"] == row.ratio
    md_row = next(line for line in render_markdown(v).splitlines() if "`softmax`" in line)
    assert us in md_row and change in md_row and "+5.3 %" in md_row
    assert f"FlagGems {us} µs" in render_junit(v) and f"judged change {change}" in render_junit(v)
    b = load_baseline(BASELINE)
    a_rows = {r.key(x.repo, x.run_name): r for x in b.ops.values() for r in x.rows}
    cur = load_results(inject(tmp_path / "fail", FAIL_SLOWDOWNS)).rows()
    c = compare(a_rows, cur, ThresholdsFile.model_validate(b.manifest.thresholds.model_dump()))
    cmp_row = next(line for line in render_compare(c).splitlines() if "`softmax`" in line)
    assert us in cmp_row and change in cmp_row and "REGRESSION" in cmp_row
    assert c.exit_code == 1


def test_a_slower_kernel_is_plus_everywhere(verdicts):
    for r in verdicts["fail"].rows:
        if r.judged_change is not None:
            assert (r.judged_change > 0) == (r.ratio < 1)
            assert (r.kernel_change > 0) == (r.current_us > r.baseline_us)


def test_machine_speed_correction_is_stated_once(verdicts):
    md = render_markdown(verdicts["fail"])
    assert md.count("Machine-speed correction:") == 1
    assert "this runner measured torch" in md and "corrected by it" in md


# --------------------------------------------------------------------------- PASS informs


def test_a_pass_with_every_kernel_slower_is_not_an_aa_report(verdicts):
    aa, slow = render_markdown(real_aa()), render_markdown(verdicts["pass"])
    assert "## ✅ zlbench gate: PASS" in aa and "## ✅ zlbench gate: PASS" in slow
    assert re.search(r"judged change -0\.\d\d %", aa)
    assert "judged change +3.69 %" in slow  # the geomean of 49 rows 4 % slower, with noise
    assert "### Near the threshold" in slow and "### Near the threshold" not in aa
    assert "### Largest moves" in slow


def test_loosened_thresholds_are_stated(tmp_path):
    y = tmp_path / "loose.yaml"
    y.write_text("default: 0.2\nops:\n  softmax: 0.3\npaired_ops:\n  var_mean: 0.08\n")
    md = render_markdown(real_verdict(RESULTS, y))
    assert "### Thresholds (not the defaults)" in md and "loose.yaml" in md
    assert "default: 0.2 \\(default 0.05\\)" in md and "ops.softmax: 0.3" in md
    assert "paired\\_ops.var\\_mean: 0.08 \\(A/B against the base\\)" in md


def test_unconfirmed_flags_explanations_and_codegen_slots(verdicts):
    v = verdicts["fail"].model_copy(deep=True)
    flip = next(r for r in v.rows if r.key.op == "gelu")
    flip.confirmed, flip.samples = False, [0.94, 0.99, 0.99]
    extras = ReportExtras(
        codegen=(3, 120), explanations={"main/softmax": "ttgir: num_warps 8 → 4 (@someone)"}
    )
    md = render_markdown(v, extras)
    assert "### Flagged but not confirmed (1 row)" in md and "no (median of 3)" in md
    assert "3 of 120 kernels changed" in md
    assert "ttgir: num\\_warps 8 → 4 \\(@\u2060someone\\)" in md


# --------------------------------------------------------------------------- FAIL first screen


def test_fail_first_screen_order_and_one_reproduce_template(verdicts):
    md = render_markdown(verdicts["every-verdict"])
    order = [
        "### Regressed rows (1, worst first)",
        "### Failed ops",
        "### Fallbacks",
        "### Missing rows",
        "### What to do next",
        "### Reproduce",
        "### Largest moves",
        "### Environment",
    ]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    blocks, closed = fences(md)
    assert closed and [info for _, info, _ in blocks].count("sh") == 1
    assert md.index("### Regressed rows") < 1500  # on the first screen
    repro = md[md.index("### Reproduce") :].split("###")[1]
    assert all(
        f"| `{op}` | `main` |" in repro for op in ("add", "cumsum", "index_put", "mm", "sum")
    )
    assert "**Investigate**" in md and "**Accept**" in md and "**Re-run**" in md


def test_worst_first(verdicts):
    md = render_markdown(verdicts["large-fail"])
    section = md[md.index("### Regressed rows") :].split("\n### ")[0]
    changes = [
        float(m)
        for m in re.findall(r"\| ([+-]\d+\.\d) % \| [+-]\d+\.\d % \| (?:yes|no|not)", section)
    ]
    assert changes and changes == sorted(changes, reverse=True)


def test_error_report_says_what_to_do(verdicts):
    md = render_markdown(verdicts["error"])
    assert md.startswith(MARKER + "\n## ⚠️ zlbench gate: ERROR")
    assert "Not judged: the environment differs" in md and "NVIDIA A100" in md
    assert "### What to do\n" in md and "--allow-env-mismatch" in md
    assert "Geomean" not in md and "### Regressed" not in md and "mermaid" not in md


# --------------------------------------------------------------------------- chart


def charts(md: str) -> list[tuple[list[str], list[float], float, float]]:
    """(labels, bar values, y-axis min, y-axis max) of each mermaid chart of ``md``."""
    blocks, _ = fences(md)
    out = []
    for _, info, body in blocks:
        if info != "mermaid":
            continue
        assert body[0] == "xychart-beta horizontal"  # labels stacked, never overlapping
        labels = re.findall(r'"([^"]*)"', next(line for line in body if "x-axis" in line))
        bars = next(line for line in body if line.strip().startswith("bar"))
        lo, hi = re.search(r"y-axis .* (\S+) --> (\S+)$", body[3]).groups()
        values = [float(x) for x in re.findall(r"-?\d+\.\d+", bars)]
        out.append((labels, values, float(lo), float(hi)))
    return out


def test_mermaid_charts_are_zero_based_slower_then_faster(verdicts):
    v = verdicts["fail"]
    (slower, faster) = charts(render_markdown(v))
    labels, values, lo, hi = slower
    assert len(labels) == len(values) <= CHART_OPS
    assert labels[0] == "softmax" and values[0] == pytest.approx(19.87, abs=0.01)
    assert "mm" in labels and not any("__at__" in x for x in labels)  # the file is dropped
    assert values == sorted(values, reverse=True) and min(values) > 0
    assert lo == 0 and values[0] <= hi < 2 * values[0]
    labels, values, lo, hi = faster
    assert labels[0] == "group_norm" and values[0] == pytest.approx(2.62, abs=0.01)
    assert lo == 0 and min(values) > 0 and values[0] <= hi
    judged = sum(1 for o in v.ops if o.judged_change is not None)
    left = re.search(r"Not drawn: (\d+) more slower, (\d+) more faster;", render_markdown(v))
    assert len(slower[0]) + len(faster[0]) + int(left[1]) + int(left[2]) == judged


def test_a_pass_chart_starts_at_zero_and_reaches_the_limit(verdicts):
    """An A/A PASS: every bar small against an axis from 0 to at least the limit."""
    labels, values, lo, hi = charts(render_markdown(verdicts["pass"]))[0]
    assert lo == 0 and hi >= 5.26 and max(values) < hi


def test_chart_of_many_ops_draws_the_largest_and_counts_the_rest(verdicts):
    md = render_markdown(verdicts["large-fail"])
    (slower,) = [c for c in charts(md) if c[1] and c[0][0].startswith("op")]
    assert len(slower[0]) == CHART_OPS
    assert re.search(r"Not drawn: \d+ more slower", md)


def test_report_md_is_never_cut(verdicts):
    v = large_fail(verdicts["every-verdict"], 1000)
    md = render_markdown(v)
    assert len(md) > 65_536 and "shortened" not in md and "more rows not shown" not in md
    assert all(f"`op{i:04d}`" in md for i in range(1000))
    assert not any("<" in line for line in live_text(md.removeprefix(MARKER)))
    assert render_html(v).count("<tr") > 1000


def test_readme_shows_the_real_main_job_pass():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    excerpt = readme.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    md = render_markdown(real_aa())
    assert all(line in md.splitlines() for line in excerpt.splitlines() if line), excerpt


def test_systemic_lines_and_unmeasured_ops_lead_the_report(verdicts):
    v = verdicts["fail"].model_copy(deep=True)
    v.systemic = ["13 ops fail the same way: SystemError in driver.py <x>"]
    v.not_measured = ["main/zeros", "main/ones"]
    md = render_markdown(v)
    assert md.index("### Systemic failures (1)") < md.index("### Regressed rows")
    assert "SystemError in driver.py \\<x\\>" in md
    assert "### Not measured (2 ops)" in md and "| `zeros` |" in md
