"""``zlbench compare A B``: an A/B table of two run or batch dirs.

Rows are matched by their key (repo, run name, op, dtype, shape, occurrence);
the ratio is B's speedup over A's; the geometric mean covers the matched rows.
"""

from __future__ import annotations

from collections.abc import Mapping

from zlbench.gate.estimators import geomean, plain_ratio
from zlbench.models import Row, RowKey


def _num(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def align(
    a: Mapping[RowKey, Row], b: Mapping[RowKey, Row]
) -> tuple[dict[RowKey, Row], dict[RowKey, Row]]:
    """The two sides keyed alike: by full key, or without the run name when the
    two dirs name the same op's runs differently (no full key in common)."""
    if any(k in b for k in a):
        return dict(a), dict(b)
    strip = lambda m: {k.model_copy(update={"run_name": ""}): r for k, r in m.items()}  # noqa: E731
    return strip(a), strip(b)


def render_compare(
    a: Mapping[RowKey, Row], b: Mapping[RowKey, Row], label_a: str = "A", label_b: str = "B"
) -> str:
    """Markdown A/B table (rows of A in order, then the count of unmatched rows)."""
    a, b = align(a, b)
    both = [k for k in a if k in b]
    lines = [
        f"A: {label_a}",
        f"B: {label_b}",
        "",
        "| op | dtype | shape | A speedup | B speedup | B/A | A ms | B ms |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    ratios = []
    for k in both:
        ra, rb = a[k], b[k]
        ratio = plain_ratio(ra, rb)
        if ratio is not None:
            ratios.append(ratio)
        occ = f" #{k.occurrence}" if k.occurrence else ""
        lines.append(
            f"| {_cell(k.repo + '/' + k.op)} | {k.dtype} | {_cell(k.shape)}{occ} "
            f"| {_num(ra.speedup)} | {_num(rb.speedup)} | {_num(ratio, '.4f')} "
            f"| {_num(ra.latency_ms, '.4f')} | {_num(rb.latency_ms, '.4f')} |"
        )
    gm = geomean(ratios)
    lines += [
        "",
        f"matched rows: {len(both)} · geomean B/A: {_num(gm, '.4f')}"
        + (f" ({(gm - 1) * 100:+.2f}%)" if gm is not None else ""),
    ]
    only_a, only_b = len(a) - len(both), sum(1 for k in b if k not in a)
    if only_a or only_b:
        lines.append(f"only in A: {only_a} rows · only in B: {only_b} rows")
    return "\n".join(lines) + "\n"
