"""Renderers of the results store's series (issue 52, docs/history.md), pure: each
returns a string.

- :func:`render_series`: ``zlbench history --row/--op``'s plain text, one line per
  commit (position, commit, value, change with its interval, verdict, a ``*`` where
  the row's timed-kernel digest changed from the commit before), then the row's usual
  noise (:mod:`zlbench.gate.noise`) and its last step divided by it;
- :func:`render_trend`: the static trend page: one inline SVG chart per op, its y axis
  starting at zero, one line per row, the commits on the x axis, each point marked by
  its gate verdict. No script, nothing fetched (a CSP that allows neither).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from zlbench.gate.noise import WINDOW, usual_noise
from zlbench.models.history import SeriesPoint
from zlbench.report.escape import one_line
from zlbench.report.facts import fmt_us, pct

DIGEST_MARK = "*"


def _interval(p: SeriesPoint) -> str:
    if p.change_lo is None or p.change_hi is None:
        return ""
    return f"[{pct(p.change_lo)}, {pct(p.change_hi)}]"


def _noise_line(points: Sequence[SeriesPoint]) -> str:
    noise = usual_noise([p.value_us for p in points])
    if noise is None:
        return "  usual noise: n/a (fewer than 10 commits with a value)"
    known = [p for p in points if p.value_us]
    step = known[-1].value_us / known[-2].value_us - 1  # type: ignore[operator]
    factor = noise.factor(step)
    times = "n/a" if factor is None else f"{factor:+.1f}× the usual noise"
    return (
        f"  usual noise: ±{pct(noise.threshold).lstrip('+')} commit to commit (Q3 + 3·IQR of "
        f"the last {noise.deltas} of {WINDOW} deltas, {noise.points} commits); "
        f"last step {pct(step)} ({times})"
    )


def render_series(points: Sequence[SeriesPoint], last: int | None = None) -> str:
    """The series of one or more rows (grouped by row, each by commit position)."""
    by_row: dict[str, list[SeriesPoint]] = {}
    for p in points:
        by_row.setdefault(p.row, []).append(p)
    out = []
    for row, pts in by_row.items():
        shown = pts[-last:] if last else pts
        out.append(f"{one_line(row)}: {len(shown)} commit(s)")
        out.append(f"  {'pos':>5}  {'commit':<12}  {'µs':>9}  {'change':>8}  "
                   f"{'interval':<20}  {'verdict':<12}  digest")  # fmt: skip
        prev = None
        for p in shown:
            moved = prev is not None and p.digest and prev.digest and p.digest != prev.digest
            mark = f"{p.digest[:12]}{' ' + DIGEST_MARK if moved else ''}" if p.digest else "-"
            out.append(
                f"  {p.position:>5}  {one_line(p.commit)[:12]:<12}  {fmt_us(p.value_us):>9}  "
                f"{pct(p.change):>8}  {_interval(p):<20}  {one_line(p.verdict):<12}  {mark}"
            )
            prev = p
        out.append(_noise_line(pts))
    out.append(f"{DIGEST_MARK}: the row's timed-kernel digest changed since the commit before")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ the trend page

W, H = 760, 260  # one chart's SVG size
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 56  # plot margins
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf", "#d62728")  # fmt: skip
VERDICT_STYLE = {  # verdict -> (radius, fill)
    "REGRESSION": (5.5, "#d62728"),
    "IMPROVEMENT": (5.5, "#2ca02c"),
    "INCONCLUSIVE": (5.0, "#ffbf00"),
    "FAILED": (5.0, "#000000"),
    "FALLBACK": (5.0, "#000000"),
    "MISSING": (4.0, "#ffffff"),
}
CSS = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h2 { font-size: 1.05em; margin: 1.6em 0 0.3em; }
svg { border: 1px solid #ddd; background: #fff; max-width: 100%; height: auto; }
.legend { font-size: 12px; margin: 0.2em 0 0; }
.legend span { margin-right: 1.2em; white-space: nowrap; }
.axis { stroke: #444; stroke-width: 1; }
.grid { stroke: #eee; stroke-width: 1; }
text { font-size: 11px; fill: #333; }
"""


def _e(text: object) -> str:
    return html.escape(one_line(text), quote=True)


def _chart(op: str, rows: Mapping[str, Sequence[SeriesPoint]]) -> str:
    positions = sorted({p.position for pts in rows.values() for p in pts})
    commit_at = {p.position: p.commit for pts in rows.values() for p in pts}
    xi = {pos: i for i, pos in enumerate(positions)}
    top = max((p.value_us for pts in rows.values() for p in pts if p.value_us), default=1.0)
    y_max = top * 1.1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(pos: int) -> float:
        return LEFT + (pw * xi[pos] / (len(positions) - 1) if len(positions) > 1 else pw / 2)

    def y(v: float) -> float:
        return TOP + ph * (1 - v / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" '
        f'height="{H}" data-op="{_e(op)}" data-y-min="0" role="img">',
        f"<title>{_e(op)}: latency (µs) by commit</title>",
    ]
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):  # y ticks from zero
        v = y_max * frac
        cls = "axis" if frac == 0 else "grid"
        parts.append(
            f'<line class="{cls}" x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'data-value="{v:g}"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{fmt_us(v)}</text>'
        )
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + ph}"/>')
    step = max(1, len(positions) // 12)
    for pos in positions[::step]:  # x ticks: the commits
        parts.append(
            f'<text class="commit" x="{x(pos):.1f}" y="{TOP + ph + 14}" text-anchor="end" '
            f'transform="rotate(-35 {x(pos):.1f} {TOP + ph + 14})">'
            f"{_e(commit_at[pos][:10])}</text>"
        )
    legend = []
    for i, (row, pts) in enumerate(rows.items()):
        color = COLORS[i % len(COLORS)]
        known = [p for p in pts if p.value_us is not None]
        line = " ".join(f"{x(p.position):.1f},{y(p.value_us):.1f}" for p in known)
        parts.append(
            f'<polyline class="row" data-row="{_e(row)}" fill="none" stroke="{color}" '
            f'stroke-width="1.5" points="{line}"/>'
        )
        for p in known:
            r, fill = VERDICT_STYLE.get(p.verdict, (2.5, color))
            parts.append(
                f'<circle class="pt" data-verdict="{_e(p.verdict)}" cx="{x(p.position):.1f}" '
                f'cy="{y(p.value_us):.1f}" r="{r}" fill="{fill}" stroke="{color}">'
                f"<title>{_e(row)}\n{_e(p.commit)}: {fmt_us(p.value_us)} µs, "
                f"{pct(p.change)} {_e(p.verdict)}</title></circle>"
            )
        legend.append(f'<span style="color:{color}">━ {_e(row)}</span>')
    parts.append("</svg>")
    return (
        f"<section><h2>{_e(op)}</h2>\n{''.join(parts)}\n"
        f'<p class="legend">{"".join(legend)}</p></section>'
    )


def render_trend(
    series: Mapping[str, Mapping[str, Sequence[SeriesPoint]]], *, branch: str, store: str = ""
) -> str:
    """The trend page of ``series`` (op -> row -> its points by position)."""
    charts = "\n".join(_chart(op, rows) for op, rows in sorted(series.items()))
    n_rows = sum(len(r) for r in series.values())
    key = (
        "Each point is one gate at one commit; large red: REGRESSION, large green: "
        "IMPROVEMENT, amber: INCONCLUSIVE, black: FAILED or FALLBACK, white: MISSING, "
        "small: PASS or other. Every y axis starts at zero."
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>zlbench trend: {_e(branch)}</title>\n<style>{CSS}</style></head>\n<body>\n"
        f"<h1>zlbench trend: {_e(branch)}</h1>\n"
        f"<p>{len(series)} op(s), {n_rows} row(s) from the results store {_e(store)}. "
        f"{key}</p>\n{charts}\n</body></html>\n"
    )
