"""The judge's rules, each written once (pure; docs/judging.md).

- a ratio against its thresholds: :func:`classify`, through :func:`regressed` and
  :func:`improved` (``ratio < 1 - t``, ``ratio > 1 + t``), the only place in gate/
  that compares a ratio with a threshold;
- the judged change (``1 / ratio - 1``) at a threshold: :func:`limit_of`,
  :func:`improvement_limit`;
- an op's verdict from its rows: :func:`op_outcome` (the worst verdict, the geomean
  rule);
- the gate's outcome and exit code from its ops: :func:`gate_outcome`;
- the ops a gate checked, counted once so that they add up (:func:`count_ops`), and
  the verdict's first line (:func:`summary_line`).

The first verdict (:func:`zlbench.gate.judge.op_verdict`,
:func:`zlbench.gate.verdict.run_gate`), its restatement after rows were re-judged
(:mod:`zlbench.gate.restate`) and the decision on all the evidence
(:mod:`zlbench.gate.decide`) call these; none of them writes a rule again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from zlbench.gate.estimators import geomean
from zlbench.models import FAILING_VERDICTS, CodegenSummary, OpVerdict, RowVerdict, Verdict
from zlbench.protocol.layout import op_key

# Row verdicts that are judged numbers (a ratio against a threshold).
JUDGED = frozenset({Verdict.PASS, Verdict.REGRESSION, Verdict.IMPROVEMENT})
# Worst first: an op's verdict is the first of these that any of its rows (or the op) has.
OP_ORDER = (
    Verdict.FAILED,
    Verdict.FALLBACK,
    Verdict.MISSING,
    Verdict.REGRESSION,
    Verdict.IMPROVEMENT,
    Verdict.INCONCLUSIVE,
    Verdict.PASS,
    Verdict.NEW,
    Verdict.SKIPPED,
)
# Op verdicts that come from the op itself (its failure, an op-level fallback marker, a
# missing, new or skipped op), not only from its rows.
OP_LEVEL = frozenset(
    {Verdict.FAILED, Verdict.FALLBACK, Verdict.MISSING, Verdict.NEW, Verdict.SKIPPED}
)

Outcome = Literal["PASS", "FAIL", "ERROR"]
EXIT_CODES: dict[Outcome, int] = {"PASS": 0, "FAIL": 1, "ERROR": 2}


# --------------------------------------------------------------------------- a ratio


def regressed(ratio: float, threshold: float) -> bool:
    """Slower beyond ``threshold``: ``ratio < 1 - t`` (ratio < 1: slower)."""
    return ratio < 1.0 - threshold


def improved(ratio: float, threshold: float) -> bool:
    """Faster beyond ``threshold``: ``ratio > 1 + t``."""
    return ratio > 1.0 + threshold


def classify(ratio: float, regression: float, improvement: float) -> Verdict:
    """REGRESSION, IMPROVEMENT or PASS of ``ratio`` at its two thresholds."""
    if regressed(ratio, regression):
        return Verdict.REGRESSION
    if improved(ratio, improvement):
        return Verdict.IMPROVEMENT
    return Verdict.PASS


def limit_of(threshold: float | None) -> float | None:
    """The judged change at a (regression) threshold: ``1 / (1 - t) - 1``; None
    without a threshold, or at one of 1 or more (no ratio regresses past it)."""
    return None if threshold is None or threshold >= 1 else 1.0 / (1.0 - threshold) - 1.0


def improvement_limit(threshold: float) -> float:
    """The judged change at an improvement threshold: ``1 / (1 + t) - 1``."""
    return 1.0 / (1.0 + threshold) - 1.0


def geomean_reason(gm: float, threshold: float, paired: bool = False) -> str:
    """Why an op's geomean regressed: ``geomean ratio 0.912 < 0.950``."""
    return f"{'paired ' if paired else ''}geomean ratio {gm:.3f} < {1 - threshold:.3f}"


# --------------------------------------------------------------------------- an op


@dataclass(frozen=True)
class OpOutcome:
    verdict: Verdict
    geomean: float | None  # of the judged ratios (of one row too: that row's)
    geomean_regressed: bool  # the geomean of two or more rows regressed


def op_outcome(
    rows: Iterable[Verdict],
    op_level: Iterable[Verdict],
    ratios: Sequence[float],
    threshold: float | None,
) -> OpOutcome:
    """An op's verdict: NEW when the op is (``op_level`` holds NEW), else the worst
    (:data:`OP_ORDER`) of its rows' verdicts, its ``op_level`` ones, and REGRESSION
    when the geomean of its judged ``ratios`` regressed at the op's ``threshold``.
    The geomean of one row is that row: judging it again with the op's threshold
    would bypass the row's noise floor and per-row override, so it takes two."""
    gm = geomean(ratios)
    gm_regressed = (
        gm is not None and len(ratios) >= 2 and threshold is not None and regressed(gm, threshold)
    )
    own = set(op_level)
    if Verdict.NEW in own:
        return OpOutcome(Verdict.NEW, gm, gm_regressed)
    present = set(rows) | own
    if gm_regressed:
        present.add(Verdict.REGRESSION)
    verdict = next((v for v in OP_ORDER if v in present), Verdict.PASS)
    return OpOutcome(verdict, gm, gm_regressed)


def rows_reason(rows: Iterable[RowVerdict], verdict: Verdict) -> str:
    """``3 row(s) REGRESSION``: how many rows have the op's ``verdict``; "" for a PASS
    or when no row has it."""
    n = sum(1 for r in rows if r.verdict is verdict)
    return f"{n} row(s) {verdict.value}" if n and verdict is not Verdict.PASS else ""


# --------------------------------------------------------------------------- the gate


def gate_outcome(
    ops: Iterable[OpVerdict], error: bool = False, compile_failed: bool = False
) -> tuple[Outcome, int]:
    """The gate's verdict and exit code (docs/judging.md): ERROR (2) when it could not
    judge; FAIL (1) when an op has a failing verdict or kernels no longer compile;
    PASS (0) otherwise."""
    if error:
        verdict: Outcome = "ERROR"
    elif compile_failed or any(o.verdict in FAILING_VERDICTS for o in ops):
        verdict = "FAIL"
    else:
        verdict = "PASS"
    return verdict, EXIT_CODES[verdict]


# --------------------------------------------------------------------------- the counts


@dataclass(frozen=True)
class OpCounts:
    """The ops a gate checked, each in one term (docs/reports.md, "The first line"):
    ``checked = timed + untimed + identical + skipped + over_budget``."""

    timed: int  # ops the gate timed or meant to (a missing or failed op counts here)
    failing: int  # of the timed ops, those with a failing verdict
    identical: int  # not timed: the codegen screen proved their kernels identical
    skipped: int  # dismissed or unsupported (SKIPPED)
    over_budget: int = 0  # changed, not timed: beyond the GPU budget (not judged)
    untimed: int = 0  # judged PASS with no row timed (:func:`untimed_ops`)

    @property
    def checked(self) -> int:
        return self.timed + self.untimed + self.identical + self.skipped + self.over_budget


def untimed_ops(ops: Iterable[OpVerdict], rows: Iterable[RowVerdict]) -> set[str]:
    """The op keys of ``ops`` judged PASS without a row of theirs timed: no row holds a
    measurement (``current_speedup``: the op path's; ``ab``: the A/B's or the kernel
    replay's pairs). Today those are ops whose changed rows the baseline's launch
    capture proved to time no Triton kernel, the rest proven identical
    (``gate.replay.NO_LAUNCH``): neither timed nor replayed, so not counted as timed."""
    measured: dict[str, bool] = {}
    for r in rows:
        k = op_key(r.key.repo, r.key.run_name)
        measured[k] = measured.get(k, False) or r.current_speedup is not None or r.ab is not None
    return {
        k
        for o in ops
        if o.verdict is Verdict.PASS and measured.get(k := op_key(o.repo, o.run_name)) is False
    }


def count_ops(
    ops: Iterable[OpVerdict],
    identical: Collection[str] = (),
    over_budget: Collection[str] = (),
    untimed: Collection[str] = (),
) -> OpCounts:
    """The :class:`OpCounts` of a verdict's ``ops`` and the codegen screen's
    ``identical`` (``CodegenSummary.not_timed``) and ``over_budget`` op keys (neither
    is among the judged ops); ``untimed``: the judged ops' keys that :func:`untimed_ops`
    found, counted apart from the timed."""
    ops = list(ops)
    skipped = sum(1 for o in ops if o.verdict is Verdict.SKIPPED)
    failing = sum(1 for o in ops if o.verdict in FAILING_VERDICTS)
    untimed = set(untimed)
    apart = sum(1 for o in ops if op_key(o.repo, o.run_name) in untimed)
    timed = len(ops) - skipped - apart
    return OpCounts(timed, failing, len(identical), skipped, len(over_budget), apart)


def ops_words(c: OpCounts) -> str:
    """``34 ops checked = 7 timed (3 failing) + 27 proven identical + 0 skipped``: every
    term always (``+ N proven untimed`` after the timed and ``+ N over the GPU budget``
    only when there are some), so the sum reads the same in every report."""
    untimed = f" + {c.untimed} proven untimed" if c.untimed else ""
    words = (
        f"{c.checked} ops checked = {c.timed} timed ({c.failing} failing){untimed} + "
        f"{c.identical} proven identical + {c.skipped} skipped"
    )
    return words + (f" + {c.over_budget} over the GPU budget" if c.over_budget else "")


def rows_words(counts: Mapping[str, int]) -> str:
    """``8 rows: 4 pass, 4 regression``: the rows of the timed ops by verdict."""
    shown = ", ".join(
        f"{counts[v.value]} {v.value.lower()}" for v in Verdict if counts.get(v.value)
    )
    return f"{sum(counts.values())} rows: {shown or 'none'}"


SUMMARY_SEP = " — "  # between the lead (an ERROR's reason, a compile failure) and the counts


def summary_line(
    verdict: str,
    why: str,
    counts: Mapping[str, int] | Counter,
    ops: Iterable[OpVerdict],
    identical: Collection[str] = (),
    over_budget: Collection[str] = (),
    rows: Iterable[RowVerdict] | None = None,
) -> str:
    """The verdict's first line (``GateVerdict.summary``): ``FAIL: 34 ops checked = 7
    timed (3 failing) + 27 proven identical + 0 skipped; 8 rows: 4 pass, 4 regression``,
    led by ``why`` when given; with the verdict's ``rows``, its ops judged without a
    row timed count apart (:func:`untimed_ops`). An ERROR judged nothing: its line is
    the reason alone."""
    if verdict == "ERROR":
        return f"ERROR: {why}"
    ops = list(ops)
    untimed = untimed_ops(ops, rows) if rows is not None else ()
    head = f"{verdict}: {why}{SUMMARY_SEP}" if why else f"{verdict}: "
    words = ops_words(count_ops(ops, identical, over_budget, untimed))
    return f"{head}{words}; {rows_words(counts)}"


def screened(codegen: CodegenSummary | None) -> tuple[Collection[str], Collection[str]]:
    """(the op keys the codegen screen proved identical, those beyond the GPU budget)
    of a verdict's ``codegen`` (empty without a screen): :func:`count_ops`' terms."""
    if codegen is None:
        return (), ()
    return list(codegen.not_timed), list(codegen.over_budget)


def lead_of(summary: str, verdict: str) -> str:
    """The lead of a :func:`summary_line` (an ERROR's reason, a compile failure's line),
    "" when it has none."""
    text = summary.removeprefix(f"{verdict}: ")
    return text.split(SUMMARY_SEP)[0] if verdict == "ERROR" or SUMMARY_SEP in text else ""
