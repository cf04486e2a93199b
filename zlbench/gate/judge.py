"""Judging: the rows of a results set against the rows of a baseline set.

Pure: takes the in-memory sets of :mod:`zlbench.gate.load`, returns verdict
models. The unit is a row (``models.RowKey``); an op's verdict is the worst of
its rows' verdicts, its own failure / fallback, and the geometric mean of its
row ratios against the op-aggregate threshold (docs/judging.md); the rules
themselves (:func:`classify`, the limit, the op's aggregation) are
:mod:`zlbench.gate.aggregate`'s.

Besides the judged ``ratio``, every row verdict carries the numbers a reader
checks it against: FlagGems and torch latencies in µs, the uncorrected kernel
time change and the judged change (``1 / ratio - 1``, + = slower).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The rules are gate.aggregate's; JUDGED, OP_ORDER, classify and limit_of are
# importable from here too.
from zlbench.gate.aggregate import (
    JUDGED,
    classify,
    geomean_reason,
    improvement_limit,
    limit_of,
    op_outcome,
    rows_reason,
)
from zlbench.gate.aggregate import OP_ORDER as OP_ORDER  # re-exported
from zlbench.gate.estimators import Estimator, estimate, positive, torch_drift
from zlbench.gate.load import BaselineSet, OpRun, ResultsSet, in_scope
from zlbench.gate.markers import row_fallbacks
from zlbench.gate.numbers import inverse_change, unusable_latency, with_latencies
from zlbench.gate.thresholds import aggregate_threshold, improvement_threshold, row_threshold
from zlbench.models import (
    BaselineResult,
    BaselineRow,
    OpVerdict,
    Row,
    RowKey,
    RowVerdict,
    RunStatus,
    ThresholdsFile,
    Verdict,
)

FAILED_STATUSES = frozenset({RunStatus.FAIL, RunStatus.TIMEOUT, RunStatus.CRASH, RunStatus.ERROR})
# ops_status.csv notes of ops a batch left out on purpose (zlbench.runner.batch.resume).
LEFT_OUT_NOTES = ("dismissed", "unconditional skip")


@dataclass
class JudgeConfig:
    scope: set[str] | None = None  # op keys "<repo>/<run_name>" to judge; None: all
    dismissed: dict[str, str] = field(default_factory=dict)  # op key -> reason


@dataclass
class OpCase:
    """Everything judged about one op; :func:`op_verdict` turns it into an OpVerdict."""

    repo: str
    run_name: str
    op: str  # selector
    rows: list[RowVerdict] = field(default_factory=list)
    failure: str = ""  # op failed / crashed / timed out
    fallback: str = ""  # op-level marker that no single row carries
    note: str = ""
    new: bool = False  # not in the baseline
    log_tail: list[str] = field(default_factory=list)
    duration_s: float | None = None

    def own_verdicts(self) -> set[Verdict]:
        """The op's verdicts besides its rows': its failure, its fallback, NEW."""
        own = {Verdict.NEW} if self.new else set()
        if self.failure:
            own.add(Verdict.FAILED)
        if self.fallback:
            own.add(Verdict.FALLBACK)
        return own


@dataclass
class HostSpeed:
    """One host's torch latencies vs the baseline's: the machine-speed correction."""

    host: str | None
    drift: float  # median current / baseline torch latency
    rows: int  # matched rows the median is over
    applied: bool  # the estimator divides it out (torch_normalized)


@dataclass
class Judgement:
    cases: dict[str, OpCase]
    measured_rows: int  # current rows with a speedup, in scope
    overlap: int  # baseline ops in scope that the results hold
    estimator: Estimator
    # op key -> the torch drift its rows were judged with (torch_normalized), reused
    # to confirm it: the drift of the machine that measured it
    drift: dict[str, float] = field(default_factory=dict)
    hosts: list[HostSpeed] = field(default_factory=list)


# --------------------------------------------------------------------------- rows


def judge_row(
    key: RowKey,
    base: BaselineRow | None,
    cur: Row | None,
    ratio: float | None,
    th: ThresholdsFile,
    fallback: str = "",
) -> RowVerdict:
    """The verdict of one row (not for rows of a failed or unmeasured op)."""
    cur_s = cur.speedup if cur else None
    if base is None:
        v = RowVerdict(
            key=key, verdict=Verdict.NEW, current_speedup=cur_s, reason="not in baseline"
        )
        return with_latencies(v, None, cur)
    v = with_latencies(
        RowVerdict(key=key, verdict=Verdict.PASS, baseline_speedup=base.speedup), base, cur
    )
    if cur is None:
        return v.model_copy(update={"verdict": Verdict.MISSING, "reason": "row not measured"})
    v.current_speedup = cur_s
    if cur.status == "FAILED" or cur_s is None:
        v.verdict, v.reason = Verdict.FAILED, cur.error or "no speedup measured"
        return v
    if bad := unusable_latency(cur):
        v.verdict, v.reason = Verdict.FAILED, bad
        return v
    v.ratio = ratio
    v.samples = [ratio] if ratio is not None else []
    v.threshold = row_threshold(th, key, base.noise)
    if fallback:
        v.verdict, v.reason = Verdict.FALLBACK, fallback
        return v
    if ratio is None:
        if positive(base.speedup):
            # measured, but not a usable number (<= 0, inf, nan): never a pass
            v.verdict, v.reason = Verdict.FAILED, f"current speedup not usable ({cur_s})"
        else:
            v.verdict, v.reason = Verdict.SKIPPED, "baseline row has no speedup"
        return v
    return rejudge(v, ratio, th, base.noise)


def rejudge(v: RowVerdict, ratio: float, th: ThresholdsFile, noise: float) -> RowVerdict:
    """Classify a judged row on ``ratio`` (also after confirmation)."""
    t_reg = row_threshold(th, v.key, noise)
    t_imp = improvement_threshold(th, v.key, noise)
    verdict = classify(ratio, t_reg, t_imp)
    if verdict is Verdict.IMPROVEMENT:
        t, limit = t_imp, improvement_limit(t_imp)
    else:
        t, limit = t_reg, limit_of(t_reg)
    update = {"verdict": verdict, "ratio": ratio, "threshold": t, "limit": limit}
    return v.model_copy(update=update | {"judged_change": inverse_change(ratio)})


# --------------------------------------------------------------------------- ops


def _all_rows(keys: list[RowKey], verdict: Verdict, base: BaselineResult, reason: str):
    by_key = {r.key(base.repo, base.run_name): r for r in base.rows}
    return [
        with_latencies(
            RowVerdict(key=k, verdict=verdict, baseline_speedup=by_key[k].speedup, reason=reason),
            by_key[k],
            None,
        )
        for k in keys
    ]


def failure_text(run: OpRun) -> str:
    """An op run's failure in one line: its status, note, error and failing shape."""
    parts = [f"op {run.status.value}"]
    res, st = run.result, run.op_status
    if st is not None and st.note:
        parts.append(st.note)
    if res is not None and res.error:
        parts.append(res.error)
    if res is not None and res.failing_shape:
        parts.append(f"failing shape {res.failing_shape}")
    return ": ".join(parts)


def judge_op(
    base: BaselineResult,
    run: OpRun | None,
    ratios: dict[RowKey, float | None],
    th: ThresholdsFile,
    dismissed: str | None = None,
) -> OpCase:
    case = OpCase(base.repo, base.run_name, base.op)
    base_rows = {r.key(base.repo, base.run_name): r for r in base.rows}
    keys = list(base_rows)
    if dismissed is not None:
        case.note = f"dismissed: {dismissed}"
        case.rows = _all_rows(keys, Verdict.SKIPPED, base, case.note)
        return case
    if run is None or run.status is None:
        case.note = "op not measured"
        case.rows = _all_rows(keys, Verdict.MISSING, base, case.note)
        return case
    case.op, case.log_tail, case.duration_s = run.op, run.log_tail, run_seconds(run)
    if run.status is RunStatus.SKIP and not run.rows():
        # Left out on purpose (dismiss list, unconditional skip): SKIPPED. Skipped
        # at run time although the baseline measured it: a missing measurement.
        note = run.op_status.note if run.op_status else ""
        if note.startswith(LEFT_OUT_NOTES) or not keys:
            verdict, case.note = Verdict.SKIPPED, note or "op skipped"
        else:
            verdict = Verdict.MISSING
            case.note = "op skipped (unsupported?) but the baseline measured it"
        case.rows = _all_rows(keys, verdict, base, case.note)
        return case
    if run.status in FAILED_STATUSES:
        case.failure = failure_text(run)
    cur_rows = run.rows()
    fallbacks, case.fallback = row_fallbacks(run, base, cur_rows)
    for k, b in base_rows.items():
        cur = cur_rows.get(k)
        if cur is None and case.failure:
            case.rows.append(
                _all_rows([k], Verdict.FAILED, base, f"not measured: {case.failure}")[0]
            )
        else:
            case.rows.append(judge_row(k, b, cur, ratios.get(k), th, fallbacks.get(k, "")))
    case.rows += [
        judge_row(k, None, r, None, th) for k, r in cur_rows.items() if k not in base_rows
    ]
    return case


def run_seconds(run: OpRun) -> float | None:
    """The op's wall time: result.json's ``duration_s``, else ops_status.csv's seconds."""
    if run.result is not None and run.result.duration_s is not None:
        return run.result.duration_s
    if run.op_status is not None and run.op_status.seconds > 0:
        return run.op_status.seconds
    return None


def new_op(run: OpRun, dismissed: str | None = None) -> OpCase:
    """An op the baseline does not have: NEW, or SKIPPED when the dismiss list names it
    (measured before it was dismissed, e.g. an old artifact)."""
    case = OpCase(run.repo, run.run_name, run.op, new=dismissed is None, log_tail=run.log_tail)
    case.duration_s = run_seconds(run)
    if dismissed is not None:
        verdict, reason = Verdict.SKIPPED, f"dismissed: {dismissed}"
    else:
        verdict, reason = Verdict.NEW, "not in baseline"
    case.note = (
        reason
        if dismissed
        else "op not in baseline" + (f" (status {run.status.value})" if run.status else "")
    )
    case.rows = [
        with_latencies(
            RowVerdict(key=k, verdict=verdict, current_speedup=r.speedup, reason=reason), None, r
        )
        for k, r in run.rows().items()
    ]
    return case


def op_verdict(case: OpCase, th: ThresholdsFile) -> OpVerdict:
    ratios = [r.ratio for r in case.rows if r.verdict in JUDGED and r.ratio is not None]
    t = aggregate_threshold(th, case.rows[0].key.op if case.rows else case.op, case.run_name)
    out = op_outcome((r.verdict for r in case.rows), case.own_verdicts(), ratios, t)
    verdict, gm = out.verdict, out.geomean
    reason = case.failure or case.fallback or case.note
    if out.geomean_regressed:
        reason = reason or geomean_reason(gm, t)
    reason = reason or rows_reason(case.rows, verdict)
    return OpVerdict(
        repo=case.repo,
        run_name=case.run_name,
        op=case.op,
        verdict=verdict,
        geomean_ratio=gm,
        judged_change=inverse_change(gm),
        threshold=t,
        rows=len(case.rows),
        reason=reason,
        duration_s=case.duration_s,
        log_tail=case.log_tail if verdict in (Verdict.FAILED, Verdict.FALLBACK) else [],
    )


# --------------------------------------------------------------------------- whole set


def matched_pairs(
    baseline: BaselineSet, rows: dict[RowKey, Row], keys: list[str]
) -> dict[RowKey, tuple[Row, Row]]:
    pairs: dict[RowKey, tuple[Row, Row]] = {}
    for key in keys:
        base = baseline.ops[key]
        for b in base.rows:
            k = b.key(base.repo, base.run_name)
            if k in rows:
                pairs[k] = (b, rows[k])
    return pairs


def _by_host(results: ResultsSet, keys: list[str]) -> dict[str | None, list[str]]:
    """Op keys grouped by the host that measured them: merged shards ran on
    different machines, and each machine's torch drift is its own."""
    groups: dict[str | None, list[str]] = {}
    for key in keys:
        run = results.ops.get(key)
        env = run.result.environment if run is not None and run.result is not None else None
        groups.setdefault(env.hostname if env else None, []).append(key)
    return groups


def judge(
    baseline: BaselineSet,
    results: ResultsSet,
    th: ThresholdsFile,
    config: JudgeConfig | None = None,
) -> Judgement:
    config = config or JudgeConfig()
    base_keys = [k for k in baseline.ops if in_scope(k, config.scope)]
    run_keys = [k for k in results.ops if in_scope(k, config.scope)]
    current = {k: r for key in run_keys for k, r in results.ops[key].rows().items()}
    estimator = Estimator(th.estimator)
    ratios: dict[RowKey, float | None] = {}
    drift: dict[str, float] = {}
    hosts: list[HostSpeed] = []
    applied = estimator is Estimator.TORCH_NORMALIZED
    for host, keys in _by_host(results, base_keys).items():
        pairs = matched_pairs(baseline, current, keys)
        d = torch_drift(pairs.values())
        hosts.append(HostSpeed(host, d, len(pairs), applied))
        ratios.update(estimate(estimator, pairs, d if applied else None))
        drift.update({k: d for k in keys if applied})
    cases = {
        k: judge_op(baseline.ops[k], results.ops.get(k), ratios, th, config.dismissed.get(k))
        for k in base_keys
    }
    cases.update(
        {
            k: new_op(results.ops[k], config.dismissed.get(k))
            for k in run_keys
            if k not in baseline.ops
        }
    )
    measured = sum(1 for r in current.values() if r.speedup is not None and r.status == "SUCCESS")
    overlap = sum(1 for k in base_keys if k in results.ops)
    return Judgement(cases, measured, overlap, estimator, drift, hosts)
