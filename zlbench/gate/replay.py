"""Rows timed by the kernel-replay tier, judged by the same pair rule as the op path
(pure; issue 51, docs/replay.md).

A changed row whose timed launches could all be replayed standalone was timed PR and
base binaries interleaved on one GPU (``zlbench.plugins.replay``); its op was then not
run through FlagGems, so the stored-baseline judgement left it MISSING. Here such a
row is judged on its replay pairs exactly as an A/B row is
(:func:`zlbench.gate.paired.judge_paired` at the row's paired threshold, floor and the
pair rule), and its reason says which instrument timed it. The other rows of a
replayed op, whose timed kernels the screen proved identical to the base's, PASS as
proven identical. A row the replay step found proven by its capture to time no Triton
kernel (``ReplayRun.no_launch``) PASSes as such only when the baseline's own captures,
read by the judge, prove it too (``ReplayEvidence.no_launch``,
``LaunchCapture.proves_no_launch``): a row listed there that they do not prove is
refused in one line.

What the judge re-derives (docs/security.md "The judge re-derives"): the statistic of
each row from its samples (:func:`replay_stats`); and it refuses,
with one line, pairs for a row that ``replay.json`` does not list as replayed with
matching outputs (a row whose outputs differed, or that fell back, has no samples in
a gate's own artifact). A replayed row with fewer complete pairs than the rule's
minimum stays MISSING: nothing the replay wrote makes a row PASS without its pairs.
A row the op path measured keeps the op path's verdict.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from zlbench.errors import ZlbenchError
from zlbench.gate.numbers import counted
from zlbench.gate.paired import judge_paired, pair_samples, paired_threshold
from zlbench.models import OpVerdict, ReplayRun, RowKey, RowVerdict, Verdict
from zlbench.models.ab import PairedRow, PairsFile
from zlbench.protocol.layout import op_key
from zlbench.protocol.pairs import PairRule

REPLAYED = "kernel replay"
IDENTICAL = "kernels identical to the base's (codegen screen); its op judged by kernel replay"
NO_LAUNCH = (
    "no Triton kernel in its timed calls (the baseline's launch capture): no compiler "
    "changes its time; not timed"
)


@dataclass(frozen=True)
class ReplayEvidence:
    """The replay tier's outcome (``replay/replay.json``) and each replayed row's
    paired statistic, re-derived from ``replay/pairs.json``'s samples."""

    run: ReplayRun
    rows: Mapping[RowKey, PairedRow]
    # of ``run.no_launch``, the rows the baseline's captures prove to time no Triton
    # kernel, as the judge read them (re-derived, never believed from replay.json)
    no_launch: frozenset[RowKey] = frozenset()

    def __post_init__(self) -> None:
        check_replay(self.run, self.rows, self.no_launch)  # nothing that does not add up


def replay_stats(pairs: PairsFile, rule: PairRule) -> dict[RowKey, PairedRow]:
    """Each replayed row's statistic re-derived from its samples: the pair rule over
    balanced blocks of pairs (``AB`` + ``BA``,
    :data:`zlbench.protocol.pairs.REPLAY_BLOCK_PAIRS`: the replay's strict order makes
    the first sample of a pair a position, which such a block cancels); never plain."""
    return pair_samples(pairs, rule, replayed=True)


def check_replay(
    run: ReplayRun, paired: Mapping[RowKey, PairedRow], no_launch: Collection[RowKey] = ()
) -> None:
    """Refuse pairs for a row that ``run`` does not list as replayed with matching
    outputs, and a row ``run`` lists as proven by its capture that the baseline's
    captures do not prove (``no_launch``: those the judge re-derived): one line (not a
    gate's own artifact)."""
    proven = set(no_launch)
    for key in run.no_launch:
        if key not in proven:
            raise ZlbenchError(
                f"replay/replay.json: {key.label()} is listed as timing no Triton kernel, "
                "but the baseline's launch capture does not show it: not a gate's own artifact"
            )
    ok = {r.key for r in run.rows if r.timed_by_replay}
    for key in paired:
        if key not in ok:
            raise ZlbenchError(
                f"replay/pairs.json: {key.label()} has samples, but replay/replay.json does "
                "not list it as replayed with matching outputs: not a gate's own artifact"
            )


def apply_replay(
    rows: list[RowVerdict],
    ev: ReplayEvidence,
    *,
    baseline: str,
    threshold: float,
    floor_us: float,
    rule: PairRule,
    per_op: Mapping[str, float] | None = None,
) -> list[RowVerdict]:
    """``rows`` with the MISSING ones that the replay timed judged on their pairs, the
    MISSING ones it proved identical PASS, and the MISSING ones the baseline's captures
    prove to time no Triton kernel PASS; every other row as it was (``ev`` was checked
    when made: :func:`check_replay`)."""
    identical = set(ev.run.identical)
    no_launch = set(ev.run.no_launch) & set(ev.no_launch)
    out = []
    for r in rows:
        if r.verdict is not Verdict.MISSING:  # the op path measured it: its verdict stands
            out.append(r)
        elif r.key in ev.rows:
            out.append(_judged(r, ev.rows[r.key], baseline, threshold, floor_us, rule, per_op))
        elif r.key in identical:
            out.append(r.model_copy(update={"verdict": Verdict.PASS, "reason": IDENTICAL}))
        elif r.key in no_launch:
            out.append(r.model_copy(update={"verdict": Verdict.PASS, "reason": NO_LAUNCH}))
        else:
            out.append(r)
    return out


def _judged(
    r: RowVerdict,
    p: PairedRow,
    baseline: str,
    threshold: float,
    floor_us: float,
    rule: PairRule,
    per_op: Mapping[str, float] | None,
) -> RowVerdict:
    if p.ratio is None:  # fewer complete pairs than the rule asks: never a PASS
        why = (
            f"{REPLAYED}: only {counted(p.rounds, 'complete pair')}, fewer than the "
            f"rule's {rule.min_pairs}: not judged"
        )
        return r.model_copy(update={"ab": p, "reason": why})
    t = paired_threshold(r.key, threshold, per_op or {})
    start = r.model_copy(update={"verdict": Verdict.PASS, "reason": ""})
    p = p.model_copy(update={"instrument": "kernel-replay"})
    judged = judge_paired(start, p, t, baseline, True, floor_us, rule)
    reason = f"{REPLAYED}: {judged.reason}" if judged.reason else REPLAYED
    return judged.model_copy(update={"reason": reason})


def replayed_ops(ops: list[OpVerdict], rows: list[RowVerdict]) -> list[OpVerdict]:
    """The ops left MISSING because the replay, not FlagGems, timed them: once no row of
    theirs is MISSING, their verdict comes from their rows again (restated next)."""
    still = {op_key(r.key.repo, r.key.run_name) for r in rows if r.verdict is Verdict.MISSING}
    have = {op_key(r.key.repo, r.key.run_name) for r in rows}
    out = []
    for o in ops:
        k = op_key(o.repo, o.run_name)
        if o.verdict is Verdict.MISSING and k in have and k not in still:
            o = o.model_copy(update={"verdict": Verdict.PASS, "reason": ""})
        out.append(o)
    return out
