"""The gate's A/B step against the base compiler, and its accept list.

``gate --base-compiler ENV``: after the screen against the stored baseline, the
suspects (ops judged REGRESSION) are measured again in alternating rounds by
the PR's compiler (this environment) and the base compiler (ENV), and every
row of them is judged on the paired statistic (:mod:`zlbench.gate.paired`)
instead of the confirmation re-measures. ``--full-ab`` measures every op of the
scope both ways. ``--accept FILE`` applies the accept list last
(:mod:`zlbench.gate.accept`). docs/judging.md and docs/ci.md say why and what
it costs.

Both environments are probed before any GPU time is spent: a base compiler that
cannot import triton (or pytest, or zlbench) is one line, exit 2; so is a base
whose runs measured another FlagGems, torch or GPU than the PR's.

``zlbench ab`` (:func:`run_ab`) uses the same interleaved machinery outside the gate:
two sides that differ in the compiler, in environment variables or both, over an op
set, in the pinned or own-best caliber (docs/judging.md "Calibers").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.accept import load_accept
from zlbench.gate.decide import Evidence, PairedEvidence, ScreenEvidence, decide
from zlbench.gate.load import BaselineSet
from zlbench.gate.paired import (
    DEFAULT_PAIRED_FLOOR_US,
    DEFAULT_PAIRED_THRESHOLD,
    pair_rounds,
    pair_samples,
    side_mismatch,
)
from zlbench.gate.replay import ReplayEvidence, replay_stats
from zlbench.models import (
    REPLAY_DIR,
    REPLAY_JSON,
    REPLAY_PAIRS,
    AbCompiler,
    AbSummary,
    AcceptEntry,
    GateVerdict,
    PairsFile,
    ReplayRun,
    RowKey,
    Verdict,
    load_json_model,
    resolve_inside,
)
from zlbench.models.replay import capture_rows_at
from zlbench.models.timing import PairSampling, Timing, paired_method_why, sides_timing
from zlbench.protocol.layout import RESULTS_DIR, op_key
from zlbench.protocol.pairs import PairRule
from zlbench.runner.ab.env import (
    PR_ENV,
    CompilerEnv,
    probe_compiler,
    resolve_env,
    same_compiler_why,
)
from zlbench.runner.ab.interleave import load_pairs, run_interleaved
from zlbench.runner.ab.rounds import (
    AB_DIR,
    AB_FILE,
    AbRounds,
    MeasureSide,
    load_rounds,
    load_summary,
    run_rounds,
    write_summary,
)
from zlbench.runner.batch.info import batch_ops

DEFAULT_ROUNDS = 3
MAX_ROUNDS = 10  # each round measures every suspect op with both compilers (as --confirm)


@dataclass
class AbOptions:
    """The A/B and accept options of one gate (plain values from the CLI)."""

    base_compiler: str | None = None  # ENV; None: no A/B
    full: bool = False  # every op both ways, not only the suspects
    rounds: int = DEFAULT_ROUNDS
    # None: the default when measuring; the A/B's recorded value when judging one
    # measured earlier (gate --results); given: that value either way
    threshold: float | None = None
    floor_us: float | None = None  # µs; 0: the relative threshold alone
    accept: Path | None = None  # the accept list file
    max_pairs: int | None = None  # the interleaved A/B's budget per row (None: the default)

    def rule(self) -> tuple[float, float]:
        """(paired threshold, floor µs) a gate that measures records."""
        t = DEFAULT_PAIRED_THRESHOLD if self.threshold is None else self.threshold
        return t, DEFAULT_PAIRED_FLOOR_US if self.floor_us is None else self.floor_us

    def pair_rule(self) -> PairRule:
        """The interleaved A/B's rule: threshold and floor, the pair budget."""
        rule = PairRule()  # the interleaved defaults (their own floor: docs/judging.md)
        if self.threshold is not None:
            rule = replace(rule, threshold=self.threshold)
        if self.floor_us is not None:
            rule = replace(rule, floor_us=self.floor_us)
        if self.max_pairs is not None:
            m = max(rule.min_pairs, self.max_pairs)
            rule = rule.with_sampling(max_pairs=m, max_pairs_plain=max(m, rule.max_pairs_plain))
        return rule


@dataclass
class AbContext:
    """What was checked before measuring: both sides and the accept list."""

    options: AbOptions
    base: CompilerEnv | None = None
    pr_id: AbCompiler = field(default_factory=AbCompiler)
    base_id: AbCompiler = field(default_factory=AbCompiler)
    accept: list[AcceptEntry] = field(default_factory=list)

    @property
    def ab(self) -> bool:
        return self.base is not None


def prepare(options: AbOptions, measuring: bool) -> AbContext:
    """Read the accept list and, when this gate measures an A/B, resolve and probe
    both compilers (one line, exit 2, on any problem)."""
    ctx = AbContext(options)
    if options.accept is not None:
        ctx.accept = load_accept(options.accept).accept
    t, floor = options.rule()
    if not 0.0 < t < 1.0:
        raise ZlbenchError(f"--ab-threshold must be in (0, 1), got {t}")
    if not 0.0 <= floor < math.inf:
        raise ZlbenchError(f"--ab-floor-us must be a finite number >= 0, got {floor}")
    if options.base_compiler is not None and measuring:
        ctx.base = resolve_env(options.base_compiler)
        ctx.pr_id = probe_compiler(PR_ENV)
        ctx.base_id = probe_compiler(ctx.base)
        if why := same_compiler_why(ctx.pr_id, ctx.base_id):
            raise ZlbenchError(why)
    elif options.full:
        raise ZlbenchError("--full-ab needs --base-compiler ENV")
    return ctx


def suspects(verdict: GateVerdict) -> list[str]:
    """The ops the screen judged REGRESSION: what a default A/B measures."""
    return [op_key(o.repo, o.run_name) for o in verdict.ops if o.verdict is Verdict.REGRESSION]


def ab_ops(verdict: GateVerdict, ctx: AbContext) -> list[str]:
    if ctx.options.full:
        judged = {op_key(r.key.repo, r.key.run_name) for r in verdict.rows if r.ratio is not None}
        return sorted(judged)
    return suspects(verdict)


def measure_ab(
    ctx: AbContext, verdict: GateVerdict, out: Path, measure: Callable[..., Path]
) -> AbSummary | None:
    """Measure the A/B rounds into ``<out>/ab/`` (nothing when there is no op to
    measure or the screen could not judge); ``measure(side_env, ops, dir)``."""
    ops = ab_ops(verdict, ctx) if verdict.exit_code != 2 else []
    if not ctx.ab or not ops:
        return None
    sides = {"pr": PR_ENV, "base": ctx.base}

    def side(name: str, keys: list[str], batch_out: Path) -> Path:
        return measure(sides[name], keys, batch_out)

    def check_round(dirs: tuple[Path, Path]) -> None:  # the first: stop early if unpaired
        check_sides(load_rounds([dirs]), dirs[1], ctx.options.base_compiler or "")

    # Full mode: the screen measured every op with the PR's compiler just before, as a
    # PR side would; it is round 1's PR side (no selection bias: every op, not the
    # suspects the screen picked). Suspects are always measured again.
    screen = out / RESULTS_DIR
    first_pr = screen if ctx.options.full and screen.is_dir() else None
    run: AbRounds = run_rounds(
        ops, ctx.options.rounds, out / AB_DIR, side, check=check_round, first_pr=first_pr
    )
    threshold, floor_us = ctx.options.rule()
    summary = AbSummary(
        note=FIRST_PR_NOTE if first_pr is not None else "",
        mode="full" if ctx.options.full else "suspects",
        rounds=ctx.options.rounds,
        order=run.order,
        threshold=threshold,
        floor_us=floor_us,
        ops=ops,
        seconds={k: round(v, 1) for k, v in run.seconds.items()},
        pr=ctx.pr_id,
        base=ctx.base_id,
    )
    write_summary(out / AB_DIR, summary)
    return summary


FIRST_PR_NOTE = "round 1's PR side is the screen's own replay of every op"
SCREEN_PR_NOTE = "interleaved: the PR side is the gate's own measure step (results/)"

# measure(side env, op keys, batch out dir, (meeting dir, side, rule JSON)) -> batch dir
MeasurePairedSide = Callable[[CompilerEnv, list[str], Path, tuple[Path, str, str]], Path]


def measure_interleaved(
    ctx: AbContext, ops: list[str], out: Path, measure: MeasurePairedSide, mode: str
) -> tuple[Path, AbSummary]:
    """The gate's measure step as an interleaved A/B of ``ops``: the PR's batch into
    ``<out>/results/`` (what the gate judges against the stored baseline too), the
    base's into ``<out>/ab/1/base/``, both at once, pairing row by row in
    ``<out>/ab/pairs/`` (:mod:`zlbench.runner.ab.interleave`); ``ab/ab.json`` and
    ``ab/pairs.json`` written. Returns (the PR's batch dir, the summary). ``mode``:
    ``changed`` (the ops the codegen screen could not prove unchanged, and the
    sentinels) or ``full`` (every op)."""
    assert ctx.base is not None
    rule = ctx.options.pair_rule()
    sides = {"pr": PR_ENV, "base": ctx.base}
    dests = {"pr": out / RESULTS_DIR, "base": out / AB_DIR / "1" / "base"}

    def side(name: str, keys: list[str], _dest: Path, meet: Path) -> Path:
        return measure(sides[name], keys, dests[name], (meet, name, rule.to_json()))

    run = run_interleaved(ops, out / AB_DIR, side)
    pr_dir, base_dir = run.dirs[0]
    loaded = load_rounds([(pr_dir, base_dir)])
    timing = check_sides(loaded, base_dir, ctx.options.base_compiler or "", rule.sampling)
    dealt = batch_ops(pr_dir)  # a shard's batch: its share of ``ops`` (zlbench merge: all)
    summary = interleaved_summary(
        run,
        rule.with_sampling(timing=timing),
        sorted(ops if dealt is None else set(ops) & dealt),
        ctx.pr_id,
        ctx.base_id,
        mode=mode,
        note=SCREEN_PR_NOTE,
        pr_is_screen=True,
    )
    write_summary(out / AB_DIR, summary)
    return pr_dir, summary


def interleaved_summary(run, rule, ops: list[str], pr, base, **extra) -> AbSummary:
    """``ab.json`` of one interleaved run: its order, wall times, how it sampled
    (``rule.sampling``, with the sides' recorded Timing) and the verdict policy it was
    judged by, the sides' compilers, and what the caller adds (mode, caliber...)."""
    return AbSummary(
        rounds=1,
        order=run.order,
        ops=ops,
        seconds={k: round(v, 1) for k, v in run.seconds.items()},
        pr=pr,
        base=base,
        method="interleaved",
        threshold=rule.threshold,
        floor_us=rule.floor_us,
        sampling=rule.sampling,
        threshold_plain=rule.threshold_plain,
        **extra,
    )


def check_sides(
    loaded, where: Path, base_env: str, sampling: PairSampling | None = None
) -> Timing | None:
    """Refuse an A/B whose base measured nothing, or measured another FlagGems,
    torch or GPU than the PR's side, or whose runs were timed differently (between the
    sides, within a side, or other than its recorded ``sampling`` says; a method that
    takes no paired samples): one line, exit 2. Returns the ``Timing`` both sides'
    runs recorded (None where none did)."""
    if loaded.base_rows == 0:
        raise ZlbenchError(
            f"the base compiler ({base_env}) measured no row in {where}: "
            "see the run.log files of its rounds"
        )
    if why := side_mismatch(loaded.pr_envs, loaded.base_envs):
        raise ZlbenchError(why)
    return check_sampling(loaded, where, sampling)


def check_sampling(loaded, where: Path, sampling: PairSampling | None) -> Timing | None:
    """The one ``Timing`` of both sides' runs (:func:`zlbench.models.timing.sides_timing`),
    checked against the ``sampling`` ab.json recorded (None: a rounds A/B, whose runs
    are compared with each other only) and, for an interleaved A/B, paired by its
    method; any mismatch is one line, exit 2."""
    try:
        timing = sides_timing(
            [e.timing for e in loaded.pr_envs], [e.timing for e in loaded.base_envs]
        )
    except ValueError as e:
        raise ZlbenchError(f"{where}: {e}") from None
    if sampling is None or timing is None:
        return timing
    if not timing.method.pairs:
        raise ZlbenchError(f"{where}: {paired_method_why(timing)}")
    if sampling.timing is not None and sampling.timing != timing:
        raise ZlbenchError(
            f"{where}: the A/B records sampling with {sampling.timing.text()}, its sides' "
            f"runs were timed {timing.text()}: re-measure the A/B"
        )
    return timing


def load_paired(
    verdict: GateVerdict, gate_dir: Path, options: AbOptions | None = None
) -> PairedEvidence | None:
    """The A/B of ``<gate_dir>/ab/`` as evidence for the judge (None when the dir holds
    none, or the verdict is an ERROR): its sides checked (not one compiler, the same
    FlagGems, the base measured), its recorded rule never looser than the judge's own
    ``options``, each row's paired statistic (pairs, or rounds of an older A/B)."""
    found = load_summary(gate_dir)
    if found is None or verdict.exit_code == 2:
        return None
    summary, dirs = found
    if why := same_compiler_why(summary.pr, summary.base, recorded=True):
        raise ZlbenchError(why)
    if options is not None:
        check_recorded_rule(summary, options, gate_dir / AB_DIR / AB_FILE)
        summary = with_rule(summary, options)
    loaded = load_rounds(dirs)
    check_sides(loaded, gate_dir / AB_DIR, summary.base.env, summary.sampling)
    pairs = (
        load_pairs(resolve_inside(gate_dir, AB_DIR)) if summary.method == "interleaved" else None
    )
    rule = summary_rule(summary)
    if pairs is not None:  # the sides' own runs tell each row's instrument
        paired = pair_samples(pairs, rule, loaded.rounds[0] if loaded.rounds else ({}, {}))
    else:
        paired = pair_rounds(loaded.rounds)
    return PairedEvidence(
        summary=summary, rows=paired, rule=rule, base_failed=dict(loaded.base_failed),
        base_measured=frozenset(loaded.base_measured),
    )  # fmt: skip


def load_replay(
    verdict: GateVerdict,
    gate_dir: Path,
    rule: PairRule | None = None,
    baseline: BaselineSet | None = None,
) -> ReplayEvidence | None:
    """The kernel replay of ``<gate_dir>/replay/`` as evidence (None when the dir holds
    none, or the verdict is an ERROR): its run, each replayed row's statistic
    re-derived from its samples, and the rows it lists as timing no Triton kernel that
    ``baseline``'s own captures prove (:func:`proven_no_launch`); pairs for a row the
    run does not list as replayed with matching outputs, or a row listed as timing no
    kernel that the captures do not prove, are refused (one line)."""
    if verdict.exit_code == 2 or not (gate_dir / REPLAY_DIR / REPLAY_JSON).exists():
        return None
    run = load_json_model(resolve_inside(gate_dir, f"{REPLAY_DIR}/{REPLAY_JSON}"), ReplayRun)
    pairs = load_json_model(resolve_inside(gate_dir, f"{REPLAY_DIR}/{REPLAY_PAIRS}"), PairsFile)
    rows = replay_stats(pairs, rule or PairRule())
    proven = proven_no_launch(run.no_launch, baseline)
    return ReplayEvidence(run=run, rows=rows, no_launch=proven)  # checked as it is made


def proven_no_launch(keys: Sequence[RowKey], baseline: BaselineSet | None) -> frozenset[RowKey]:
    """Of ``keys``, the rows whose op's capture in ``baseline`` (its
    ``codegen/launches.json``, read here) proves that their timed calls launch no Triton
    kernel (``LaunchCapture.proves_no_launch``); none without a baseline."""
    if not keys or baseline is None:
        return frozenset()
    from zlbench.runner.replay import load_captures

    ops = {op_key(k.repo, k.run_name) for k in keys}
    captures = load_captures(baseline, ops, lambda _: None)
    held = [baseline.ops[o] for o in sorted(ops) if o in baseline.ops]
    places = capture_rows_at([r.key(res.repo, res.run_name) for res in held for r in res.rows])
    return frozenset(
        k
        for k in keys
        if (c := captures.get(op_key(k.repo, k.run_name))) is not None
        and k in places
        and c.proves_no_launch(k.run_name, k.dtype, k.shape, places[k])
    )


def judge_ab(verdict: GateVerdict, gate_dir: Path, options: AbOptions | None = None) -> GateVerdict:
    """``verdict`` with the rows of ``<gate_dir>/ab/`` judged on their A/B (unchanged
    when the dir holds no A/B), at the summary's paired threshold and floor, or at
    those ``options`` gives (an op's ``paired_ops`` entry of the thresholds file for
    its threshold); the verdict's A/B summary says which judged. The A/B alone:
    a gate decides on all of its evidence at once (:func:`evidence`)."""
    return decide(verdict, Evidence(paired=load_paired(verdict, gate_dir, options)))


def summary_rule(summary: AbSummary) -> PairRule:
    """The pair rule an interleaved A/B recorded: its verdict policy (threshold, floor,
    the plain rows' threshold) and its sampling (``AbSummary.sampling``), the defaults
    for what it did not record."""
    rule = PairRule(threshold=summary.threshold, floor_us=summary.floor_us)
    if summary.threshold_plain is not None:
        rule = replace(rule, threshold_plain=summary.threshold_plain)
    if summary.sampling is not None:
        rule = replace(rule, sampling=summary.sampling)
    return rule


def default_rule(summary: AbSummary) -> PairRule:
    """The rule a gate that measured this A/B's method records without options."""
    if summary.method == "interleaved":
        return PairRule()
    return PairRule(threshold=DEFAULT_PAIRED_THRESHOLD, floor_us=DEFAULT_PAIRED_FLOOR_US)


def looser_than_default(summary: AbSummary, options: AbOptions) -> list[str]:
    """What ``summary`` records looser than the defaults and ``options`` does not give
    explicitly, each as ``what recorded (default D): FLAG``. A pair rule field no flag
    sets (min_pairs, confidence: either way can pass a regression, as INCONCLUSIVE or
    on too few pairs) counts whenever it differs from the default."""
    d, out, s = default_rule(summary), [], summary.sampling
    if options.threshold is None and summary.threshold > d.threshold:
        out.append(f"threshold {summary.threshold:g} (default {d.threshold:g}): --ab-threshold")
    if options.floor_us is None and summary.floor_us > d.floor_us:
        out.append(f"floor {summary.floor_us:g} µs (default {d.floor_us:g}): --ab-floor-us")
    for k in ("max_pairs", "max_pairs_plain"):  # fewer pairs: more rows INCONCLUSIVE
        v = getattr(s, k) if s is not None else None
        if options.max_pairs is None and v is not None and v < getattr(d, k):
            out.append(f"{k} {v} (default {getattr(d, k)}): --ab-max-pairs")
    for k in ("min_pairs", "block_pairs_plain", "threshold_plain", "confidence"):
        v = summary.threshold_plain if k == "threshold_plain" else getattr(s, k, None)
        if v is not None and v != getattr(d, k):
            out.append(f"{k} {v:g} (default {getattr(d, k):g}): no flag sets it")
    return out


def check_recorded_rule(summary: AbSummary, options: AbOptions, where: Path) -> None:
    """Refuse an A/B whose recorded rule is looser than the defaults where the judge's
    own options do not give it (an artifact's ab.json never loosens the gate): one
    line, exit 2, naming the flag that judges at a chosen value (docs/judging.md)."""
    loose = looser_than_default(summary, options)
    if loose:
        raise ZlbenchError(
            f"{where}: the A/B records a rule looser than the defaults: {'; '.join(loose)}"
            " - pass the flag with the value to judge at (a flagless field: re-measure)"
        )


def with_rule(summary: AbSummary, options: AbOptions) -> AbSummary:
    """``summary`` with the threshold and floor ``options`` gives explicitly (a gate
    re-judging an A/B measured earlier); its note names what was recorded."""
    update = {}
    if options.threshold is not None and options.threshold != summary.threshold:
        update["threshold"] = options.threshold
    if options.floor_us is not None and options.floor_us != summary.floor_us:
        update["floor_us"] = options.floor_us
    if not update:
        return summary
    was = f"re-judged: recorded threshold {summary.threshold:g}, floor {summary.floor_us:g} µs"
    update["note"] = f"{summary.note}; {was}" if summary.note else was
    return summary.model_copy(update=update)


def judge_accept(verdict: GateVerdict, ctx: AbContext, source: str) -> GateVerdict:
    """``verdict`` with the accept list applied (unchanged without one); the accept
    list alone (:func:`evidence` gathers it with the rest)."""
    if not ctx.accept:
        return verdict
    return decide(verdict, Evidence(accept=list(ctx.accept), accept_source=source))


def evidence(
    verdict: GateVerdict,
    ctx: AbContext,
    gate_dir: Path,
    measure: Callable[..., Path] | None = None,
    screen: ScreenEvidence | None = None,
    baseline: BaselineSet | None = None,
) -> Evidence:
    """Everything the judge decides on besides ``verdict``'s own rows: the A/B
    (measured into ``<gate_dir>/ab/`` first when ``measure`` is given: a gate that
    measures; read from ``<gate_dir>/ab/`` when it holds one: also a merged or earlier
    gate dir), the kernel replay of ``<gate_dir>/replay/`` when it holds one (judged at
    the A/B's rule; its rows that time no Triton kernel checked against ``baseline``'s
    captures), the accept list, and ``screen`` (:mod:`zlbench.gate.decide`)."""
    if measure is not None:
        measure_ab(ctx, verdict, gate_dir, measure)
    paired = load_paired(verdict, gate_dir, ctx.options)
    rule = paired.rule if paired is not None else None
    return Evidence(
        paired=paired,
        replay=load_replay(verdict, gate_dir, rule, baseline),
        accept=list(ctx.accept),
        accept_source=str(ctx.options.accept or ""),
        screen=screen,
    )


# --------------------------------------------------------------------------- zlbench ab


__all__ = [
    "AbOptions",
    "MeasureSide",
    "evidence",
    "judge_ab",
    "judge_accept",
    "load_paired",
    "measure_ab",
    "prepare",
]
