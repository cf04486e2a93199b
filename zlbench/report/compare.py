"""``zlbench compare A B``: judge B against A the way the gate does, and show it.

Rows are matched by their key (repo, run name, op, dtype, shape, occurrence),
or without the run name when the two sides name the same op's runs differently.
Each pair is judged with the gate's own code (:func:`zlbench.gate.judge.judge_row`,
the estimator and thresholds in force, A's row noise when A is a baseline), and
shown with the report's columns and words (:mod:`zlbench.report.facts`).
Exit code as the gate's: 0 nothing regressed, 1 a row regressed or failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zlbench.gate.estimators import Estimator, estimate, torch_drift
from zlbench.gate.judge import judge_row
from zlbench.models import (
    FAILING_VERDICTS,
    BaselineRow,
    MachineSpeed,
    Row,
    RowKey,
    RowVerdict,
    ThresholdsFile,
    Verdict,
)
from zlbench.report.blocks import measured_cells, plain_line, table
from zlbench.report.escape import log_line, md_code, md_text
from zlbench.report.facts import geomean_changes, pct, speed_words


@dataclass
class Comparison:
    rows: list[RowVerdict]
    estimator: str
    speed: MachineSpeed
    only_a: int
    only_b: int

    @property
    def exit_code(self) -> int:
        return 1 if any(r.verdict in FAILING_VERDICTS for r in self.rows) else 0


def align(
    a: Mapping[RowKey, Row], b: Mapping[RowKey, Row]
) -> tuple[dict[RowKey, Row], dict[RowKey, Row]]:
    """The two sides keyed alike: by full key, or without the run name when the
    two dirs name the same op's runs differently (no full key in common)."""
    if any(k in b for k in a):
        return dict(a), dict(b)
    strip = lambda m: {k.model_copy(update={"run_name": ""}): r for k, r in m.items()}  # noqa: E731
    return strip(a), strip(b)


def _as_baseline(row: Row) -> BaselineRow:
    return row if isinstance(row, BaselineRow) else BaselineRow(**row.model_dump())


def compare(a: Mapping[RowKey, Row], b: Mapping[RowKey, Row], th: ThresholdsFile) -> Comparison:
    """Judge every row of B that A has, as the gate judges a results row against a
    baseline row (one machine-speed correction over all the pairs)."""
    a, b = align(a, b)
    pairs = {k: (a[k], b[k]) for k in a if k in b}
    estimator = Estimator(th.estimator)
    drift = torch_drift(pairs.values())
    applied = estimator is Estimator.TORCH_NORMALIZED
    ratios = estimate(estimator, pairs, drift if applied else None)
    rows = [judge_row(k, _as_baseline(ra), rb, ratios.get(k), th) for k, (ra, rb) in pairs.items()]
    speed = MachineSpeed(torch_change=drift - 1.0, rows=len(pairs), applied=applied)
    return Comparison(rows, estimator.value, speed, len(a) - len(pairs), len(b) - len(pairs))


def _cells(r: RowVerdict) -> list[str]:
    failed = f": {md_text(r.reason, 80)}" if r.verdict is Verdict.FAILED else ""
    return [*measured_cells(r), r.verdict.value + failed]


def render_compare(c: Comparison, label_a: str = "A", label_b: str = "B") -> str:
    """Markdown: the judged table (A's row order), the geomean and the correction."""
    header = ["op", "dtype", "shape", "FlagGems µs", "kernel time", "torch µs"]
    header += ["judged change", "limit", "verdict"]
    judged, kernel, n = geomean_changes(c.rows)
    how = "corrected" if c.speed.applied else f"each row by its own torch latency ({c.estimator})"
    lines = [
        f"A (baseline side): {md_code(label_a, 200, table=False)}",
        f"B (judged side): {md_code(label_b, 200, table=False)}",
        "",
        table(header, "llllrlrrl", [_cells(r) for r in c.rows]),
        "",
        f"matched rows: {len(c.rows)} · geomean judged change B vs A over {n} rows: "
        f"{pct(judged, 2)} (kernel time {pct(kernel, 2)}; + = slower)",
        f"machine-speed correction: B measured {speed_words(c.speed)}".replace(
            "than the baseline host", "than A"
        ).replace("at the baseline host's speed", "at A's speed")
        + f"; {how}",
    ]
    if plain := plain_line(c.rows):
        lines.append(plain.replace("this run", "B").replace("the baseline", "A"))
    if c.only_a or c.only_b:
        lines.append(f"only in A: {c.only_a} rows · only in B: {c.only_b} rows")
    failing = sum(1 for r in c.rows if r.verdict in FAILING_VERDICTS)
    lines.append(f"verdict: {'FAIL' if failing else 'PASS'} ({failing} failing rows)")
    return log_line("\n".join(lines)) + "\n"
