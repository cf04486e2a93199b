"""Confirmation: re-measure the ops flagged as regressed and judge on the median.

A flagged op is re-measured ``times`` more times by an injected callable (the
CLI's batch adapter on a GPU, a fake in the tests); every row of the op is then
judged on the median of all of its samples (the first measurement included).
A regression that the median does not reproduce becomes a PASS with
``confirmed=False``; one that it does keeps ``confirmed=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from zlbench.gate.estimators import estimate, median
from zlbench.gate.judge import JUDGED, Judgement, matched_pairs, op_verdict, rejudge
from zlbench.gate.load import BaselineSet
from zlbench.models import Row, RowKey, RowVerdict, ThresholdsFile, Verdict

# remeasure(op keys "<repo>/<run_name>", times) -> one {row key: row} per pass
Remeasure = Callable[[list[str], int], list[Mapping[RowKey, Row]]]


def flagged_ops(j: Judgement, th: ThresholdsFile) -> list[str]:
    """Ops whose verdict is REGRESSION (a row, or the op aggregate)."""
    return [k for k, c in j.cases.items() if op_verdict(c, th).verdict is Verdict.REGRESSION]


def _confirm_row(v: RowVerdict, extra: list[float], th: ThresholdsFile, noise: float) -> RowVerdict:
    samples = list(v.samples) + extra
    was = v.verdict
    m = median(samples)
    out = rejudge(v, m, th, noise).model_copy(update={"samples": samples})
    n = len(samples)
    if out.verdict is Verdict.REGRESSION:
        out.confirmed, out.reason = True, f"confirmed: median of {n} samples {m:.3f}"
    elif was is Verdict.REGRESSION:
        out.confirmed, out.reason = False, f"not confirmed: median of {n} samples {m:.3f}"
    return out


def apply_samples(
    j: Judgement,
    passes: list[Mapping[RowKey, Row]],
    baseline: BaselineSet,
    th: ThresholdsFile,
    ops: list[str],
) -> Judgement:
    """Re-judge the rows of ``ops`` on the median of their samples (pure: a new Judgement)."""
    if not passes or not ops:
        return j
    keys = [k for k in ops if k in baseline.ops and k in j.cases]
    pass_ratios: list[dict[RowKey, float | None]] = [{} for _ in passes]
    for key in keys:  # each op with the drift of the machine that measured it
        for ratios, p in zip(pass_ratios, passes, strict=True):
            pairs = matched_pairs(baseline, dict(p), [key])
            ratios.update(estimate(j.estimator, pairs, j.drift.get(key)))
    noise = {
        b.key(base.repo, base.run_name): b.noise
        for k in keys
        for base in [baseline.ops[k]]
        for b in base.rows
    }
    cases = dict(j.cases)
    for key in keys:
        case = cases[key]
        rows = []
        for v in case.rows:
            extra = [r[v.key] for r in pass_ratios if r.get(v.key) is not None]
            if v.verdict in JUDGED and v.ratio is not None and extra:
                v = _confirm_row(v, extra, th, noise.get(v.key, 0.0))
            rows.append(v)
        cases[key] = replace(case, rows=rows)
    return Judgement(cases, j.measured_rows, j.overlap, j.estimator, j.drift)


def confirm(
    j: Judgement,
    remeasure: Remeasure,
    times: int,
    baseline: BaselineSet,
    th: ThresholdsFile,
) -> Judgement:
    """Re-measure the flagged ops ``times`` times and judge them on the median."""
    ops = flagged_ops(j, th)
    if not ops or times <= 0:
        return j
    return apply_samples(j, list(remeasure(ops, times)), baseline, th, ops)
