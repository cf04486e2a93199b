"""The A/B and accept sections of the report: identities, paired numbers, inherited
rows, every accepted row and unmatched entry; artifact strings escaped."""

from __future__ import annotations

from test_paired_verdicts import screen, write_ab  # noqa: F401 - fixture

from zlbench.models import AcceptEntry
from zlbench.report.ab import render_ab_section, render_accept_section
from zlbench.workflow.ab import AbContext, AbOptions, judge_ab, judge_accept


def test_ab_section_names_both_compilers_and_marks_inherited_rows(screen):  # noqa: F811
    v, gate = screen
    write_ab(gate, [(1.10, 1.10), (1.10, 1.11)])
    text = render_ab_section(judge_ab(v, gate))
    assert "### A/B against the base compiler" in text
    assert "- PR: " in text and "(env `pr`)" in text and "(env `/envs/base`)" in text
    assert "inherited: the base is as slow" in text and "+0.0 % (+0.00 µs, 2 rounds)" in text
    assert "pr base pr base" in text


def test_no_ab_no_section(screen):  # noqa: F811
    v, _ = screen
    assert render_ab_section(v) == "" and render_accept_section(v) == ""


def test_accept_section_lists_matched_rows_and_unmatched_entries_escaped(screen):  # noqa: F811
    v, _ = screen
    entries = [
        AcceptEntry(op="x", shape="[4096]", change=0.2, reason="see @team <b>now</b>"),
        AcceptEntry(op="gone", change=0.1, reason="old"),
    ]
    text = render_accept_section(judge_accept(v, AbContext(AbOptions(), accept=entries), "a.yml"))
    assert "### Accepted regressions" in text and "`a.yml`" in text
    assert "| yes |" in text and "matched no row" in text
    assert "<b>" not in text and "@team" not in text


def test_a_row_judged_on_the_ab_says_so_and_asks_for_no_rerun(screen):  # noqa: F811
    """On the H200 the suspects' A/B rows read "not re-measured" plus a Re-run hint."""
    from zlbench.report.markdown import render_markdown

    v, gate = screen
    write_ab(gate, [(1.10, 1.00), (1.10, 1.00)])
    judged = judge_ab(v, gate)
    text = render_markdown(judged)
    assert "A/B, 2 rounds" in text
    assert "not re-measured" not in text and "**Re-run**" not in text


def test_a_row_the_base_did_not_measure_stays_unconfirmed_with_the_rerun_hint(screen):  # noqa: F811
    """Its A/B entry has no ratio: it was judged as measured, not on the A/B."""
    from test_paired_verdicts import S, T, write_batch

    from zlbench.models import AbCompiler, AbSummary
    from zlbench.report.markdown import render_markdown
    from zlbench.runner.ab.rounds import AB_DIR, write_summary

    v, gate = screen
    root = gate / AB_DIR
    write_batch(root / "1" / "pr", {"x": rows_of(1.10, [S, T])})
    write_batch(root / "1" / "base", {"x": rows_of(1.00, [T])})  # the base lost shape S
    summary = AbSummary(mode="suspects", rounds=1, order=["pr", "base"], threshold=0.03)
    summary.pr = AbCompiler(env="pr", path="/pr/triton")
    summary.base, summary.ops = AbCompiler(env="b", path="/b/triton"), ["main/x"]
    write_summary(root, summary)
    judged = judge_ab(v, gate)
    (row,) = [r for r in judged.rows if r.verdict.value == "REGRESSION"]
    assert row.ab is not None and row.ab.ratio is None
    text = render_markdown(judged)
    assert "not re-measured" in text and "**Re-run**" in text and "A/B, 0 round" not in text


def rows_of(x_lat: float, shapes: list[str]):
    from test_paired_verdicts import rows

    return [r for r in rows(x_lat)["x"] if r.shape in shapes]
