"""Short by construction (issue 27 item 4): the "why" of a regressed row is one line of
at most 200 characters in report.md, comment.md and junit.xml; it names the kernel
with the largest change among those the row ran in its timed region (a setup kernel
that changed more is not it); a kernel that explains many rows is explained once.
On the shipped H200 broad-change gate and on hand-built screens."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cases import real_fail

from tests.support.trees import shipped
from zlbench.cli import main
from zlbench.models import (
    CodegenClass,
    CodegenScreen,
    GateVerdict,
    KernelNote,
    KernelScreen,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.report.codegen import WHY_MAX, deciding, row_explanation
from zlbench.report.junit import render_junit
from zlbench.report.markdown import render_comment, render_markdown
from zlbench.report.why import TITLE, why_lines
from zlbench.workflow.codegen import CodegenStep, apply_screen, report_extras, summarize

REPO = Path(__file__).resolve().parents[2]
NO_COALESCE = shipped("examples/h200-gate-v2-no-coalesce")
C = CodegenClass.TTGIR


def why_section(md: str) -> list[str]:
    """The lines under the regressed table's "Why" title."""
    text = md.split(TITLE, 1)[1].split("\n### ", 1)[0]
    return [line for line in text.strip().splitlines() if line]


def junit_whys(xml: str) -> dict[str, str]:
    """Testcase name -> the codegen explanation in its failure body."""
    out = {}
    for case in ET.fromstring(xml).iter("testcase"):
        failure = case.find("failure")
        if failure is not None and "codegen: " in (failure.text or ""):
            out[case.get("name")] = (
                "codegen: " + failure.text.split("codegen: ", 1)[1].split("\n", 1)[0]
            )
    return out


# --------------------------------------------------------------------------- the shipped gate


@pytest.fixture(scope="module")
def broad(tmp_path_factory):
    """examples/h200-gate-v2-no-coalesce re-judged: 18 regressed rows, fill_scalar_kernel
    changed in every one of them (v2 has no timed attribution: it counts as timed)."""
    out = tmp_path_factory.mktemp("why") / "out"
    rc = main(
        ["report", str(NO_COALESCE), "--baseline", str(REPO / "baselines/v2"), "--out", str(out)]
    )
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    return v, {f: (out / f).read_text() for f in ("report.md", "comment.md", "junit.xml")}


def test_every_why_line_of_the_broad_change_is_one_short_line(broad):
    v, files = broad
    regressed = [r for r in v.rows if r.verdict is Verdict.REGRESSION]
    assert len(regressed) == 18
    for name in ("report.md", "comment.md"):
        lines = why_section(files[name])
        assert len(lines) >= len(regressed), name
        for line in lines:
            assert line.startswith("- ") and len(line) <= WHY_MAX, (name, len(line), line)
            assert "first stage" not in line and "num_warps=" not in line
    whys = junit_whys(files["junit.xml"])
    assert len(whys) == len(regressed)
    for why in whys.values():
        assert len(why) <= WHY_MAX and "first stage" not in why, why
    for r in regressed:  # the reason (verdict.json, report.html) carries the same line
        assert len(r.reason.split("codegen: ", 1)[1]) + len("codegen: ") <= WHY_MAX


def test_each_row_is_explained_by_its_largest_change_not_the_shared_helper(broad):
    v, files = broad
    lines = why_section(files["report.md"])
    rows = [r for r in v.rows if r.verdict is Verdict.REGRESSION]
    for r in rows:
        top = deciding(r.codegen)
        assert top is not None and top.name != "fill_scalar_kernel", r.key
        assert f"codegen: {top.name}: " in r.reason and "; TTGIR differs" in r.reason
    addmm = next(line for line in lines if line.startswith("- `addmm`"))
    assert "`addmm_kernel`: regs +126" in addmm and "TTGIR differs" in addmm
    assert "fill" not in addmm
    assert "SASS +793 instructions" in addmm
    helper = [line for line in lines if "fill\\_scalar" in line or "fill_scalar" in line]
    assert helper == [
        "- Also changed in these rows, never a row's largest change: `fill_scalar_kernel` "
        "(18 rows), `prod_kernel_result` (1 row), `randn_kernel` (1 row)"
    ]


def test_a_kernel_that_explains_two_rows_is_explained_once(broad):
    _, files = broad
    lines = why_section(files["report.md"])
    diff = "3c8b9344fd0b71c8.diff"  # topk_single_stage_kernel k=5: two topk rows
    assert sum(diff in line for line in lines) == 1
    (shared,) = [line for line in lines if diff in line]
    assert shared.startswith("- `topk_single_stage_kernel`, the largest change of 2 rows below:")
    refs = [line for line in lines if "(above: the largest change of 2 rows)" in line]
    assert len(refs) == 2 and all(line.startswith("- `topk`") for line in refs)


# --------------------------------------------------------------------------- hand-built


def _kernel(kid: str, name: str, row: RowKey, timed: bool, deltas: dict) -> KernelScreen:
    key = f"{row.repo}/{row.run_name}"
    return KernelScreen(
        kernel_id=kid, name=name, status=C, first_stage="ttgir", deltas=deltas,
        config="BLOCK=1024 num_warps=4", diff_file=f"diffs/{kid}.diff", ops=[key], rows=[row],
        timed_ops=[key] if timed else [], setup_ops=[] if timed else [key],
        timed_rows=[row] if timed else [], setup_rows=[] if timed else [row],
    )  # fmt: skip


@pytest.fixture
def setup_heavier(tmp_path):
    """A real FAIL whose regressed softmax row ran two changed kernels in its timed
    region (``a_small``: regs +1, named first; ``z_large``: SASS +500) and, outside
    it, a setup kernel that changed far more (``fill_setup``, timed=False)."""
    v = real_fail(tmp_path)
    row = next(r for r in v.rows if r.verdict is Verdict.REGRESSION and r.key.op == "softmax")
    kernels = [
        _kernel("0" * 16, "a_small", row.key, True, {"n_regs": 1.0}),
        _kernel("1" * 16, "z_large", row.key, True, {"sass_instructions": 500.0}),
        _kernel("2" * 16, "fill_setup", row.key, False, {"n_regs": 60.0, "n_spills": 8.0}),
    ]
    screen = CodegenScreen(baseline_dir="b", counts={C.value: 3}, kernels=kernels)
    step = CodegenStep(summarize(screen, "all", "codegen/codegen.json"), screen)
    step.diff_prefix = "codegen/"
    v = apply_screen(v, step)
    return v, report_extras(v, step, ""), row.key


def test_the_largest_timed_change_explains_the_row_not_a_bigger_setup_change(setup_heavier):
    v, extras, key = setup_heavier
    (r,) = [r for r in v.rows if r.key == key]
    assert [n.name for n in r.codegen] == ["z_large", "a_small"]  # largest first; no setup
    expected = (
        "codegen: z_large: SASS +500 instructions; TTGIR differs; "
        "diff codegen/diffs/1111111111111111.diff; +1 other changed kernel(s)"
    )
    assert r.reason.endswith(expected)
    md = render_markdown(v, extras)
    (line,) = [line for line in why_section(md) if line.startswith("- `softmax`")]
    assert "`z_large`: SASS +500 instructions; TTGIR differs" in line
    assert "fill" not in line and len(line) <= WHY_MAX
    assert "fill\\_setup" in md.split("### Generated code", 1)[1]  # listed apart, once
    why = junit_whys(render_junit(v))
    assert any(w == expected for w in why.values())


def _note(kid: str, name: str, diff: str, **deltas: float) -> KernelNote:
    return KernelNote(kernel_id=kid, name=name, status=C, deltas=deltas, diff_file=diff)


def test_hostile_lengths_still_give_lines_of_at_most_200_characters(tmp_path):
    long = "k" * 300 + "`|*_[x](y)"
    diff = "codegen/" + "d" * 300 + ".diff"
    rows = []
    for i, shape in enumerate(["[" + "torch.Size([4096]), " * 40 + "]", "s`|" * 100, "[1]"]):
        key = RowKey(repo="main", run_name=f"op{i}", op="o" * 200, dtype="t" * 80, shape=shape)
        notes = [
            _note(f"{i}a", long, diff, n_regs=126, n_spills=3, shared=-36864, sass_instructions=7),
            _note("shared", "helper" * 40, diff, n_regs=1),
        ]
        rows.append(RowVerdict(key=key, verdict=Verdict.REGRESSION, codegen=notes, reason="x"))
        text = row_explanation(notes)
        assert len(text) <= WHY_MAX and text.startswith("codegen: kkk"), text
    shared = [
        RowVerdict(
            key=RowKey(repo="main", run_name=f"s{j}", op="s", dtype="f", shape="[2]"),
            verdict=Verdict.REGRESSION,
            codegen=[_note("shared", "helper" * 40, diff, n_regs=1)],
        )
        for j in range(30)
    ]
    lines = why_lines(rows + shared)
    assert lines and all(len(line) <= WHY_MAX for line in lines), max(map(len, lines))
    assert sum("the largest change of 30 rows below" in line for line in lines) == 1
    v = real_fail(tmp_path).model_copy(update={"rows": rows + shared})
    for text in (render_markdown(v), render_comment(v, 3_000)):
        assert all(len(line) <= WHY_MAX for line in why_section(text))
