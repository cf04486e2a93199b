"""Markdown report of a gate verdict (job summary and PR comment).

``render_markdown`` returns a string no longer than ``limit`` characters
(GitHub's PR-comment limit by default): when the full report is longer, every
table is cut to its first N rows, N halving until it fits, and each cut table
ends with a note; tables are always whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jinja2

from zlbench.models import FAILING_VERDICTS, EnvFinding, GateVerdict, OpVerdict, RowVerdict, Verdict

MARKER = "<!-- zlbench-gate -->"
GITHUB_COMMENT_LIMIT = 65_536
CELL_MAX = 120
CAPS = (None, 400, 200, 100, 50, 20, 10, 5, 2, 0)
ICONS = {"PASS": "✅", "FAIL": "❌", "ERROR": "⚠️"}


def cell(text: object, limit: int = CELL_MAX) -> str:
    """Text that is safe inside one markdown table cell."""
    s = "" if text is None else str(text)
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def fmt_num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def fmt_change(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{(ratio - 1.0) * 100:+.1f}%"


def fmt_pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def table(header: list[str], align: str, rows: list[list[str]]) -> str:
    """A markdown table; ``align`` has one letter a column: l (left) or r (right)."""
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = [header, sep, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


@dataclass
class Section:
    """One table's rows (already formatted) and how many were left out."""

    rows: list[list[str]]
    total: int
    extra: list = field(default_factory=list)

    @property
    def hidden(self) -> int:
        return self.total - len(self.rows)


def _cap(items: list, cap: int | None) -> list:
    return items if cap is None else items[:cap]


def _change_rows(rows: list[RowVerdict], cap: int | None) -> Section:
    out = [
        [
            cell(f"{r.key.repo}/{r.key.op}"),
            cell(r.key.dtype),
            "`" + cell(r.key.shape).replace("`", "'") + "`",
            fmt_num(r.baseline_speedup),
            fmt_num(r.current_speedup),
            fmt_change(r.ratio),
            fmt_pct(r.threshold),
            {True: "yes", False: "no", None: "not re-measured"}[r.confirmed],
        ]
        for r in _cap(rows, cap)
    ]
    return Section(out, len(rows))


def _reason_rows(rows: list[RowVerdict], cap: int | None) -> Section:
    out = [
        [
            cell(f"{r.key.repo}/{r.key.op}"),
            cell(r.key.dtype),
            "`" + cell(r.key.shape) + "`",
            cell(r.reason),
        ]
        for r in _cap(rows, cap)
    ]
    return Section(out, len(rows))


def _aggregate_rows(ops: list[OpVerdict], cap: int | None) -> Section:
    out = [
        [
            cell(f"{o.repo}/{o.run_name}"),
            fmt_num(o.geomean_ratio),
            fmt_pct(o.threshold),
            cell(o.reason),
        ]
        for o in _cap(ops, cap)
    ]
    return Section(out, len(ops))


def _ops_section(ops: list[OpVerdict], cap: int | None) -> Section:
    shown = _cap(ops, cap)
    log_cap = 20 if cap is None else max(0, min(20, cap))
    extra = [(o, o.log_tail[-log_cap:] if log_cap else []) for o in shown]
    return Section([[o.repo, o.run_name] for o in shown], len(ops), extra)


def _reproduce(v: GateVerdict, regressed: list[RowVerdict], cap: int | None) -> Section:
    ops = {(o.repo, o.run_name): o for o in v.ops}
    groups: dict[tuple[str, str], list[RowVerdict]] = {}
    for r in regressed:
        groups.setdefault((r.key.repo, r.key.run_name), []).append(r)
    items = [(ops[k], rows) for k, rows in groups.items() if k in ops and ops[k].reproduce]
    shown = _cap(items, cap)
    return Section([[o.op] for o, _ in shown], len(items), shown)


def context(v: GateVerdict, cap: int | None) -> dict:
    by = lambda verdict: [r for r in v.rows if r.verdict is verdict]  # noqa: E731
    regressions = sorted(by(Verdict.REGRESSION), key=lambda r: r.ratio if r.ratio else 0.0)
    improvements = sorted(by(Verdict.IMPROVEMENT), key=lambda r: -(r.ratio or 0.0))
    failing_rows = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict in FAILING_VERDICTS}
    agg = [
        o
        for o in v.ops
        if o.verdict is Verdict.REGRESSION and (o.repo, o.run_name) not in failing_rows
    ]
    fallback_ops = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict is Verdict.FALLBACK}
    op_fallbacks = [
        o
        for o in v.ops
        if o.verdict is Verdict.FALLBACK and (o.repo, o.run_name) not in fallback_ops
    ]
    return {
        "v": v,
        "marker": MARKER,
        "icon": ICONS.get(v.verdict, ""),
        "counts_table": _counts_table(v),
        "env_mismatch": [f for f in v.environment if f.mismatch],
        "regressions": _change_rows(regressions, cap),
        "aggregate": _aggregate_rows(agg, cap),
        "env_rows": [_env_row(f) for f in v.environment],
        "improvements": _change_rows(improvements, cap),
        "fallbacks": _reason_rows(by(Verdict.FALLBACK), cap),
        "op_fallbacks": op_fallbacks,
        "failed_ops": _ops_section([o for o in v.ops if o.verdict is Verdict.FAILED], cap),
        "missing": _reason_rows(by(Verdict.MISSING), cap),
        "new_count": len(by(Verdict.NEW)),
        "skipped_count": len(by(Verdict.SKIPPED)),
        "reproduce": _reproduce(v, regressions + by(Verdict.FALLBACK), cap),
        "table": table,
    }


def _env_row(f: EnvFinding) -> list[str]:
    if f.mismatch:
        status = "**mismatch**"
    elif f.baseline and f.current and f.baseline != f.current:
        status = "differs (informational)"
    else:
        status = ""
    return [cell(f.field), cell(f.baseline or "—"), cell(f.current or "—"), status]


def _counts_table(v: GateVerdict) -> str:
    """Rows and ops per verdict, one column per verdict that occurs."""
    ops = {k: sum(1 for o in v.ops if o.verdict is k) for k in Verdict}
    shown = [k for k in Verdict if v.counts.get(k.value) or ops[k]]
    if not shown:
        return ""
    return table(
        ["", *(k.value for k in shown)],
        "l" + "r" * len(shown),
        [
            ["rows", *(str(v.counts.get(k.value, 0)) for k in shown)],
            ["ops", *(str(ops[k]) for k in shown)],
        ],
    )


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("zlbench.report", "templates"),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def render_markdown(v: GateVerdict, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    template = _env().get_template("report.md.j2")
    text = ""
    for cap in CAPS:
        ctx = context(v, cap)
        ctx["truncated"] = cap is not None
        text = template.render(**ctx)
        if len(text) <= limit:
            return text
    # Even with every table emptied it is too long (pathological cell text):
    # cut at a line boundary, outside any table, with a note.
    note = "\n\n_Report truncated: see report.md in the artifact._\n"
    head = text[: limit - len(note)]
    head = head[: head.rfind("\n\n")] if "\n\n" in head else head
    return head + note
