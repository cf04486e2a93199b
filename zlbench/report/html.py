"""Self-contained HTML report of a gate verdict (``report.html``).

One file, no network: inline CSS and JS, a strict Content-Security-Policy (no
remote resource can load), an SVG chart of the judged change per op drawn here,
sortable tables of ops and rows, the failing ops' log tails and, when the
codegen screen supplies them, the IR diffs. Every artifact string is escaped by
jinja2's autoescape; numbers and words come from :mod:`zlbench.report.facts`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jinja2

from zlbench.models import FAILING_VERDICTS, Environment, GateVerdict, OpVerdict
from zlbench.report.ab import ab_line, judged_by
from zlbench.report.escape import clean
from zlbench.report.facts import (
    LIMIT_WORDS,
    PLAIN_MARK,
    PLAIN_NOTE,
    ReportExtras,
    compiler_line,
    confirmed_text,
    decided_change,
    decided_texts,
    fmt_us,
    geomean_words,
    key_name,
    limit_of,
    machine_speed_line,
    name_of,
    nondefault_thresholds,
    op_limit,
    op_names,
    over_budget_line,
    pct,
    plain_rows,
    plain_sides,
    plain_words,
    row_op,
    rows_by_op,
)

BAR_H, LABEL_W, CHART_W = 18, 220, 520


@dataclass
class Bar:
    label: str
    verdict: str
    value: float  # judged change
    y: int
    x: float
    width: float
    text_x: float


def bars(ops: list[OpVerdict], names: dict[str, str]) -> tuple[list[Bar], float]:
    """Horizontal bars around a zero line, scaled to the largest change (>= 5 %),
    each labelled with its op's one spelling (``facts.op_names``)."""
    shown = sorted((o for o in ops if o.judged_change is not None), key=lambda o: -o.judged_change)
    scale = max([0.05, *(abs(o.judged_change) for o in shown)])
    half = CHART_W / 2
    out = []
    for i, o in enumerate(shown):
        w = abs(o.judged_change) / scale * (half - 50)
        x = half if o.judged_change >= 0 else half - w
        tx = x + w + 4 if o.judged_change >= 0 else x - 4
        label = name_of(names, o.repo, o.run_name)
        out.append(Bar(label, o.verdict.value, o.judged_change, i * BAR_H, x, w, tx))
    return out, scale


@functools.cache
def _env() -> jinja2.Environment:
    """The one jinja2 environment: the template is compiled once per process."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("zlbench.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["pct"] = pct
    env.filters["limit"] = limit_of
    env.filters["us"] = fmt_us
    env.filters["clean"] = clean
    env.filters["num"] = lambda x: "" if x is None else f"{x:.6g}"
    return env


def diff_lines(text: str) -> list[tuple[str, str]]:
    """(css class, line) of a unified diff."""
    out = []
    for line in clean(text).splitlines():
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        out.append((kind, line))
    return out


def worst_first_ops(ops: list[OpVerdict]) -> list[OpVerdict]:
    """Failing ops first, then by judged change, largest first."""
    failing = {x for x in FAILING_VERDICTS}
    return sorted(
        ops,
        key=lambda o: (o.verdict not in failing, -(o.judged_change or 0.0), o.repo, o.run_name),
    )


def plain_text(v: GateVerdict, names: dict[str, str]) -> str:
    """The line that explains the rows table's † ("" when no row was plain-timed)."""
    plain = plain_rows(v.rows)
    if not plain:
        return ""
    ops = ", ".join(dict.fromkeys(name_of(names, r.key.repo, r.key.run_name) for r in plain))
    n = len(plain)
    return f"{PLAIN_NOTE}. {n} row{'' if n == 1 else 's'} {plain_sides(plain)}: {ops}."


def compiler_text(e: Environment) -> str:
    """The compiler of one side: distribution, version, commit, build and path."""
    parts = [e.triton_dist or "unknown", e.triton_version or "?"]
    parts.append(f"commit {e.flagtree_commit or 'unknown'}")
    if e.compiler_build:
        parts.append(f"build {e.compiler_build}")
    if e.compiler_path:
        parts.append(f"from {e.compiler_path}")
    return " ".join(parts)


def render_error_html(v: GateVerdict) -> str:
    """report.html of an ERROR: what went wrong and what to do, nothing judged
    (:mod:`zlbench.report.error`): no chart, no tables of ops or rows, a few kB."""
    from zlbench.report.error import NAMED, error_steps, reason, unjudged

    v = unjudged(v)
    names = op_names(v)
    return (
        _env()
        .get_template("error.html.j2")
        .render(
            v=v,
            reason=reason(v),
            compilers=compiler_line(v),
            mismatched=[f for f in v.environment if f.mismatch],
            failed=[(name_of(names, o.repo, o.run_name), o) for o in v.ops],
            not_measured=[key_name(names, k) for k in v.not_measured[:NAMED]],
            steps=error_steps(v),
        )
    )


def render_html(v: GateVerdict, extras: ReportExtras | None = None) -> str:
    """report.html (an ERROR's: :func:`render_error_html`)."""
    if v.verdict == "ERROR":
        return render_error_html(v)
    extras = extras or ReportExtras()
    names = op_names(v)
    chart, scale = bars(v.ops, names)
    by_op = rows_by_op(v.rows)
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            v=v,
            geomean=geomean_words(v.rows),
            speed=machine_speed_line(v),
            chart=chart,
            chart_h=max(1, len(chart)) * BAR_H,
            chart_w=CHART_W,
            label_w=LABEL_W,
            scale=scale,
            failing={x.value for x in FAILING_VERDICTS},
            confirmed=confirmed_text,
            decided=decided_texts,
            decided_change=decided_change,
            thresholds=nondefault_thresholds(v.thresholds),
            ab_line=ab_line(v),
            judged_by=judged_by(v, code=str),
            over_budget=over_budget_line(v),
            codegen=extras.codegen,
            explanations=dict(extras.explanations),
            ir_diffs={k: diff_lines(t) for k, t in extras.ir_diffs.items()},
            logs=[o for o in v.ops if o.log_tail],
            ops=worst_first_ops(v.ops),
            op_limit=lambda o: op_limit(o, by_op),
            plain=plain_text(v, names),
            op_name=lambda o: name_of(names, o.repo, o.run_name),
            row_op=lambda r: row_op(r.key, names),
            key_name=lambda k: key_name(names, k),
            compilers=compiler_line(v),
            limit_words=LIMIT_WORDS,
            plain_mark=PLAIN_MARK,
            marked=lambda r: bool(plain_rows([r])),
            plain_words=plain_words,
            compiler=compiler_text(v.current_env),
            base_compiler=compiler_text(v.baseline_env),
        )
    )
