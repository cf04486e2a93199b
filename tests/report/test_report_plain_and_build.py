"""What the reports hide no more: a row timed by the plain do_bench fallback (the
A/A false alarms' ``softmax_backward``, in the baseline and every run) carries a †
in every table and one line explains it; the compiler under test and the baseline's
are named with the directory triton came from and its build fingerprint."""

from __future__ import annotations

import re

import pytest
from cases import real_fail, real_slower

from zlbench.models import Environment, GateVerdict, RowKey, Verdict
from zlbench.report.compare import compare, render_compare
from zlbench.report.facts import PLAIN_MARK, PLAIN_NOTE
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import render_comment, render_markdown

SHAPE = "[torch.Size([1048576])]"


@pytest.fixture(scope="module")
def fail(tmp_path_factory) -> GateVerdict:
    return real_fail(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def slower(tmp_path_factory) -> GateVerdict:
    """Every kernel 4 % slower: softmax_backward is near its threshold (a table row)."""
    return real_slower(tmp_path_factory.mktemp("slower"))


def test_the_real_plain_timed_rows_are_flagged(fail):
    plain = {(r.key.op, r.verdict) for r in fail.rows if r.plain_timed}
    # softmax_backward: plain in baseline and run; index_add: dismissed, plain in the run
    assert plain == {("softmax_backward", Verdict.PASS), ("index_add", Verdict.SKIPPED)}
    sb = next(r for r in fail.rows if r.key.op == "softmax_backward")
    assert sb.plain_timed_in == ["baseline", "current"]


def test_markdown_marks_the_row_and_explains_the_mark_once(slower):
    md = render_markdown(slower)
    lines = md.splitlines()
    (note,) = [line for line in lines if line.startswith(PLAIN_NOTE)]
    assert "1 row in the baseline and this run" in note and "`softmax_backward`" in note
    assert "index_add" not in note  # a dismissed op's rows are not judged: no mark
    rows = [line for line in lines if line.startswith("| `softmax_backward`")]
    assert rows and all(f"`{SHAPE}` {PLAIN_MARK} |" in line for line in rows)
    others = [line for line in lines if line.startswith("| `") and PLAIN_MARK in line]
    assert others == rows  # no other row is marked
    assert lines.index(note) < next(i for i, x in enumerate(lines) if x.startswith("### "))


def test_the_comment_keeps_the_explanation_at_any_cut(fail):
    assert PLAIN_NOTE in render_comment(fail, limit=3_000)


def test_html_marks_the_row_with_its_reason(fail):
    html = render_html(fail)
    assert PLAIN_NOTE in html
    row = next(tr for tr in html.split("<tr") if "softmax_backward</code></td><td>bfloat16" in tr)
    assert re.search(rf'<span title="timed without CUDA graphs[^"]*">{PLAIN_MARK}</span>', row)
    index_add = next(tr for tr in html.split("<tr") if "index_add</code></td><td>bfloat16" in tr)
    assert PLAIN_MARK not in index_add


def test_junit_says_how_the_row_was_timed(fail):
    xml = render_junit(fail)
    case = xml.split('classname="main.softmax_backward"', 1)[1].split("</testcase>", 1)[0]
    assert "timed without CUDA graphs (plain do_bench fallback) in the baseline and this run" in (
        case
    )


def test_compare_marks_and_explains_in_its_own_words(fail):
    row = next(r for r in fail.rows if r.key.op == "softmax_backward")
    from zlbench.models import Row

    def side(us: float) -> dict[RowKey, Row]:
        r = Row(
            op="softmax_backward",
            dtype="bfloat16",
            shape=SHAPE,
            latency_ms=us / 1000,
            latency_base_ms=row.baseline_torch_us / 1000,
            speedup=row.baseline_torch_us / us,
            no_cudagraph=True,
        )
        return {r.key("main", "softmax_backward"): r}

    text = render_compare(compare(side(row.baseline_us), side(row.current_us), fail.thresholds))
    assert f"`{SHAPE}` {PLAIN_MARK}" in text
    assert f"{PLAIN_NOTE}. 1 row in A and B: `softmax_backward`." in text


# --------------------------------------------------------------------------- compiler


def _with_builds(v: GateVerdict, base: str, cur: str) -> GateVerdict:
    def env(e: Environment, build: str, path: str) -> Environment:
        return e.model_copy(update={"compiler_build": build, "compiler_path": path})

    return v.model_copy(
        update={
            "baseline_env": env(v.baseline_env, base, "/opt/base/site-packages/triton"),
            "current_env": env(v.current_env, cur, "/opt/pr/site-packages/triton"),
        }
    )


def test_the_environment_names_both_builds(fail):
    v = _with_builds(fail, "aaaa111122223333", "bbbb444455556666")
    md = render_markdown(v)
    line = next(x for x in md.splitlines() if x.startswith("Compiler under test:"))
    assert "build `bbbb444455556666` from `/opt/pr/site-packages/triton`" in line
    assert "(baseline: `triton` `3.6.0`, build `aaaa111122223333`" in line
    assert "The builds differ" in line
    html = render_html(v)
    assert "build bbbb444455556666 from /opt/pr/site-packages/triton" in html
    assert "build aaaa111122223333 from /opt/base/site-packages/triton" in html


def test_one_build_on_both_sides_is_not_called_different(fail):
    md = render_markdown(_with_builds(fail, "aaaa111122223333", "aaaa111122223333"))
    assert "build `aaaa111122223333`" in md and "The builds differ" not in md


def test_an_old_verdict_without_builds_renders_as_before(fail):
    line = next(x for x in render_markdown(fail).splitlines() if x.startswith("Compiler under"))
    assert "build" not in line and " from " not in line
