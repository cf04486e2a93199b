"""The paired statistic of an A/B against the base compiler, and the verdicts it
gives (pure; docs/judging.md "A/B against the base compiler").

Both compilers measured the same rows in alternating rounds on one runner
(``zlbench.runner.ab``). For each round in which both measured a row, the
round's ratio is ``base FlagGems latency / PR FlagGems latency`` (< 1: the PR is
slower); the row's statistic is the median of those ratios.

Why this statistic: the two measurements of one round are minutes apart on the
same GPU, so clock, thermal and co-tenant drift slower than a round cancels in
the round's ratio, while drift between rounds moves whole rounds and the median
drops a disturbed one. The FlagGems latency alone, not the speedup: torch runs
the same code on both sides, so dividing by it would only add torch's own noise.

Verdicts: a row judged A/B is a REGRESSION only when it is slower than the base
beyond the paired threshold. A row that the screen against the stored baseline
flagged but that is not slower than the base is a PASS marked *inherited*: the
slowdown is already on the base branch (the stored baseline is stale there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from types import MappingProxyType

from zlbench.gate.estimators import positive
from zlbench.gate.judge import JUDGED
from zlbench.gate.numbers import inverse_change, pct
from zlbench.models import Environment, PairedRow, Row, RowKey, RowVerdict, Verdict

# Default paired threshold (relative): every row's, except the ops below. From the
# paired A/A noise measured on the H200 (docs/judging.md "A/B against the base
# compiler"): outside the ops below, no paired A/A change reached it.
DEFAULT_PAIRED_THRESHOLD = 0.03

# Built-in per-op paired thresholds (op name or run name -> threshold). The 1M-element
# reductions run fast or slow by a per-process state that pairing cannot cancel (same
# build on both sides; measured on the H200, docs/judging.md "A/B against the base
# compiler"). A thresholds file's ``paired_ops`` overrides them entry by entry.
DEFAULT_PAIRED_OPS: Mapping[str, float] = MappingProxyType(
    {op: 0.08 for op in ("amax", "argmax", "mean", "prod", "sum", "var_mean")}
)

Round = tuple[Mapping[RowKey, Row], Mapping[RowKey, Row]]  # (PR rows, base rows)


def round_ratio(pr: Row | None, base: Row | None) -> float | None:
    """``base latency / PR latency`` of one round (None unless both are usable)."""
    if pr is None or base is None or pr.status == "FAILED" or base.status == "FAILED":
        return None
    if not (positive(pr.latency_ms) and positive(base.latency_ms)):
        return None
    return base.latency_ms / pr.latency_ms


def pair_rounds(rounds: Sequence[Round]) -> dict[RowKey, PairedRow]:
    """Every row measured by either side in any round -> its paired statistic."""
    keys = dict.fromkeys(k for pr, base in rounds for k in (*pr, *base))
    out = {}
    for key in keys:
        p = PairedRow(rounds=0)
        for pr, base in rounds:
            r = round_ratio(pr.get(key), base.get(key))
            if r is None:
                continue
            p.pr_us.append(pr[key].latency_ms * 1000.0)
            p.base_us.append(base[key].latency_ms * 1000.0)
            p.round_ratios.append(r)
        p.rounds = len(p.round_ratios)
        if p.round_ratios:
            p.ratio = median(p.round_ratios)
            p.change = inverse_change(p.ratio)
        out[key] = p
    return out


def judge_paired(
    row: RowVerdict, p: PairedRow, threshold: float, baseline: str, full: bool
) -> RowVerdict:
    """``row`` judged on its A/B (``p``); rows that are not judged numbers (failed,
    fallback, missing, new, skipped) keep their verdict and carry the A/B only."""
    p = p.model_copy(update={"threshold": threshold, "screen_verdict": row.verdict.value})
    if row.verdict not in JUDGED or p.ratio is None:
        why = "" if p.ratio is not None else "; no A/B pair: the base did not measure it"
        if row.verdict not in JUDGED:
            why = ""
        return row.model_copy(update={"ab": p, "reason": row.reason + why})
    vs_base = f"{pct(p.change)} vs the base (median of {p.rounds} paired rounds)"
    if p.ratio < 1.0 - threshold:
        verdict, reason = Verdict.REGRESSION, f"slower than the base: {vs_base}"
    elif full and p.ratio > 1.0 + threshold:
        verdict, reason = Verdict.IMPROVEMENT, f"faster than the base: {vs_base}"
    else:
        verdict, reason = Verdict.PASS, ""
    if row.verdict is Verdict.REGRESSION and verdict is not Verdict.REGRESSION:
        p.inherited = True
        reason = (
            f"inherited from the base (baseline {baseline} is stale here): "
            f"{pct(row.judged_change)} vs {baseline}, {vs_base}"
        )
    return row.model_copy(update={"ab": p, "verdict": verdict, "reason": reason})


def paired_ops_in_effect(
    threshold: float, file_ops: Mapping[str, float] | None = None
) -> dict[str, float]:
    """The per-op paired thresholds of an A/B at ``threshold`` (``--ab-threshold``):
    DEFAULT_PAIRED_OPS, then a thresholds file's ``paired_ops`` (its entries win,
    entry by entry). A built-in entry loosens its op's rows, never tightens them: it
    is left out where ``threshold`` is already as wide."""
    built_in = {op: t for op, t in DEFAULT_PAIRED_OPS.items() if t > threshold}
    return built_in | dict(file_ops or {})


def paired_threshold(key: RowKey, threshold: float, per_op: Mapping[str, float]) -> float:
    """The paired threshold of ``key``'s row: its op's entry in ``per_op`` (op name
    first, then run name; :func:`paired_ops_in_effect`), else ``threshold``."""
    for name in (key.op, key.run_name):
        if name in per_op:
            return per_op[name]
    return threshold


def apply_paired(
    rows: list[RowVerdict],
    paired: Mapping[RowKey, PairedRow],
    threshold: float,
    baseline: str,
    full: bool,
    per_op: Mapping[str, float] | None = None,
) -> list[RowVerdict]:
    """Rows with an A/B judged on it (at ``threshold``, or their op's ``per_op``
    entry); the others unchanged."""
    per_op = per_op or {}
    return [
        judge_paired(r, paired[r.key], paired_threshold(r.key, threshold, per_op), baseline, full)
        if r.key in paired
        else r
        for r in rows
    ]


# Fields that both sides of an A/B must share: only the compiler may differ.
SAME_FIELDS = ("flaggems_package", "flaggems_commit", "flaggems_version", "torch", "gpu_model")


def side_mismatch(pr: Sequence[Environment], base: Sequence[Environment]) -> str:
    """One line naming what differs between the sides' environments ("" when only
    the compiler does). A/B compares compilers: a base measuring another FlagGems
    (or torch, or GPU) would blame the PR for that."""
    for name in SAME_FIELDS:
        a = sorted({str(getattr(e, name)) for e in pr})
        b = sorted({str(getattr(e, name)) for e in base})
        if a and b and a != b:
            return (
                f"the base compiler's runs measured {name} {', '.join(b)}, the PR's "
                f"{', '.join(a)}: an A/B may differ in the compiler only"
            )
    return ""
