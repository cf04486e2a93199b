"""The gate report's "Against history" section (issue 52): for each judged row with
enough history in the results store, its usual noise across commits and its change
divided by it (rustc-perf's significance factor), largest first. The data comes in
``ReportExtras.history`` (row label -> :class:`~zlbench.models.history.RowHistory`,
computed by ``zlbench.history.context``); no store, no section. Pure: returns a Block."""

from __future__ import annotations

from zlbench.gate.accept import judged_change
from zlbench.gate.noise import MIN_POINTS, WINDOW
from zlbench.models import GateVerdict
from zlbench.report.blocks import Block
from zlbench.report.escape import md_code
from zlbench.report.facts import ReportExtras, pct

HEADER = ["Op", "Dtype", "Shape", "Verdict", "Change", "Usual noise", "Change ÷ noise", "Points"]
SHOWN = 30  # rows in the section (largest factor first); the rest are counted


def factor_text(f: float | None) -> str:
    return "n/a" if f is None else f"{f:+.1f}×"


def history_block(v: GateVerdict, extras: ReportExtras) -> Block | None:
    """The section, or None without history for any judged row."""
    got = extras.history
    if not got:
        return None
    rows = [(r, got[r.key.label()]) for r in v.rows if r.key.label() in got]
    if not rows:
        return None
    rows.sort(key=lambda t: (-abs(t[1].factor or 0.0), t[0].key.label()))
    cells = []
    for r, h in rows[:SHOWN]:
        occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
        cells.append([
            md_code(f"{r.key.repo}/{r.key.op}"),
            md_code(r.key.dtype),
            md_code(r.key.shape + occ),
            r.verdict.value,
            pct(judged_change(r)),
            f"±{pct(h.noise).lstrip('+')}",
            factor_text(h.factor),
            str(h.points),
        ])  # fmt: skip
    more = len(rows) - len(cells)
    intro = (
        f"Rows with at least {MIN_POINTS} commits in the results store: their usual "
        f"commit-to-commit change (Q3 + 3·IQR of the last {WINDOW}) and this gate's change "
        "divided by it; beyond ±1×, more than the row usually moves (docs/history.md)."
    )
    outro = f"_{more} more row(s) with history not shown._" if more else ""
    return Block("Against history", intro, HEADER, "lllllrrr", cells, outro=outro)
