"""The gate's verdict, decided once (pure): every piece of evidence, one order of
rules, one aggregation (docs/judging.md).

The workflow loads the evidence first (``zlbench.workflow.gate``): the rows judged
against the stored baseline, confirmation samples included
(:func:`zlbench.gate.verdict.run_gate`); the A/B against the base compiler, its pairs
already checked (:class:`PairedEvidence`); the accept list; what the codegen screen
proved (:class:`ScreenEvidence`: kernels that no longer compile, sentinels whose
kernels are identical). :func:`decide` then applies the rules to the rows in this
order, and restates the ops, the counts, the summary line and the exit code from
the rows once (:func:`zlbench.gate.restate.restate`):

1. **A/B**: a row both compilers measured is judged on its pairs
   (:func:`zlbench.gate.paired.apply_paired`), the stored baseline's number kept as
   context; a row the kernel replay timed instead (its op not run through FlagGems) is
   judged on its replay pairs by the same rule (:func:`zlbench.gate.replay.apply_replay`);
   a row FAILED on the PR's side whose op failed under the base compiler too, and which
   the base did not measure, is INCONCLUSIVE (:func:`failed_on_base`): this runner
   measures it under neither compiler, which is not the PR's doing;
2. **accept list**: an intended regression matching an entry is ACCEPTED
   (:func:`zlbench.gate.accept.apply_accept`);
3. **compile failures**: the rows and ops held back because a kernel of theirs no
   longer compiles are FAILED, and the gate is FAIL (exit 1) led by the compile line,
   also when nothing else was measured;
4. **sentinels**: a sentinel whose kernels are all identical never fails on its own:
   a REGRESSION, IMPROVEMENT or INCONCLUSIVE of it becomes PASS with a runner-drift line.

A new rule is one function of rows here, called in :func:`decide`. An ERROR (bad
input, the environment) stays an ERROR: the A/B and the sentinels are not applied
to it, unless every op was held back for compile failures (then the PR's compiler is
what failed: FAIL).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from zlbench.gate.accept import apply_accept
from zlbench.gate.aggregate import (
    SUMMARY_SEP,
    gate_outcome,
    lead_of,
    screened,
    summary_line,
)
from zlbench.gate.paired import apply_paired
from zlbench.gate.replay import ReplayEvidence, apply_replay, replayed_ops
from zlbench.gate.restate import restate
from zlbench.models import (
    AbSummary,
    AcceptEntry,
    CodegenSummary,
    GateVerdict,
    OpVerdict,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.models.ab import PairedRow
from zlbench.protocol.layout import op_key
from zlbench.protocol.pairs import PairRule
from zlbench.report.facts import op_names, row_label

MOVED = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE)
FAILED_ON_BASE = "not measured under the base compiler either"


@dataclass(frozen=True)
class PairedEvidence:
    """An A/B, loaded and checked: its summary, the paired statistic of each row, the
    pair rule it is judged at (the judge's own options over the recorded ones)."""

    summary: AbSummary
    rows: Mapping[RowKey, PairedRow]
    rule: PairRule | None = None
    # op key -> the base side's failure, for ops whose run failed under the base compiler
    base_failed: Mapping[str, str] = field(default_factory=dict)
    # the rows the base side measured (of a failed op too)
    base_measured: Collection[RowKey] = frozenset()

    @property
    def full(self) -> bool:
        """IMPROVEMENT is reported (every op, or every changed op, was paired)."""
        return self.summary.mode in ("full", "changed")


@dataclass(frozen=True)
class ScreenEvidence:
    """What the codegen screen proved that changes verdicts."""

    summary: CodegenSummary | None = None
    # op key -> the compile failure that kept it from being timed (its rows FAILED)
    held_back: Mapping[str, str] = field(default_factory=dict)
    # a held-back row's own failing kernel, when it has one (else the op's reason)
    row_failures: Mapping[RowKey, str] = field(default_factory=dict)
    # the verdict's lead when kernels no longer compile ("" when none fails)
    compile_lead: str = ""
    # op keys timed only as sentinels whose every kernel the screen found identical
    identical_sentinels: Collection[str] = frozenset()


@dataclass(frozen=True)
class Evidence:
    """Everything :func:`decide` needs besides the rows judged against the baseline."""

    paired: PairedEvidence | None = None
    accept: Sequence[AcceptEntry] = ()
    accept_source: str = ""
    replay: ReplayEvidence | None = None  # rows the kernel replay timed (gate.replay)
    screen: ScreenEvidence | None = None


def decide(v: GateVerdict, ev: Evidence) -> GateVerdict:
    """``v`` (the rows judged against the stored baseline) decided on all of ``ev``
    (module docstring): the rules in order, then one restatement."""
    rows, ops, fields, judged = list(v.rows), list(v.ops), {}, False
    error = v.exit_code == 2
    if ev.paired is not None and not error:
        rows = _paired(rows, v, ev.paired)
        rows, ops = failed_on_base(rows, ops, ev.paired)
        fields["ab"], judged = ev.paired.summary, True
    if ev.replay is not None and not error:
        rows = _replayed(rows, v, ev.replay, ev.paired)
        ops, judged = replayed_ops(ops, rows), True
    if ev.accept:
        rows, unmatched = apply_accept(rows, list(ev.accept))
        fields |= {"accept": list(ev.accept), "accept_source": ev.accept_source}
        fields["accept_unmatched"], judged = unmatched, True
    screen = ev.screen or ScreenEvidence()
    if screen.summary is not None:
        fields["codegen"] = screen.summary
    if screen.held_back:
        rows, ops = held_back(rows, ops, screen.held_back, screen.row_failures)
        judged = judged or rows != v.rows or ops != v.ops
    if screen.identical_sentinels and not error:
        names = op_names(v.model_copy(update={"codegen": screen.summary}))  # as reports spell
        rows, drift = sentinels(rows, screen.identical_sentinels, names)
        if drift:
            fields["drift"], judged = drift, True
    if judged:  # the ops, counts, summary and exit code from the rows, once
        out = restate(v.model_copy(update={"ops": ops}), rows, **fields)
    else:
        out = v.model_copy(update=fields) if fields else v
        if "codegen" in fields:  # the first line counts the ops the screen proved identical
            lead = lead_of(v.summary, v.verdict)
            counted = summary_line(
                v.verdict, lead, v.counts, v.ops, *screened(out.codegen), rows=v.rows
            )
            out = out.model_copy(update={"summary": counted})
    return _compile_failed(out, screen) if screen.compile_lead else out


def _paired(rows: list[RowVerdict], v: GateVerdict, p: PairedEvidence) -> list[RowVerdict]:
    per_op = v.thresholds.paired_ops if v.thresholds is not None else {}
    s = p.summary
    return apply_paired(rows, p.rows, s.threshold, v.baseline, p.full, per_op, s.floor_us, p.rule)


def _replayed(
    rows: list[RowVerdict], v: GateVerdict, ev: ReplayEvidence, p: PairedEvidence | None
) -> list[RowVerdict]:
    """The rows the kernel replay timed, judged at the A/B's own rule and thresholds."""
    per_op = v.thresholds.paired_ops if v.thresholds is not None else {}
    rule = (p.rule if p is not None else None) or PairRule()
    t = p.summary.threshold if p is not None else rule.threshold
    floor = p.summary.floor_us if p is not None else rule.floor_us
    return apply_replay(
        rows, ev, baseline=v.baseline, threshold=t, floor_us=floor, rule=rule, per_op=per_op
    )


def failed_on_base(
    rows: list[RowVerdict], ops: list[OpVerdict], p: PairedEvidence
) -> tuple[list[RowVerdict], list[OpVerdict]]:
    """A row FAILED on the PR's side whose op failed under the base compiler too, and
    which the base did not measure, is not the PR's failure: this runner measures it
    under neither compiler (an op out of the GPU's memory on both sides, a test that
    fails on both). It is INCONCLUSIVE (it does not fail the gate, and the reports show
    it first) with both failures in its reason; so is its op, when it FAILED. A row the
    base measured keeps the PR's failure."""
    if not p.base_failed:
        return rows, ops
    excused: dict[str, str] = {}
    out_rows = []
    for r in rows:
        key = op_key(r.key.repo, r.key.run_name)
        base = p.base_failed.get(key)
        if base is not None and r.verdict is Verdict.FAILED and r.key not in p.base_measured:
            line = f"{FAILED_ON_BASE}: {base}"
            excused[key] = line
            r = r.model_copy(update={"verdict": Verdict.INCONCLUSIVE,
                                     "reason": f"{line}; the PR's: {r.reason}"})  # fmt: skip
        out_rows.append(r)
    return out_rows, _ops_turned(ops, excused, Verdict.FAILED, Verdict.INCONCLUSIVE)


def _ops_turned(
    ops: list[OpVerdict], lines: Mapping[str, str], was: Verdict, to: Verdict
) -> list[OpVerdict]:
    """``ops`` with each op of ``lines`` (op key -> reason) whose verdict is ``was``
    turned ``to``, with its line as reason."""
    out = []
    for o in ops:
        line = lines.get(op_key(o.repo, o.run_name))
        if line is not None and o.verdict is was:
            o = o.model_copy(update={"verdict": to, "reason": line})
        out.append(o)
    return out


def held_back(
    rows: list[RowVerdict],
    ops: list[OpVerdict],
    held: Mapping[str, str],
    row_failures: Mapping[RowKey, str],
) -> tuple[list[RowVerdict], list[OpVerdict]]:
    """The unmeasured (MISSING) rows and ops of the held-back ops as FAILED, the row's
    own failed kernel (else the op's compile failure) as reason."""
    out_rows = []
    for r in rows:
        why = held.get(op_key(r.key.repo, r.key.run_name))
        if why is not None and r.verdict is Verdict.MISSING:
            reason = row_failures.get(r.key, why)
            r = r.model_copy(update={"verdict": Verdict.FAILED, "reason": reason})
        out_rows.append(r)
    return out_rows, _ops_turned(ops, held, Verdict.MISSING, Verdict.FAILED)


def sentinels(
    rows: list[RowVerdict], identical: Collection[str], names: Mapping[str, str] | None = None
) -> tuple[list[RowVerdict], list[str]]:
    """Sentinel rows whose kernels are all identical never fail a PR on their own: a
    REGRESSION, IMPROVEMENT or INCONCLUSIVE of theirs is runner drift (or a launcher or
    runtime change): (rows, the drift lines, each row spelled as every report spells
    it: ``names``, :func:`zlbench.report.facts.op_names`), such a row PASS with the
    drift in its reason."""
    out, drift = [], []
    for r in rows:
        if op_key(r.key.repo, r.key.run_name) in identical and r.verdict in MOVED:
            said = r.verdict.value.lower()
            reason = r.reason if r.reason.lower().startswith(said) else f"{said}, {r.reason}"
            drift.append(f"{row_label(r.key, names)}: {reason}")
            why = f"sentinel with identical kernels ({r.verdict.value} shown, not failing): "
            r = r.model_copy(update={"verdict": Verdict.PASS, "reason": why + r.reason})
        out.append(r)
    return out, drift


def _compile_failed(v: GateVerdict, screen: ScreenEvidence) -> GateVerdict:
    """Kernels that no longer compile fail the gate: FAIL, exit 1, led by the compile
    line. An ERROR stays one unless nothing was measured because every op in scope was
    held back (then the PR's compiler is what failed, and no environment was measured
    to tell apart from the baseline's)."""
    unmeasured = bool(screen.held_back) and all(r.current_speedup is None for r in v.rows)
    error = v.exit_code == 2 and not unmeasured
    verdict, code = gate_outcome(v.ops, error=error, compile_failed=True)
    if verdict == "ERROR":
        return v
    update: dict = {}
    if unmeasured:
        update["environment"] = [f.model_copy(update={"mismatch": False}) for f in v.environment]
    counted = summary_line(verdict, "", Counter(v.counts), v.ops, *screened(v.codegen), rows=v.rows)
    rest = counted.removeprefix(f"{verdict}: ")
    update |= {
        "verdict": verdict,
        "exit_code": code,
        "summary": f"{verdict}: {screen.compile_lead}{SUMMARY_SEP}{rest}",
    }
    return v.model_copy(update=update)


__all__ = [
    "Evidence",
    "PairedEvidence",
    "ScreenEvidence",
    "decide",
    "failed_on_base",
    "held_back",
    "sentinels",
]
