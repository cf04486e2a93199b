"""The building block of the markdown report: a section that renders whole.

A :class:`Block` cut to its first ``cap`` rows is still a table, a cut list of
code blocks keeps each block closed, and a cut always ends with a note saying
how many were left out. Plus the one table of row numbers every section shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zlbench.models import RowVerdict
from zlbench.report.escape import md_code, md_text
from zlbench.report.facts import (
    LIMIT_WORDS,
    PLAIN_NOTE,
    confirmed_text,
    decided_texts,
    name_of,
    pct,
    plain_mark,
    plain_rows,
    plain_sides,
    row_op,
    us_pair,
)

CHANGE_HEADER = [
    "op",
    "dtype",
    "shape",
    "FlagGems µs",
    "kernel time",
    "torch µs",
    "judged change",
    "limit",
    "confirmed",
]
LEGEND = (
    "_µs: baseline → current. kernel time: the FlagGems latency change before the "
    "machine-speed correction. judged change: after it, the number the gate judges "
    "(median of the samples when re-measured; for a row judged on an interleaved A/B its "
    "median change vs the base, the stored baseline's beside it). limit: the judged "
    "change at the row's threshold (A/B: the paired threshold and floor): " + LIMIT_WORDS + ". "
    "+ = slower._"
)


def table(header: list[str], align: str, rows: list[list[str]]) -> str:
    """A markdown table; ``align`` has one letter a column: l (left) or r (right)."""
    sep = ["---:" if a == "r" else "---" for a in align]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, sep, *rows])


@dataclass
class Block:
    """One section: heading, text, an optional table, optional chunks (code blocks)."""

    title: str
    intro: str = ""
    header: list[str] = field(default_factory=list)
    align: str = ""
    rows: list[list[str]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    outro: str = ""
    noun: str = "rows"
    # its rows are the verdict's own (the regressed, inconclusive and failed): a
    # shortened comment cuts every other table first (markdown.render_comment)
    decides: bool = False

    def render(self, cap: int | None, bullets: int | None = None) -> str:
        """The section with its first ``cap`` rows and chunks and the first
        ``bullets`` bullet lines (``- ``) of its outro (None: all of them)."""
        rows, chunks = self.rows[:cap], self.chunks[:cap]
        hidden = len(self.rows) - len(rows) + len(self.chunks) - len(chunks)
        parts = [f"### {self.title}", self.intro]
        if self.header:
            parts.append(table(self.header, self.align, rows))
        parts += chunks
        if hidden:
            parts.append(f"_… {hidden} more {self.noun} not shown here: see the full report._")
        parts.append(cut_bullets(self.outro, bullets))
        return "\n\n".join(p for p in parts if p) + "\n"


def cut_bullets(text: str, keep: int | None) -> str:
    """``text`` with only its first ``keep`` bullet lines (``- ``), the others
    counted in one line; the lines that are not bullets stay."""
    if keep is None:
        return text
    out, dropped = [], 0
    for line in text.splitlines():
        if line.startswith("- "):
            if keep <= 0:
                dropped += 1
                continue
            keep -= 1
        out.append(line)
    if dropped:
        out.append(f"- _… {dropped} more, see report.md_")
    return "\n".join(out)


Names = Mapping[str, str] | None  # op key -> its spelling (facts.op_names); None: op names


def op_label(repo: str, run_name: str, names: Names = None) -> str:
    """An op as a code span, in its one spelling (:func:`zlbench.report.facts.name_of`)."""
    return md_code(name_of(names or {}, repo, run_name))


def measured_cells(r: RowVerdict, names: Names = None) -> list[str]:
    """A judged row's table cells from its op to its limit (the gate's change table
    and ``zlbench compare`` add their own verdict cell)."""
    occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
    return [
        md_code(row_op(r.key, names)),
        md_code(r.key.dtype),
        md_code(r.key.shape + occ) + plain_mark(r),
        us_pair(r.baseline_us, r.current_us),
        pct(r.kernel_change),
        us_pair(r.baseline_torch_us, r.current_torch_us),
        *decided_texts(r),
    ]


def change_row(r: RowVerdict, names: Names = None) -> list[str]:
    return [*measured_cells(r, names), confirmed_text(r)]


def change_block(
    title: str, rows: list[RowVerdict], intro: str = "", names: Names = None
) -> Block | None:
    if not rows:
        return None
    cells = [change_row(r, names) for r in rows]
    return Block(title, intro, CHANGE_HEADER, "llllrlrrl", cells)


def reason_block(title: str, rows: list[RowVerdict], names: Names = None) -> Block | None:
    if not rows:
        return None
    cells = [
        [
            md_code(row_op(r.key, names)),
            md_code(r.key.dtype),
            md_code(r.key.shape) + plain_mark(r),
            md_text(r.reason),
        ]
        for r in rows
    ]
    return Block(title, "", ["op", "dtype", "shape", "reason"], "llll", cells)


PLAIN_OPS = 5  # ops named in the plain-timing line


def plain_line(rows: list[RowVerdict], names: Names = None) -> str:
    """The line that explains the † of the tables: how many rows were timed without
    CUDA graphs, where, and of which ops ("" when none was)."""
    plain = plain_rows(rows)
    if not plain:
        return ""
    ops = list(dict.fromkeys(name_of(names or {}, r.key.repo, r.key.run_name) for r in plain))
    more = f" +{len(ops) - PLAIN_OPS} more" if len(ops) > PLAIN_OPS else ""
    names = ", ".join(md_code(k) for k in ops[:PLAIN_OPS]) + more
    n = len(plain)
    return f"{PLAIN_NOTE}. {n} row{'' if n == 1 else 's'} {plain_sides(plain)}: {names}."
