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
from dataclasses import dataclass, field
from typing import Protocol

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
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import display_names
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


def _cells(r: RowVerdict, names: Mapping[str, str]) -> list[str]:
    failed = f": {md_text(r.reason, 80)}" if r.verdict is Verdict.FAILED else ""
    return [*measured_cells(r, names), r.verdict.value + failed]


def render_compare(
    c: Comparison, label_a: str = "A", label_b: str = "B", records: RecordsCheck | None = None
) -> str:
    """Markdown: the caliber (``records``: what B's autotune records were checked
    against, a mismatch first), the judged table (A's row order), the geomean and the
    correction."""
    header = ["op", "dtype", "shape", "FlagGems µs", "kernel time", "torch µs"]
    header += ["judged change", "limit", "verdict"]
    judged, kernel, n = geomean_changes(c.rows)
    names = display_names(op_key(r.key.repo, r.key.run_name) for r in c.rows if r.key.run_name)
    how = "corrected" if c.speed.applied else f"each row by its own torch latency ({c.estimator})"
    lines = caliber_lines(records) if records is not None else []
    lines += [
        f"A (baseline side): {md_code(label_a, 200, table=False)}",
        f"B (judged side): {md_code(label_b, 200, table=False)}",
        "",
        table(header, "llllrlrrl", [_cells(r, names) for r in c.rows]),
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
    if records is not None and records.diffs:
        lines += ["", "Winners that differ (A vs B):", "", winners_table(records.diffs)]
    return log_line("\n".join(lines)) + "\n"


# --------------------------------------------------------------------------- calibers


class RecordsSource(Protocol):
    """The records one op ran with (:class:`zlbench.runner.ab.records.OpRecords`)."""

    mode: str  # record | replay | baseline
    source: str  # the records dir, normalized
    records: dict[str, dict[str, dict]] | None  # None: not readable here
    use_flagtune: str | None


@dataclass
class WinnerDiff:
    """One tuning key whose winner differs between the sides (None: that side has none)."""

    op: str
    kernel: str
    key: str
    a: dict | None
    b: dict | None


@dataclass
class RecordsCheck:
    """Did B run with A's autotune records? ``pinned``: ops B replayed A's records for
    (the same records dir, or records of the same content); ``own``: ops B ran with
    winners of its own (recorded fresh, or replayed other records); ``unverified``: B's
    records are not readable here; ``identical``: those of ``own`` whose winners are
    A's, by content (each side tuned its own, and they agreed: never "pinned");
    ``diffs``: the winners that differ; ``space``: the tuning-space differences
    (USE_FLAGTUNE), one line each."""

    ops: int = 0
    pinned: list[str] = field(default_factory=list)
    own: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    diffs: list[WinnerDiff] = field(default_factory=list)
    space: list[str] = field(default_factory=list)

    @property
    def caliber(self) -> str:
        """``pinned`` (B replayed A's records for every op), ``own-best`` (every op
        B's own), else ``mixed``."""
        if self.ops and len(self.pinned) == self.ops:
            return "pinned"
        if self.ops and len(self.own) == self.ops:
            return "own-best"
        return "mixed"

    @property
    def mismatch(self) -> bool:
        """Not the code's change alone: B not pinned to A's records, or another tuning
        space (a tuner then tunes every key A's records lack in its own space)."""
        return self.caliber != "pinned" or bool(self.space)


def winners_diff(op: str, a: Mapping[str, Mapping], b: Mapping[str, Mapping]) -> list[WinnerDiff]:
    """Every (kernel, key) whose config differs between ``a`` and ``b`` (either missing
    counts), in sorted order."""
    out = []
    for kernel in sorted({*a, *b}):
        ka, kb = a.get(kernel) or {}, b.get(kernel) or {}
        for key in sorted({*ka, *kb}):
            if ka.get(key) != kb.get(key):
                out.append(WinnerDiff(op, kernel, key, ka.get(key), kb.get(key)))
    return out


def check_records(
    a: Mapping[str, RecordsSource], b: Mapping[str, RecordsSource], *, own_best: bool = False
) -> RecordsCheck:
    """For every op both sides ran: did B run with A's records (A's own, or those A
    replayed), and in the same tuning space (USE_FLAGTUNE)? ``own_best``: each side
    replayed winners it tuned itself (``zlbench ab --caliber own-best``), so records
    of A's content in another dir are B's own winners, identical to A's, not A's
    records replayed; a B that recorded (not replayed) is the same. Pure."""
    c = RecordsCheck()
    for op in sorted(set(a) & set(b)):
        ra, rb = a[op], b[op]
        c.ops += 1
        if (ra.use_flagtune or "0") != (rb.use_flagtune or "0"):
            c.space.append(
                f"{op}: USE_FLAGTUNE {ra.use_flagtune or '0'} vs {rb.use_flagtune or '0'}"
            )
        same_dir = rb.mode != "record" and rb.source == ra.source
        equal = rb.records is not None and rb.records == ra.records
        if same_dir or (rb.mode != "record" and not own_best and equal):
            c.pinned.append(op)
            continue
        if rb.records is None or ra.records is None:
            c.unverified.append(op)
            continue
        c.own.append(op)
        if equal:
            c.identical.append(op)
        c.diffs += winners_diff(op, ra.records, rb.records)
    return c


def _config_text(cfg: dict | None) -> str:
    if cfg is None:
        return "none"
    kw = cfg.get("kwargs") if isinstance(cfg.get("kwargs"), dict) else {}
    parts = [f"{k}={v}" for k, v in sorted(kw.items())]
    parts += [f"{k}={v}" for k, v in sorted(cfg.items()) if k != "kwargs" and v is not None]
    return " ".join(parts)


def caliber_lines(c: RecordsCheck) -> list[str]:
    """The report's first lines: what was compared and in which caliber; a mismatch
    says so first."""
    n = c.ops
    space = "tuning space differs: " + md_text("; ".join(c.space[:5]), 300)
    if c.caliber == "pinned":
        line = (
            f"caliber: pinned: B replayed A's autotune records for all {n} op(s) "
            "(compared by records dir, else content); "
        )
        if c.space:  # e.g. a USE_FLAGTUNE switch measured pinned: say it first
            return [line + "but the " + space]
        return [
            line + "tuning space the same on both sides (USE_FLAGTUNE; the tuners' "
            "config lists are not recorded)"
        ]
    if c.caliber == "own-best" and len(c.identical) == n:
        line = (
            f"caliber: own-best: the two sides' own winners are identical for all {n} op(s) "
            "(each side tuned its own; compared by content): both ran the same configs"
        )
        return [line + ("; " + space if c.space else "")]
    lines = [
        f"caliber: {c.caliber}: B did NOT replay A's autotune records for "
        f"{n - len(c.pinned)} of {n} op(s): the comparison includes the tuner's own "
        "choices (tuner drift), not the code's change alone"
    ]
    if c.own:
        lines.append(
            f"B ran with its own winners: {md_text(', '.join(c.own[:5]), 300)}"
            + (f" and {len(c.own) - 5} more" if len(c.own) > 5 else "")
            + f"; {len(c.diffs)} winner(s) differ"
            + (
                f"; the two sides' own winners are identical for {len(c.identical)} of "
                f"{len(c.own)} of them"
                if c.identical
                else ""
            )
        )
    if c.unverified:
        lines.append(
            f"B's records are not readable here for {md_text(', '.join(c.unverified[:5]), 300)}:"
            " not verified"
        )
    if c.space:
        lines.append(space)
    return lines


WINNERS_HEADER = ["op", "kernel", "tuning key", "A's winner", "B's winner"]


def winners_table(diffs: list[WinnerDiff], limit: int = 50) -> str:
    """The winners that differ, A vs B, as a markdown table ("" when none)."""
    if not diffs:
        return ""
    body = [
        [
            md_code(d.op),
            md_code(d.kernel),
            md_code(d.key, 80),
            md_code(_config_text(d.a), 120),
            md_code(_config_text(d.b), 120),
        ]
        for d in diffs[:limit]
    ]
    more = f"\n\n… and {len(diffs) - limit} more" if len(diffs) > limit else ""
    return table(WINNERS_HEADER, "lllll", body) + more
