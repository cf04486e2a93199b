"""Golden FAIL report with the codegen screen wired in (zlbench.workflow.codegen):
the real H200 numbers with injected slowdowns, each regressed row explained by a
kernel the screen marked changed, one kernel that no longer compiles, one op not
timed on the screen's proof. Refresh with ZLBENCH_UPDATE_GOLDEN=1 and review the
diff by eye."""

from __future__ import annotations

import pytest
from cases import real_fail
from test_report_render import check_golden

from tests.support.mdcheck import fences
from zlbench.models import CodegenClass, CodegenScreen, GateVerdict, KernelScreen, Resources
from zlbench.report.codegen import change_words
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import render_comment, render_markdown
from zlbench.workflow.codegen import CodegenStep, apply_screen, report_extras, summarize

STATUS = [CodegenClass.TTGIR, CodegenClass.LLIR_PTX, CodegenClass.SASS]


def screen_for(v: GateVerdict) -> CodegenScreen:
    """A changed kernel per regressed row (cycling the classes), an identical one per
    passing op's first row, and a kernel of the first passing op that fails."""
    kernels = []
    regressed = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    for i, r in enumerate(regressed):
        status = STATUS[i % 3]
        stage = {"ttgir_changed": "ttgir", "llir_ptx_changed": "ptx", "sass_changed": "sass"}
        kernels.append(
            KernelScreen(
                kernel_id=f"{i:016x}",
                name=f"{r.key.op}_kernel",
                config=f"BLOCK_SIZE={1024 >> i % 3} num_warps={4 << i % 2} num_stages=3",
                status=status,
                first_stage=stage[status.value],
                baseline=Resources(n_regs=32, n_spills=0, sass_instructions=400),
                current=Resources(n_regs=32 + 8 * (i % 2), n_spills=i % 2, sass_instructions=412),
                deltas={"n_regs": 8.0 * (i % 2), "n_spills": float(i % 2), "sass_instructions": 12},
                diff_file=f"diffs/{i:016x}.diff",
                ops=[f"{r.key.repo}/{r.key.run_name}"],
                rows=[r.key],
            )
        )
    passing = [r for r in v.rows if r.verdict.value == "PASS"]
    first = {}
    for r in passing:
        first.setdefault(r.key.run_name, r)
    for j, r in enumerate(first.values()):
        kernels.append(
            KernelScreen(
                kernel_id=f"f{j:015x}",
                name=f"{r.key.op}_kernel",
                status=CodegenClass.FAILED if j == 0 else CodegenClass.IDENTICAL,
                error="RuntimeError: PassManager::run failed" if j == 0 else None,
                ops=[f"{r.key.repo}/{r.key.run_name}"],
                rows=[r.key],
            )
        )
    counts: dict[str, int] = {}
    for k in kernels:
        counts[k.status.value] = counts.get(k.status.value, 0) + 1
    return CodegenScreen(baseline_dir="baselines/v2", counts=counts, kernels=kernels)


@pytest.fixture(scope="module")
def wired(tmp_path_factory) -> tuple[GateVerdict, object]:
    v = real_fail(tmp_path_factory.mktemp("cg"))
    screen = screen_for(v)
    step = CodegenStep(summarize(screen, "changed", "codegen/codegen.json"), screen)
    step.summary.not_timed = {"main/abs": "all 2 kernel(s) identical; all 3 row(s) covered"}
    v = apply_screen(v, step)
    return v, report_extras(v, step, "https://github.com/o/r/actions/runs/1")


def test_golden_fail_with_codegen(wired):
    v, extras = wired
    assert v.verdict == "FAIL" and v.summary.startswith("FAIL: 1 kernel(s)")
    check_golden("fail-codegen/report.md", render_markdown(v, extras))
    check_golden("fail-codegen/junit.xml", render_junit(v))


def test_every_regression_row_is_explained_in_every_medium(wired):
    v, extras = wired
    md, junit = render_markdown(v, extras), render_junit(v)
    why = md.split("### Regressed rows", 1)[1].split("\n### ", 1)[0]
    regressed = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    assert regressed
    for r in regressed:
        (note,) = r.codegen
        assert note.diff_file == f"codegen/diffs/{note.kernel_id}.diff"
        assert f"`{note.name}`: " in why and f"; {change_words(note)}" in why
        assert note.diff_file in why
        assert note.diff_file in junit
    assert "### Kernels that no longer compile (1)" in md
    assert "`abs`" in md.split("### Generated code", 1)[1]
    html = render_html(v, extras)
    changed, total = extras.codegen
    assert changed == len(regressed)
    assert f"Generated code: {changed} of {total} kernels changed" in html
    assert "Kernels that no longer compile (1)" in html and "PassManager::run failed" in html
    assert "Not timed (--time changed): 1 op(s)" in html and "<code>abs</code>" in html


def test_comment_of_the_codegen_failure_fits_with_fences_closed(wired):
    v, extras = wired
    text = render_comment(v, 6_000, extras)
    _, closed = fences(text)
    assert len(text) <= 6_000 and closed
    assert "https://github.com/o/r/actions/runs/1" in text  # the cut note links the run
