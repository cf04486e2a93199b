"""Reports that agree with themselves (issue 27): a section lists only the rows that
belong in it, every failing op has a reproduce command, and the markdown keeps every
failure section the HTML shows."""

from __future__ import annotations

import re

import pytest

from zlbench.gate.numbers import inverse_change
from zlbench.gate.restate import restate
from zlbench.models import (
    CodegenSummary,
    GateVerdict,
    OpVerdict,
    PairedRow,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.report.facts import improved, near_threshold
from zlbench.report.html import render_html
from zlbench.report.markdown import render_markdown

LIMIT = 1 / 0.95 - 1  # +5.26 %
TEMPLATE = (
    'zlbench run --op "$OP" --repo "$REPO" --flaggems-dir "$FLAGGEMS_DIR" --dtypes $DTYPES '
    '--shape-file bl/shapes.yaml --mode cudagraph --replay-from "bl/$REPO/$RUN" '
    '--out "repro/$RUN"'
)


def row(name: str, change: float, verdict=Verdict.PASS, **kw) -> RowVerdict:
    ratio = 1 / (1 + change)
    limit = LIMIT if verdict is not Verdict.IMPROVEMENT else 1 / 1.05 - 1
    return RowVerdict(
        key=RowKey(repo="main", run_name=name, op=name, dtype="bfloat16", shape="[8]"),
        verdict=verdict,
        baseline_speedup=1.0,
        current_speedup=ratio,
        baseline_us=10.0,
        current_us=10.0 * (1 + change),
        baseline_torch_us=10.0,
        current_torch_us=10.0,
        kernel_change=change,
        ratio=ratio,
        judged_change=inverse_change(ratio),
        threshold=0.05,
        limit=limit,
        samples=[ratio],
        **kw,
    )


def ab(change: float, **kw) -> PairedRow:
    return PairedRow(rounds=3, ratio=1 / (1 + change), change=change, threshold=0.05, **kw)


def verdict(rows: list[RowVerdict], **kw) -> GateVerdict:
    ops = [
        OpVerdict(repo="main", run_name=r.key.run_name, op=r.key.op, verdict=r.verdict, rows=1)
        for r in rows
    ]
    base = dict(verdict="PASS", exit_code=0, summary="PASS: x", baseline="v1")
    base |= dict(baseline_dir="bl", results_dir="r", generated="", reproduce_template=TEMPLATE)
    return GateVerdict(rows=rows, ops=ops, **(base | kw))


def section(md: str, title: str) -> str:
    m = re.search(rf"^### {re.escape(title)}.*?(?=^### |\Z)", md, re.S | re.M)
    return m.group(0) if m else ""


def test_near_lists_only_rows_below_their_limit():
    rows = [
        row("close", 0.04),  # 76 % of the limit: near
        row("far", 0.01),  # 19 %: not near
        row("inherited", 0.15, ab=ab(0.001, inherited=True)),  # 3x its limit, A/B PASS
        row("unconfirmed", 0.12, confirmed=False),  # its own section
    ]
    assert [r.key.op for r in near_threshold(rows)] == ["close"]
    md = render_markdown(verdict(rows))
    near = section(md, "Near the threshold")
    assert near.startswith("### Near the threshold (1)") and "`main/close`" in near
    assert "inherited" not in near and "unconfirmed" not in near


def test_improvements_never_list_a_slower_row():
    rows = [
        row("faster", -0.08, Verdict.IMPROVEMENT),
        # the A/B judged it faster than the base, but it is slower than the baseline
        row("ab_faster_base", 0.024, Verdict.IMPROVEMENT, ab=ab(-0.07)),
        row("ab_slower", -0.09, Verdict.IMPROVEMENT, ab=ab(0.01)),
    ]
    assert [r.key.op for r in improved(rows)] == ["faster"]
    imp = section(render_markdown(verdict(rows)), "Improvements")
    assert imp.startswith("### Improvements (1:") and "ab_faster_base" not in imp


def test_an_op_failed_by_the_rejudging_gets_a_reproduce_command():
    rows = [row("softmax", 0.08, Verdict.REGRESSION), row("gelu", 0.02)]
    v = verdict(rows, verdict="FAIL", exit_code=1)
    v.ops[0].reproduce = "zlbench run --op softmax"
    # an A/B (or any re-judging) fails gelu, which the stored baseline passed
    rejudged = [rows[0], rows[1].model_copy(update={"verdict": Verdict.REGRESSION})]
    out = restate(v, rejudged)
    failing = [o for o in out.ops if o.verdict is Verdict.REGRESSION]
    assert len(failing) == 2 and all(o.reproduce for o in failing)
    gelu = next(o for o in out.ops if o.op == "gelu")
    assert gelu.reproduce == (
        'zlbench run --op gelu --repo main --flaggems-dir "$ZLBENCH_FLAGGEMS_DIR" '
        "--dtypes bfloat16 --shape-file bl/shapes.yaml --mode cudagraph "
        "--replay-from bl/main/gelu --out repro/gelu"
    )
    md = render_markdown(out)
    assert "(2 failing)" in out.summary and "### Reproduce (2 ops)" in md


def test_reproduce_covers_a_failing_op_without_a_command():
    v = verdict([row("softmax", 0.08, Verdict.REGRESSION)], verdict="FAIL", exit_code=1)
    assert v.ops[0].reproduce is None
    assert "### Reproduce (1 ops)" in render_markdown(v)


@pytest.mark.parametrize("kind", ["FAIL", "ERROR"])
def test_markdown_keeps_the_compile_failures_whenever_the_html_has_them(kind):
    cg = CodegenSummary(screened=True, kernels=61, failed=["mm_kernel [..]: compile failed"])
    v = verdict([], verdict=kind, exit_code=1 if kind == "FAIL" else 2, codegen=cg)
    assert "Kernels that no longer compile (1)" in render_html(v)
    assert "### Kernels that no longer compile (1)" in render_markdown(v)
