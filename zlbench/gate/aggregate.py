"""The judge's rules, each written once (pure; docs/judging.md).

- a ratio against its thresholds: :func:`classify`, through :func:`regressed` and
  :func:`improved` (``ratio < 1 - t``, ``ratio > 1 + t``), the only place in gate/
  that compares a ratio with a threshold;
- the judged change (``1 / ratio - 1``) at a threshold: :func:`limit_of`,
  :func:`improvement_limit`;
- an op's verdict from its rows: :func:`op_outcome` (the worst verdict, the geomean
  rule);
- the gate's outcome and exit code from its ops: :func:`gate_outcome`.

The first verdict (:func:`zlbench.gate.judge.op_verdict`,
:func:`zlbench.gate.verdict.run_gate`), its restatement after rows were re-judged
(:mod:`zlbench.gate.restate`) and the decision on all the evidence
(:mod:`zlbench.gate.decide`) call these; none of them writes a rule again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from zlbench.gate.estimators import geomean
from zlbench.models import FAILING_VERDICTS, OpVerdict, RowVerdict, Verdict

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
