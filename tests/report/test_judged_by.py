"""The header's judged-by line is true of the run (issue 50 item 1 follow-up): a gate
given ``--base-compiler`` that A/B-measured nothing says why, never "no base compiler"."""

from __future__ import annotations

import pytest

from zlbench.models import GateVerdict, OpVerdict, RowKey, RowVerdict, Verdict
from zlbench.report.ab import judged_by
from zlbench.report.html import render_html
from zlbench.report.markdown import render_markdown

NO_BASE = "alone (no base compiler: "


def _verdict(measured: bool, failed: bool, base: str = "/envs/base") -> GateVerdict:
    key = RowKey(repo="main", run_name="mm", op="mm", dtype="bfloat16", shape="[8]")
    kind = Verdict.FAILED if failed else (Verdict.PASS if measured else Verdict.MISSING)
    row = RowVerdict(key=key, verdict=kind, baseline_speedup=1.0, baseline_us=10.0)
    if measured:
        row = row.model_copy(update={"current_speedup": 1.0, "current_us": 10.0, "ratio": 1.0})
    op = OpVerdict(repo="main", run_name="mm", op="mm", verdict=kind, rows=1)
    return GateVerdict(
        verdict="FAIL" if failed else "PASS", exit_code=int(failed), summary="x",
        baseline="v5", baseline_dir="bl", results_dir="r", generated="",
        rows=[row], ops=[op], base_compiler=base,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("measured", "failed", "why"),
    [
        (False, True, "every op to time failed to compile, so nothing was timed; the compile "
                      "failures decide (the stored baseline `v5` judged no row)."),
        (False, False, "nothing changed that needed timing (the codegen screen proved the "
                       "kernels unchanged); the stored baseline `v5` judged no row."),
        (True, False, "this gate dir holds no A/B; judged against the stored baseline `v5` "
                      "alone (its numbers come from another host and day)."),
    ],
)  # fmt: skip
def test_a_base_compiler_that_measured_nothing_is_said_with_why(measured, failed, why):
    v = _verdict(measured, failed)
    head = "Nothing was measured on the A/B against the base compiler `/envs/base`: "
    assert judged_by(v) == head + why
    md, html = render_markdown(v), render_html(v)
    assert head + why in md and NO_BASE not in md
    assert (head + why).replace("`", "") in html and NO_BASE not in html


def test_without_a_base_compiler_the_stored_baseline_alone_decides():
    v = _verdict(True, False, base="")
    assert judged_by(v).startswith(f"Judged against the stored baseline `v5` {NO_BASE}")


def test_the_base_compiler_as_given_is_escaped():
    v = _verdict(False, True, base="/envs/<b>`x")
    assert "<b>" not in render_html(v).split("Nothing was measured", 1)[1].split("</p>", 1)[0]
