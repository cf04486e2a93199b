"""Markdown report of a gate verdict: the full ``report.md`` and the comment-sized
variant for the PR comment and the job summary.

``render_markdown`` is the artifact: never cut. ``render_comment`` is at most
``limit`` characters: it cuts whole table rows and whole sections (never inside
a table or a code block), says so, and links the full report. Every string from
an artifact goes through :mod:`zlbench.report.escape`. The sections are built
in :mod:`zlbench.report.sections`; docs/reports.md shows examples.
"""

from __future__ import annotations

from zlbench.models import GateVerdict
from zlbench.report.ab import judged_by
from zlbench.report.blocks import Block, plain_line
from zlbench.report.error import error_blocks, error_header
from zlbench.report.escape import md_code, md_text
from zlbench.report.facts import (
    ReportExtras,
    compiler_line,
    geomean_words,
    gpu_difference_line,
    machine_speed_line,
    op_names,
    over_budget_line,
)
from zlbench.report.sections import blocks

MARKER = "<!-- zlbench-gate -->"
GITHUB_COMMENT_LIMIT = 65_536
STEP_SUMMARY_LIMIT = 1_000_000  # GitHub: 1 MiB per step summary
CAPS = (200, 100, 50, 20, 10, 5, 3, 1)
# Bullet lines of a section's outro (the "why" of each regressed row): cut first,
# every table whole, then with the table rows (at most as many as rows are shown).
BULLET_CAPS = (50, 20, 10, 5, 3, 1)
ICONS = {"PASS": "✅", "FAIL": "❌", "ERROR": "⚠️"}


def header(v: GateVerdict) -> str:
    """Title, summary, inputs, the compilers, machine-speed correction, the geomean and
    the rows timed without CUDA graphs (the tables' †): never cut. An ERROR's:
    :func:`zlbench.report.error.error_header`."""
    if v.verdict == "ERROR":
        return error_header(v, MARKER, ICONS["ERROR"])
    lines = [
        MARKER,
        f"## {ICONS.get(v.verdict, '')} zlbench gate: {v.verdict}",
        "",
        md_text(v.summary, 600),
        "",
        f"Baseline {md_code(v.baseline, 80)} ({md_code(v.baseline_dir, 120)}) · results "
        f"{md_code(v.results_dir, 120)}"
        + (f" · {md_text(v.generated, 40)}" if v.generated else ""),
        "",
        judged_by(v),
        "",
        md_text(compiler_line(v), 600),
    ]
    if gpu := gpu_difference_line(v):  # another GPU model, accepted: said up front
        lines[-3:-3] = [md_text(gpu, 400), ""]
    for line in v.drift[:5]:  # sentinels with identical kernels that moved: never failing
        lines += [
            "",
            f"Runner drift (sentinel, kernels identical, not failing): {md_text(line, 300)}",
        ]
    if line := over_budget_line(v, md_code, bold="**"):  # changed, not timed: never silently
        lines += ["", line]
    geo = geomean_words(v.rows)
    if geo:
        lines += ["", f"**{geo[0]}** {geo[1]}"]
    speed = machine_speed_line(v, host="runner")
    if speed:
        lines += ["", speed]
    plain = plain_line(v.rows, op_names(v))  # explains the † of the tables below
    if plain:
        lines += ["", plain]
    return "\n".join(lines) + "\n"


def _blocks(v: GateVerdict, extras: ReportExtras) -> list[Block]:
    """The sections after the header: an ERROR's say only what went wrong and what to do."""
    return error_blocks(v) if v.verdict == "ERROR" else blocks(v, extras)


def _join(head: str, parts: list[str]) -> str:
    return "\n".join([head, *parts])


def render_markdown(v: GateVerdict, extras: ReportExtras | None = None) -> str:
    """The full report (``report.md`` in the artifact): every section, every row."""
    return _join(header(v), [b.render(None) for b in _blocks(v, extras or ReportExtras())])


def _cut_note(extras: ReportExtras, hidden_sections: list[str]) -> str:
    link = extras.artifact_url.replace(")", "%29").replace(" ", "%20")
    where = f"[the run's artifacts]({link})" if link.startswith("https://") else "the artifact"
    dropped = f" Left out: {', '.join(hidden_sections)}." if hidden_sections else ""
    return (
        f"_This comment is shortened to fit; the full report (report.md, report.html, "
        f"verdict.json) is in {where}.{dropped}_\n"
    )


def _fits(text: str, limit: int) -> bool:
    return len(text) <= limit


def render_comment(
    v: GateVerdict, limit: int = GITHUB_COMMENT_LIMIT, extras: ReportExtras | None = None
) -> str:
    """The report in at most ``limit`` characters: the full report when it fits; else
    fewer bullet lines per section (every table whole), then fewer rows in the tables
    that do not decide the verdict (``Block.decides``: the regressed, inconclusive and
    failed rows stay whole; a broad change's kernel-replay table of thousands of rows
    had cut v7's 39 regressed rows to one), then fewer rows per table (whole rows),
    then fewer sections (whole sections, from the end), always with a note and the
    link to the full report."""
    extras = extras or ReportExtras()
    head, bs = header(v), _blocks(v, extras)
    full = _join(head, [b.render(None) for b in bs])
    if _fits(full, limit):
        return full
    last = BULLET_CAPS[-1]
    stages = [[(None, n)] * len(bs) for n in BULLET_CAPS]
    stages += [[(None if b.decides else c, last) for b in bs] for c in CAPS]
    stages += [[(c, last)] * len(bs) for c in CAPS]
    for caps in stages:
        parts = [b.render(cap, bullets) for b, (cap, bullets) in zip(bs, caps, strict=True)]
        text = _join(head, [*parts, _cut_note(extras, [])])
        if _fits(text, limit):
            return text
    return _drop_sections(head, bs, extras, limit)


def _drop_sections(head: str, bs: list[Block], extras: ReportExtras, limit: int) -> str:
    kept = [b.render(CAPS[-1], BULLET_CAPS[-1]) for b in bs]
    titles = [b.title for b in bs]
    while kept:
        text = _join(head, kept + [_cut_note(extras, titles[len(kept) :])])
        if _fits(text, limit):
            return text
        kept.pop()
    text = _join(head, [_cut_note(extras, titles)])
    if _fits(text, limit):
        return text
    # a header longer than the limit (a tiny limit): the title and the note only
    return _join("\n".join(head.splitlines()[:2]) + "\n", [_cut_note(extras, titles)])[:limit]
