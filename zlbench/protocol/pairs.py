"""The interleaved paired A/B: its order, its statistic and its stopping rule (pure).

``zlbench gate --base-compiler ENV`` measures the rows to judge with two long-lived
benchmark processes on one GPU, one per compiler (the PR's and the base's), that
take turns row by row (docs/judging.md "A/B against the base compiler"). For each
row the two processes take *samples* in slots: pair ``k`` is slots ``2k`` and
``2k + 1``, one sample of each side, in an order that is random per row but
balanced: pairs come in blocks of two, ``AB BA`` or ``BA AB`` (:func:`slot_side`),
so each side goes first equally often and a drift within a block moves both sides
alike. Both processes decide when to stop from the same samples with the same rule
(:func:`decide`), so they stop at the same pair without talking to each other.

The statistic of a row is the median over its pairs of ``PR / base - 1`` (its
*change*, + = the PR is slower) and of ``PR µs - base µs`` (its *delta*), each with
a distribution-free confidence interval for the median (order statistics of the
pairs: the sign test inverted). A row is

* ``REGRESSION`` when both intervals lie beyond the threshold and the floor: slower
  than the base beyond ``threshold`` *and* by more than ``floor_us`` per call;
* ``PASS`` when either interval lies within them (the row cannot be slower beyond
  both), ``IMPROVEMENT`` when faster beyond both (reported only by a full A/B);
* undecided otherwise: more pairs, up to the budget; still undecided after it,
  ``INCONCLUSIVE``.

A row timed by the plain fallback (no CUDA graph: host launch overhead and syncs are
timed too) is not a series of independent pairs: an interleaved A/A on the H200 saw
such a row hold one process 17 % above the other for ten pairs on end, then swap
(docs/judging.md "Rows timed without CUDA graphs"). Its intervals are therefore those
of *block medians* (:func:`block_stats`: the median change of each run of
``block_pairs_plain`` consecutive pairs; batch means, as for any autocorrelated
series), so a state that lasts a few blocks widens the interval instead of deciding
the row; such a row needs at least five blocks (20 pairs at 90 %) to be decided.
Block medians do not cancel a state that lasts the whole row, and on the H200 one did:
a plain row of a full A/A read +20.9 % [+10.6, +61.4] over five blocks (its samples
hop between modes 250-460 µs apart, host launch time). So a plain row is also judged
at a threshold of its own, ``threshold_plain`` (25 %; the largest such A/A change seen
was 21 %): it fails only when it is slower than that beyond its interval.

The kernel replay (issue 51, ``zlbench.plugins.replay.timing``) takes its samples in a
fixed order, ``AB BA AB BA ...``, one process timing both sides. On an H100
(2026-12-06, docs/measurements.md "thirty-second session") three replay A/As saw the
first sample of each pair of a two-launch row 4-9 % slower than the second, whichever
side it was (amax, mean, prod, vector_norm, two split-KV flash-attention rows): per
pair the change swung ±7 % and those rows stayed INCONCLUSIVE after 16 pairs. A
replayed row's intervals are therefore over *balanced blocks* of
:data:`REPLAY_BLOCK_PAIRS` pairs (``row_stats(..., replayed=True)``): each block holds
each side once first and once second, so its median change (the mean of two) cancels
such a position effect, and the row is judged at the graph rows' threshold. It needs
five blocks (10 pairs at 90 %) to be decided. Re-judged this way, the 18 such rows of
those A/As PASS at 10 pairs, within ±3 %.

A replayed sample is the median of single calls of one side: :data:`REPLAY_REPS` of
them, fewer for a long call (:func:`sample_reps`: as many as span
:data:`SAMPLE_TARGET_MS` of the slower side's probe call, at least one). The median of
ten guards a 10 µs kernel's sample against one call's host or clock hiccup; a call of
5 ms or more is its own such average, and ten of them made v7's 39 rows of 10 ms or
more 11 of the replay's 33 modelled minutes (docs/replay.md). The cost model charges
the same count (``codegen.replay_plan.replay_cost_s``).

Imported by the plugins (which measure) and by the judge; stdlib and
:mod:`zlbench.models.timing` only (the rule's sampling, :class:`PairSampling`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from statistics import median
from typing import Any

from zlbench.models.timing import SAMPLING_FIELDS, PairSampling

PAIR_DIR_VAR = "ZLBENCH_PAIR_DIR"  # the dir both sides' processes meet in
PAIR_SIDE_VAR = "ZLBENCH_PAIR_SIDE"  # "pr" or "base"
PAIR_RULE_VAR = "ZLBENCH_PAIR_RULE"  # PairRule as JSON (both sides get the same)
DONE_PREFIX = "done."  # <pair dir>/done.<side>: that side's whole batch has ended
SIDES = ("pr", "base")
# An op of one side of an interleaved A/B takes this many times the seconds one process
# measured alone: the two sides' processes run at once, their timing takes turns on the
# GPU, the rest (start-up, Python, inputs, first calls) overlaps. On H100s (v5's broad
# change, each side's ops in one process, against the recorded seconds) each side's
# ops took 1.56-1.57 (thirty-seventh session), 1.49 (forty-second) and 1.10 (forty-third)
# times their seconds: 1.4, their mean (refit in the forty-fourth session from 1.6, the
# thirty-seventh's alone; the forty-fourth's gate, held out, 1.46).
AB_SIDE_FACTOR = 1.4

REGRESSION, PASS, IMPROVEMENT, INCONCLUSIVE = "REGRESSION", "PASS", "IMPROVEMENT", "INCONCLUSIVE"

# NVML clock event (throttle) reasons that mean the GPU slowed itself down: a sample
# taken under one of them is not comparable with its pair (the pair is dropped).
# Software power capping (0x4) is the normal state of a busy H200 and is kept.
THROTTLE_MASK = 0x8 | 0x20 | 0x40 | 0x80  # HW slowdown, SW/HW thermal, HW power brake
# Pairs per balanced block of a replayed row (module docstring): AB + BA.
REPLAY_BLOCK_PAIRS = 2
# A replayed sample's single calls (module docstring): at most REPLAY_REPS, as many as
# span SAMPLE_TARGET_MS of the slower side's call, at least one.
REPLAY_REPS = 10
SAMPLE_TARGET_MS = 5.0


def sample_reps(
    call_ms: float, reps: int = REPLAY_REPS, target_ms: float | None = SAMPLE_TARGET_MS
) -> int:
    """Single calls per replayed sample for a call of ``call_ms`` (module docstring):
    ``reps`` when ``target_ms`` is None or the call is not a positive finite time, else
    ``ceil(target_ms / call_ms)`` within ``[1, reps]``."""
    reps = max(1, int(reps))
    if target_ms is None or not (call_ms > 0 and call_ms != float("inf")):
        return reps
    return max(1, min(reps, -int(-target_ms // call_ms)))


@dataclass(frozen=True)
class PairRule:
    """What both sides of an interleaved A/B stop by and the judge judges by: the
    verdict policy (threshold, floor, the plain rows' threshold) and how the rows are
    sampled (``sampling``: the adaptive pairs and the per-sample timing,
    :class:`zlbench.models.timing.PairSampling`, recorded in ``ab.json``)."""

    threshold: float = 0.03  # relative: slower than the base beyond this ...
    # ... and by more than this many µs per call: interleaved A/A gates on the H200 showed
    # per-process offsets of up to 0.15-0.25 µs on ~3 µs kernels that pairing does not
    # cancel (docs/judging.md "The interleaved A/B")
    floor_us: float = 0.2
    # the relative threshold of a row timed by the plain fallback (at least ``threshold``):
    # one process per side cannot tell such a row's process state from a change below it
    threshold_plain: float = 0.25
    sampling: PairSampling = PairSampling()

    # the sampling's adaptive pairs, read where the rule is applied
    @property
    def min_pairs(self) -> int:
        return self.sampling.min_pairs

    @property
    def max_pairs(self) -> int:
        return self.sampling.max_pairs

    @property
    def max_pairs_plain(self) -> int:
        return self.sampling.max_pairs_plain

    @property
    def block_pairs_plain(self) -> int:
        return self.sampling.block_pairs_plain

    @property
    def confidence(self) -> float:
        return self.sampling.confidence

    def with_sampling(self, **changes: Any) -> PairRule:
        """This rule with the sampling's fields ``changes`` changed (validated)."""
        sampling = PairSampling.model_validate({**self.sampling.model_dump(), **changes})
        return replace(self, sampling=sampling)

    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sampling"}
        return json.dumps(
            data | {"sampling": self.sampling.model_dump(mode="json")}, sort_keys=True
        )

    @classmethod
    def from_json(cls, text: str) -> PairRule:
        """The rule of :meth:`to_json` (unknown keys ignored; the sampling's fields at
        the top level, as before they were a model, read into it)."""
        data = json.loads(text)
        policy = {
            f.name: data[f.name] for f in fields(cls) if f.name != "sampling" and f.name in data
        }
        given = dict(data.get("sampling") or {}) | {
            k: data[k] for k in SAMPLING_FIELDS if k in data
        }
        known = {k: v for k, v in given.items() if k in PairSampling.model_fields}
        return cls(**policy, sampling=PairSampling.model_validate(known))

    def budget(self, plain: bool) -> int:
        return self.sampling.budget(plain)

    def threshold_for(self, plain: bool) -> float:
        """The relative threshold of a row (``threshold_plain`` for a plain row)."""
        return max(self.threshold, self.threshold_plain) if plain else self.threshold

    def block(self, plain: bool) -> int:
        """Pairs per block of a row's intervals (1 for a row timed with a graph)."""
        return self.sampling.block(plain)


def pair_environ(root: object, side: str, rule_json: str | None, gpu: str) -> dict[str, str]:
    """The environment of one A/B side's benchmark process on ``gpu``: the meeting
    dir, the side, the rule, and the GPU's turn file in the meeting dir (both sides'
    processes of one GPU take the same turn, :mod:`zlbench.protocol.turn`)."""
    from zlbench.protocol.turn import GPU_TURN_VAR

    env = {
        PAIR_DIR_VAR: str(root),
        PAIR_SIDE_VAR: side,
        GPU_TURN_VAR: f"{root}/gpu-{gpu or 'default'}.lock",
    }
    if rule_json:
        env[PAIR_RULE_VAR] = rule_json
    return env


def other(side: str) -> str:
    return "base" if side == "pr" else "pr"


def _block_first(key: str, block: int) -> str:
    """The side that goes first in the first pair of ``block`` of row ``key``."""
    digest = hashlib.sha256(f"{key}|{block}".encode()).digest()
    return SIDES[digest[0] & 1]


def slot_side(key: str, slot: int) -> str:
    """Which side takes the sample of ``slot`` (0, 1, 2, ...) of row ``key``: pairs
    in blocks of two, ``AB BA`` or ``BA AB`` at random per block (seeded by the row)."""
    pair, second = divmod(slot, 2)
    block, later = divmod(pair, 2)
    first = _block_first(key, block)
    first = other(first) if later else first
    return other(first) if second else first


def median_ci(values: Sequence[float], confidence: float) -> tuple[float, float] | None:
    """A distribution-free interval for the median of ``values`` (order statistics:
    the widest ``[x_(k), x_(n-k+1)]`` whose coverage is at least ``confidence``);
    None when ``values`` are too few for that coverage (e.g. fewer than 5 at 90 %)."""
    x = sorted(values)
    n = len(x)
    # P(B <= j) for B ~ Binomial(n, 1/2); the interval [x_(k), x_(n-k+1)] misses the
    # median with probability 2 * P(B <= k - 1). In exact integers (the float 2.0**n
    # overflows past n = 1023): 2 * cum / 2**n > alpha, alpha = p / q exactly.
    p, q = (1.0 - confidence).as_integer_ratio()
    limit = p << max(n - 1, 0)  # 2 * cum * q > p * 2**n  <=>  cum * q > p * 2**(n-1)
    k, term, cum = 0, 1, 0  # term: comb(n, k), cum: sum of comb(n, j) for j <= k
    while k < n // 2:
        cum += term
        if cum * q > limit:
            break
        term = term * (n - k) // (k + 1)
        k += 1
    if k == 0:
        return None
    return x[k - 1], x[n - k]


@dataclass
class PairStats:
    """One row's pairs summed up (changes relative, + = the PR is slower)."""

    pairs: int
    change: float | None = None
    change_lo: float | None = None
    change_hi: float | None = None
    delta_us: float | None = None
    delta_lo_us: float | None = None
    delta_hi_us: float | None = None
    blocks: int | None = None  # the intervals are over this many block medians
    plain: bool = False  # timed by the plain fallback: judged at ``threshold_plain``


def pair_stats(pr_ms: Sequence[float], base_ms: Sequence[float], confidence: float) -> PairStats:
    """The change and delta of a row's kept pairs (PR and base per-call ms, in pair
    order), with their intervals (None while too few pairs)."""
    pairs = _kept(pr_ms, base_ms)
    s = PairStats(pairs=len(pairs))
    changes = [p / b - 1.0 for p, b in pairs]
    return _summed(s, changes, [(p - b) * 1000.0 for p, b in pairs], confidence)


def _kept(pr_ms: Sequence[float], base_ms: Sequence[float]) -> list[tuple[float, float]]:
    return [(p, b) for p, b in zip(pr_ms, base_ms, strict=True) if p > 0 and b > 0]


def _summed(
    s: PairStats, changes: list[float], deltas: list[float], confidence: float
) -> PairStats:
    """``s`` with the medians of ``changes`` and ``deltas`` and their intervals (none
    while too few values, or no value at all)."""
    if not changes:
        return s
    s.change, s.delta_us = median(changes), median(deltas)
    ci_c, ci_d = median_ci(changes, confidence), median_ci(deltas, confidence)
    if ci_c is not None and ci_d is not None:
        (s.change_lo, s.change_hi), (s.delta_lo_us, s.delta_hi_us) = ci_c, ci_d
    return s


def block_stats(
    pr_ms: Sequence[float],
    base_ms: Sequence[float],
    block: int,
    confidence: float,
    *,
    plain: bool = False,
) -> PairStats:
    """:func:`pair_stats` over block medians: the change and delta of each run of
    ``block`` consecutive pairs (a last, shorter run is left out of the intervals), the
    row's change and delta the medians of those, and their intervals those of
    :func:`median_ci` over the blocks (None while too few blocks). ``plain``: the row
    was timed by the plain fallback (it is judged at the plain threshold)."""
    if block <= 1:
        return replace(pair_stats(pr_ms, base_ms, confidence), plain=plain)
    pairs = _kept(pr_ms, base_ms)
    n = len(pairs) // block
    runs = [pairs[i * block : (i + 1) * block] for i in range(n)]
    changes = [median(p / b - 1.0 for p, b in run) for run in runs]
    deltas = [median((p - b) * 1000.0 for p, b in run) for run in runs]
    s = PairStats(pairs=len(pairs), blocks=n, plain=plain)
    return _summed(s, changes, deltas, confidence)


def row_stats(
    pr_ms: Sequence[float],
    base_ms: Sequence[float],
    rule: PairRule,
    plain: bool,
    *,
    replayed: bool = False,
) -> PairStats:
    """A row's statistic as the rule reads it: over its pairs; for a row timed by the
    plain fallback over its block medians; for a replayed row over its balanced blocks
    of :data:`REPLAY_BLOCK_PAIRS` pairs (module docstring)."""
    if replayed:
        return block_stats(pr_ms, base_ms, REPLAY_BLOCK_PAIRS, rule.confidence)
    return block_stats(pr_ms, base_ms, rule.block(plain), rule.confidence, plain=plain)


def samples_plain(samples: Sequence[Mapping[str, Any]]) -> bool:
    """A row is plain when any of its samples was timed by the plain fallback (both
    sides read the same samples, so they agree on it and stop at the same pair)."""
    return any(bool(x.get("plain")) for x in samples)


def read_samples(d: Path) -> list[dict[str, Any]]:
    """The samples of one row's meeting dir (``s0.json``, ``s1.json``, ...) in slot
    order, up to the first missing or unreadable one."""
    out = []
    while (p := d / f"s{len(out)}.json").is_file():
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            break
    return out


def complete_pairs(samples: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float], int]:
    """(PR ms, base ms) of a row's complete pairs in slot order (slots ``2k``, ``2k+1``
    holding one sample of each side), leaving out pairs with a throttled sample
    (:func:`throttled`), and how many pairs were left out for that."""
    pr, base, dropped = [], [], 0
    for i in range(0, len(samples) - 1, 2):
        a, b = samples[i], samples[i + 1]
        by_side = {a.get("side"): a, b.get("side"): b}
        if set(by_side) != set(SIDES):
            continue
        if throttled(a.get("reasons")) or throttled(b.get("reasons")):
            dropped += 1
            continue
        pr.append(float(by_side["pr"]["ms"]))
        base.append(float(by_side["base"]["ms"]))
    return pr, base, dropped


def decide(s: PairStats, rule: PairRule, *, full: bool = True) -> str | None:
    """REGRESSION, PASS or IMPROVEMENT once the intervals decide (module docstring;
    a plain row, ``s.plain``, at ``rule.threshold_plain``),
    None while undecided (or fewer than ``rule.min_pairs`` pairs). ``full``: a faster
    row beyond both the threshold and the floor is IMPROVEMENT, else PASS."""
    if s.pairs < rule.min_pairs or s.change_lo is None or s.change_hi is None:
        return None
    assert s.delta_lo_us is not None and s.delta_hi_us is not None
    t, floor = rule.threshold_for(s.plain), rule.floor_us
    if s.change_lo > t and s.delta_lo_us > floor:
        return REGRESSION
    if s.change_hi <= t or s.delta_hi_us <= floor:
        faster = s.change_hi < -t and s.delta_hi_us < -floor
        return IMPROVEMENT if full and faster else PASS
    return None


def final_decision(s: PairStats, rule: PairRule, *, full: bool = True) -> str:
    """The row's verdict after its pairs: :func:`decide`'s, else INCONCLUSIVE."""
    return decide(s, rule, full=full) or INCONCLUSIVE


def should_stop(s: PairStats, rule: PairRule, plain: bool, taken: int | None = None) -> bool:
    """Both sides stop a row's pairs when it is decided or its budget is spent: kept
    pairs, or ``taken`` pairs in all (dropped ones included) reaching twice it."""
    budget = rule.budget(plain)
    spent = s.pairs >= budget or (taken is not None and taken >= 2 * budget)
    return spent or decide(s, rule) is not None


def throttled(reasons: int | None) -> bool:
    """A sample taken while the GPU slowed itself (:data:`THROTTLE_MASK`)."""
    return bool(reasons is not None and reasons & THROTTLE_MASK)


__all__ = [
    "IMPROVEMENT",
    "DONE_PREFIX",
    "INCONCLUSIVE",
    "PAIR_DIR_VAR",
    "PAIR_RULE_VAR",
    "PAIR_SIDE_VAR",
    "PASS",
    "REGRESSION",
    "REPLAY_BLOCK_PAIRS",
    "REPLAY_REPS",
    "SAMPLE_TARGET_MS",
    "PairRule",
    "PairStats",
    "block_stats",
    "complete_pairs",
    "decide",
    "final_decision",
    "median_ci",
    "other",
    "pair_environ",
    "pair_stats",
    "read_samples",
    "row_stats",
    "sample_reps",
    "samples_plain",
    "should_stop",
    "slot_side",
    "throttled",
]
