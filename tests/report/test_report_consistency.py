"""Reports that agree with themselves (issue 27): a section lists only the rows that
belong in it, every failing op has a reproduce command, and the markdown keeps every
failure section the HTML shows."""

from __future__ import annotations

import re

import pytest

from zlbench.gate.numbers import inverse_change
from zlbench.gate.restate import restate
from zlbench.models import (
    AbSummary,
    CodegenSummary,
    Environment,
    GateVerdict,
    OpVerdict,
    PairedRow,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.report.facts import ReportExtras, improved, largest_moves, near_threshold
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
    assert near.startswith("### Near the threshold (1 row)") and "`close`" in near
    assert "inherited" not in near and "unconfirmed" not in near


def test_improvements_never_list_a_slower_row():
    rows = [
        row("faster", -0.08, Verdict.IMPROVEMENT),
        # the A/B judged it faster than the base, but it is slower than the baseline
        row("ab_faster_base", 0.024, Verdict.IMPROVEMENT, ab=ab(-0.07)),
        row("ab_slower", -0.09, Verdict.IMPROVEMENT, ab=ab(0.01)),
    ]
    assert [r.key.op for r in improved(rows)] == ["faster"]
    imp = section(render_markdown(verdict(rows)), "Improved rows")
    assert imp.startswith("### Improved rows (1:") and "ab_faster_base" not in imp


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


def pairs(change: float, decision: str = "PASS") -> PairedRow:
    """An interleaved A/B's row: decided by the pair rule on its change vs the base."""
    ratio = 1 / (1 + change)
    return PairedRow(
        rounds=5, ratio=ratio, change=change, threshold=0.03, floor_us=0.2, decision=decision
    )


def ab_rows() -> list[RowVerdict]:
    """Rows whose A/B change and stored-baseline change point opposite ways (the
    shipped A/A: `sum` +6.6 % vs the base, -4.2 % vs the stored baseline)."""
    return [
        row("sum", -0.042, ab=pairs(0.066)),  # slower than the base, "faster" than stored
        row("embedding", -0.101, ab=pairs(0.016)),
        row("mm", 0.002, ab=pairs(-0.001)),  # faster than the base, "slower" than stored
        row("exp", -0.009, ab=pairs(0.001)),
    ]


def test_largest_moves_are_ranked_by_the_change_that_decided():
    rows = ab_rows()
    moves = [r.key.op for r in largest_moves(rows)]
    assert moves == ["sum", "embedding", "exp", "mm"]  # 3 slower (vs the base), 1 faster
    md = section(render_markdown(verdict(rows)), "Largest moves")
    lines = [line for line in md.splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in lines] == [
        "sum",
        "embedding",
        "exp",
        "mm",
    ]
    assert "+6.6 % vs base (-4.2 % vs stored)" in lines[0]


def test_the_geomean_is_of_the_change_that_decided_with_the_stored_one_beside():
    rows = ab_rows()
    md = render_markdown(verdict(rows))
    line = next(x for x in md.splitlines() if x.startswith("**Geomean"))
    assert line.startswith("**Geomean over 4 judged rows: +2.01 % vs the base**"), line
    assert "vs the stored baseline: judged change -3.84 %" in line
    html = render_html(verdict(rows))
    assert "<b>Geomean over 4 judged rows: +2.01 % vs the base</b>" in html
    # one A/B row, one stored-baseline row: both named
    mixed = [rows[0], row("gelu", 0.01)]
    line = next(x for x in render_markdown(verdict(mixed)).splitlines() if "Geomean" in x)
    assert "decided change +3.76 %" in line and "1 rows decided by the A/B" in line
    # no A/B: as before
    plain = render_markdown(verdict([row("gelu", 0.01)]))
    assert "**Geomean over 1 judged rows: judged change +1.00 %** (FlagGems" in plain


def replayed(name: str, change: float, decision: str = "PASS") -> RowVerdict:
    """A row a kernel replay's pairs decided: no op-level latency, so no change against
    the stored baseline."""
    verdict_of = {"PASS": Verdict.PASS, "REGRESSION": Verdict.REGRESSION}[decision]
    paired = pairs(change, decision).model_copy(update={"instrument": "kernel-replay"})
    return RowVerdict(
        key=RowKey(repo="main", run_name=name, op=name, dtype="bfloat16", shape="[8]"),
        verdict=verdict_of,
        ab=paired,
    )


def test_the_geomean_and_the_largest_moves_count_the_rows_a_kernel_replay_decided():
    """v7's broad change on an H100 (2026-12-07): 5,227 rows judged by replay beside 37
    by the op path; the geomean and the largest moves had counted the 37 only."""
    rows = [*ab_rows(), replayed("flip", 1.0, "REGRESSION"), replayed("abs", 0.002)]
    line = next(x for x in render_markdown(verdict(rows)).splitlines() if "Geomean" in x)
    assert line.startswith("**Geomean over 6 judged rows: +13.79 % vs the base**"), line
    assert "every one of them, 2 of them by kernel replay" in line
    assert "vs the stored baseline: judged change -3.84 % over its 4 rows" in line
    assert [r.key.op for r in largest_moves(rows)][:1] == ["flip"]  # +100 %: first
    md = section(render_markdown(verdict(rows)), "Largest moves")
    assert "`flip`" in md
    # replayed rows alone: no change vs the stored baseline at all
    only = [replayed("flip", 1.0, "REGRESSION")]
    line = next(x for x in render_markdown(verdict(only)).splitlines() if "Geomean" in x)
    assert line.startswith("**Geomean over 1 judged rows: +100.00 % vs the base**"), line
    assert "none has a change vs the stored baseline" in line


def test_html_rows_show_the_change_that_decided():
    html = render_html(verdict(ab_rows()))
    body = html.split('id="rows"', 1)[1]
    assert "+6.6 % vs base (-4.2 % vs stored)" in body and "+3.0 % and 0.2 µs" in body
    # sorts by the deciding change
    assert '<td class="n wrap" data-v="0.066">+6.6 % vs base' in body


def interleaved(**kw) -> AbSummary:
    return AbSummary(
        mode="changed", rounds=1, order=["pr", "base"], threshold=0.03, floor_us=0.2,
        method="interleaved", min_pairs=5, max_pairs=16, max_pairs_plain=32, **kw,
    )  # fmt: skip


def test_inconclusive_rows_show_the_limit_each_was_judged_at():
    """The shipped full A/A: a plain-timed row judged at +25 % on block medians, under
    an intro that said "straddles +3 % and 0.2 µs" and an A/B rule without the 25 %."""
    plain = PairedRow(
        rounds=28, ratio=1 / 1.168, change=0.168, change_lo=-0.368, change_hi=0.256,
        delta_us=42.1, delta_lo_us=-165.1, delta_hi_us=63.7, threshold=0.25, floor_us=0.2,
        decision="INCONCLUSIVE", plain=True, blocks=7,
    )  # fmt: skip
    rows = [row("flash", 0.25, Verdict.INCONCLUSIVE, ab=plain), row("add", 0.01, ab=pairs(0.0))]
    md = render_markdown(verdict(rows, ab=interleaved()))
    inc = section(md, "Inconclusive rows")
    assert "+25.0 % and 0.2 µs" in inc and "straddles +3 % and 0.2 µs" not in inc
    mode = section(md, "A/B against the base compiler").splitlines()[2]
    assert "a row timed without CUDA graphs: +25.0 %" in mode
    assert "(pr base)" not in mode  # an interleaved A/B measures both at once: no order


def test_an_ab_row_whose_verdict_is_not_its_pairs_says_why():
    """The shipped A/A's sentinel: INCONCLUSIVE by its pairs, PASS as runner drift."""
    why = "sentinel with identical kernels (INCONCLUSIVE shown, not failing)"
    sentinel = row("sum", -0.042, ab=pairs(0.066, "INCONCLUSIVE"), reason=f"{why}: inconclusive")
    ab_section = section(render_markdown(verdict([sentinel], ab=interleaved())), "A/B against")
    line = next(x for x in ab_section.splitlines() if x.startswith("| `sum"))
    assert line.endswith(
        "| sentinel with identical kernels \\(INCONCLUSIVE shown, not failing\\) |"
    )


ERR = "compile failed: RuntimeError: zl patch: this compiler cannot build any kernel"


def no_compile(lines: list[str]) -> GateVerdict:
    cg = CodegenSummary(screened=True, kernels=len(lines), failed=lines)
    ops = [row(f"op{i}", 0.0, Verdict.FAILED) for i in range(2)]
    for r in ops:
        r.current_us = None
    v = verdict(ops, verdict="FAIL", exit_code=1, codegen=cg)
    for o in v.ops:
        o.reason = "not timed: a kernel fails to compile"
    return v


def test_one_error_of_every_failing_kernel_is_said_once():
    """The shipped compiler that builds nothing: 61 lines each ending in the same
    error, up to 400 characters each."""
    config = " ".join(f"in{i}_stride0=1 in{i}_stride_order0=0" for i in range(8))
    lines = [f"k{i}_kernel [{config} num_warps=4]: {ERR}" for i in range(3)]
    lines.append(f"cut_kernel [{config}]: compile failed: RuntimeError: zl patch: this comp…")
    md = render_markdown(no_compile(lines), ReportExtras(codegen=(0, 4)))
    sec = section(md, "Kernels that no longer compile (4)")
    assert "every one with the same error: RuntimeError: zl patch: this compiler" in sec
    bullets = [x for x in sec.splitlines() if x.startswith("- ")]
    assert len(bullets) == 4 and all(len(b) <= 200 and "zl patch" not in b for b in bullets)
    assert bullets[0].startswith("- `k0_kernel [in0_stride0=1")
    # two errors: each line keeps its own
    two = render_markdown(no_compile([f"a [x=1]: {ERR}", "b [x=2]: compile failed: OOM"]))
    assert "- b \\[x=2\\]: compile failed: OOM" in two and "same error" not in two


def test_a_screen_whose_kernels_fail_does_not_read_as_unchanged():
    v = no_compile([f"k{i} [x={i}]: {ERR}" for i in range(61)])
    extras = ReportExtras(codegen=(0, 61))
    said = "0 of 61 kernels changed their generated code; 61 no longer compile (above)."
    assert said in section(render_markdown(v, extras), "Generated code")
    assert "Generated code: 0 of 61 kernels changed; 61 no longer compile (above).</p>" in (
        render_html(v, extras)
    )


def test_what_to_do_next_points_only_at_what_the_report_has():
    v = no_compile([f"k [x=1]: {ERR}"])
    steps = section(render_markdown(v), "What to do next")
    assert "log tails below" not in steps and "*Failed ops* above" in steps
    assert "`zlbench codegen --baseline bl`" in steps and "BASELINE_DIR" not in steps
    v.ops[0].log_tail = ["Traceback", "RuntimeError: boom"]
    steps = section(render_markdown(v), "What to do next")
    assert "the log tails below end with the error" in steps


def test_a_compiler_without_a_version_reads_as_one_phrase():
    v = no_compile([f"k [x=1]: {ERR}"])
    v.baseline_env = Environment(triton_dist="triton", triton_version="3.6.0")
    env = section(render_markdown(v), "Environment")
    assert "Compiler under test: `unknown` (baseline: `triton` `3.6.0`)." in env


def test_the_plain_timing_line_leaves_out_rows_this_run_never_measured():
    v = no_compile([f"k [x=1]: {ERR}"])
    for r in v.rows:
        r.plain_timed, r.plain_timed_in = True, ["baseline"]
    md = render_markdown(v)
    assert "†" not in md and "†" not in render_html(v)
    v.rows[0].current_us = 5.0  # measured: marked
    assert "1 row in the baseline only: `op0`" in render_markdown(v)


def test_an_ab_judged_op_has_the_limit_its_rows_show():
    """The pair rule bounds the change vs the base at the threshold itself (+3.0 %),
    which the rows show; the op chart and the HTML ops table said +3.09 %."""
    rows = ab_rows()
    v = verdict(rows, ab=interleaved())
    for o in v.ops:
        o.threshold, o.judged_change = 0.03, 0.01
    md = section(render_markdown(v), "Change per op")
    assert "line [3.00, 3.00, 3.00, 3.00]" in md
    ops_table = render_html(v).split("<h2>Ops", 1)[1].split("<h2>", 1)[0]
    assert '<td class="n" data-v="0.03">+3.0 %</td>' in ops_table and "+3.1 %" not in ops_table
    # judged against the stored baseline: 1 / (1 - t) - 1
    plain = verdict([row("gelu", 0.01)])
    plain.ops[0].threshold, plain.ops[0].judged_change = 0.05, 0.01
    assert "line [5.26]" in section(render_markdown(plain), "Change per op")


def test_the_html_header_says_what_decided_and_the_drift():
    v = verdict(ab_rows(), ab=interleaved(), drift=["main/sum bfloat16 [8]: inconclusive"])
    html = render_html(v)
    assert "<p>Judged on this runner: an interleaved A/B against the base compiler" in html
    assert "Runner drift (sentinel, kernels identical, not failing): main/sum" in html
    stored = render_html(verdict([row("gelu", 0.01)]))
    assert "Judged against the stored baseline v1 alone" in stored
    assert "<code>" not in stored.split("Judged against", 1)[1].split("</p>", 1)[0]
