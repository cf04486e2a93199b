"""The comment-sized report (PR comment, job summary): cut at row and section
boundaries, every fence closed, a note and the link to the full report; the
artifact's report.md is never cut (test_report_render)."""

from __future__ import annotations

import re

import pytest
from cases import every_verdict, large_fail

from tests.support.mdcheck import cells, fences, tables
from zlbench.report.facts import ReportExtras
from zlbench.report.markdown import GITHUB_COMMENT_LIMIT, MARKER, render_comment, render_markdown

URL = "https://github.com/o/r/actions/runs/1#artifacts"


@pytest.fixture(scope="module")
def thousand(tmp_path_factory):
    return large_fail(every_verdict(tmp_path_factory.mktemp("every")), 1000)


def check_whole(md: str) -> None:
    _, closed = fences(md)
    assert closed, "a code block is left open"
    for t in tables(md):
        assert re.fullmatch(r"\|( ---:? \|)+", t[1]), t[:2]  # header + separator
        assert len({cells(line) for line in t}) == 1, t  # every row whole


def test_a_1000_op_failure_fits_a_comment_whole(thousand):
    md = render_comment(thousand, extras=ReportExtras(artifact_url=URL))
    assert len(md) <= GITHUB_COMMENT_LIMIT
    assert md.startswith(MARKER + "\n## ❌ zlbench gate: FAIL")
    check_whole(md)
    assert f"[the run's artifacts]({URL})" in md and "shortened to fit" in md
    assert re.search(r"_… \d+ more rows not shown here", md)
    assert "### Regressed rows (1001, worst first)" in md  # the full count survives
    assert "| `op0001` |" in md  # the worst row survives the cut
    assert md.count("```sh") == 1


@pytest.mark.parametrize("limit", [2_000, 5_000, 20_000, 200_000])
def test_any_limit_is_respected_and_nothing_is_left_open(thousand, limit):
    md = render_comment(thousand, limit=limit)
    assert len(md) <= limit
    check_whole(md)
    assert "full report" in md


def test_small_limits_drop_whole_sections_and_name_them(thousand):
    md = render_comment(thousand, limit=3_000)
    assert "Left out:" in md
    assert all(
        line.startswith("### ")
        for line in md.splitlines()
        if line.startswith("#") and "gate:" not in line
    )


def test_a_report_that_fits_is_the_full_report(tmp_path):
    v = every_verdict(tmp_path)
    assert render_comment(v) == render_markdown(v)
    assert "shortened" not in render_comment(v)


def test_a_link_that_is_not_https_is_not_linked(thousand):
    md = render_comment(thousand, limit=10_000, extras=ReportExtras(artifact_url="javascript:x"))
    assert "javascript" not in md and "in the artifact" in md


def why(thousand) -> ReportExtras:
    """A long "why" line for every regressed op (as the codegen screen writes them)."""
    text = "codegen: a_kernel [BLOCK=128 num_warps=4]: TTGIR changed; " + "x" * 240
    keys = {f"{r.key.repo}/{r.key.run_name}" for r in thousand.rows}
    return ReportExtras(artifact_url=URL, explanations={k: text for k in keys})


@pytest.mark.parametrize("limit", [GITHUB_COMMENT_LIMIT, 20_000, 5_000])
def test_why_bullets_are_cut_before_the_regressed_table_is_lost(thousand, limit):
    extras = why(thousand)
    full = render_markdown(thousand, extras)
    assert full.count("\n- `op") >= 1000  # the report keeps every why line
    md = render_comment(thousand, limit=limit, extras=extras)
    assert len(md) <= limit
    check_whole(md)
    assert "### Regressed rows (1001, worst first)" in md
    assert "| `op0000` |" in md  # the worst row, with its table
    assert re.search(r"- _… \d+ more, see report.md_", md)
    assert md.count("\n- `op") < 60


def test_bullets_go_before_table_rows(thousand):
    """At a limit where every table fits whole once the why lines are cut, no table
    row is cut."""
    extras = why(thousand)
    full = render_markdown(thousand, ReportExtras(artifact_url=URL))
    md = render_comment(thousand, limit=len(full) + 20_000, extras=extras)
    assert "more rows not shown here" not in md
    assert "more, see report.md" in md


def test_the_verdicts_rows_stay_whole_while_other_tables_are_cut(tmp_path):
    """A broad change's kernel-replay table (thousands of rows, issue 51) is cut before
    a row of the regressed table: at a limit where the 31 regressed rows fit whole
    beside a few replay rows, every one of them is shown (v7's shard comment showed 1
    of 39); cutting every table alike showed 10 of them here."""
    from zlbench.models.replay import ReplayedRow, ReplayRun
    from zlbench.models.run import RowKey

    v = large_fail(every_verdict(tmp_path), 30)
    keys = [RowKey(repo="main", run_name=f"k{i}", op=f"k{i}", dtype="float16",
                   shape=f"[torch.Size([{i}, 4096, 4096])]") for i in range(3000)]  # fmt: skip
    run = ReplayRun(rows=[ReplayedRow(key=k, instrument="kernel-replay", outputs="match",
                                      pairs=10) for k in keys])  # fmt: skip
    extras = ReportExtras(artifact_url=URL, replay=run)
    assert len(render_markdown(v, extras)) > 200_000
    md = render_comment(v, limit=16_000, extras=extras)
    assert len(md) <= 16_000
    check_whole(md)
    regressed = md.split("### Regressed rows (31, worst first)")[1].split("\n### ")[0]
    assert len(tables(regressed)[0]) == 2 + 31 and "not shown here" not in regressed
    replay = md.split("### Kernel replay")[1].split("\n### ")[0]
    assert re.search(r"_… \d+ more rows not shown here", replay)
