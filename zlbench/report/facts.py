"""The numbers every report shows, computed and worded once (markdown, HTML, JUnit,
``compare``), so that they agree: one sign (+ = more kernel time, slower), one
name per number (docs/reports.md).

* **FlagGems µs**: the kernel latency, baseline → current;
* **kernel time**: ``current / baseline - 1``, uncorrected;
* **judged change**: ``1 / ratio - 1``, the kernel time change after the
  machine-speed correction: the number the gate judges;
* **limit**: the judged change at the row's threshold (``1 / (1 - t) - 1``,
  :func:`zlbench.gate.aggregate.limit_of`).

Which rows are judged (:data:`zlbench.gate.aggregate.JUDGED`) and the limit are
the gate's rules, imported, never restated here.

Pure: plain text without any artifact string (callers escape those).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from zlbench.gate.aggregate import JUDGED, limit_of
from zlbench.gate.estimators import geomean
from zlbench.gate.numbers import counted
from zlbench.gate.numbers import pct as pct  # re-exported
from zlbench.models import (
    AbCompiler,
    Environment,
    GateVerdict,
    MachineSpeed,
    OpVerdict,
    RowKey,
    RowVerdict,
    ThresholdDefaults,
    ThresholdsFile,
    Verdict,
)
from zlbench.models.history import RowHistory
from zlbench.models.replay import ReplayRun
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import display_names, op_name_of

# A row is "near its threshold" when its judged change uses this share of its limit.
NEAR = 0.6


@dataclass
class ReportExtras:
    """What the gate workflow may add to the reports; every field optional."""

    artifact_url: str = ""  # where the full report is (the run's artifacts page)
    codegen: tuple[int, int] | None = None  # (kernels whose code changed, kernels compared)
    explanations: Mapping[str, str] = field(default_factory=dict)  # op key -> one line
    # changed kernels that ran only outside the timed regions (report.codegen.setup_line)
    setup_changed: list[str] = field(default_factory=list)
    ir_diffs: Mapping[str, str] = field(default_factory=dict)  # op key -> diff text (HTML)
    durations: Mapping[str, float] = field(default_factory=dict)  # op key -> s (JUnit)
    # row label -> its history in the results store (zlbench.history.context: issue 52)
    history: Mapping[str, RowHistory] = field(default_factory=dict)
    # the kernel-replay tier's run (replay/replay.json, issue 51) and the gate's budget
    replay: ReplayRun | None = None
    replay_budget_s: float | None = None


def fmt_us(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def us_pair(a: float | None, b: float | None) -> str:
    """``baseline → current`` in µs (one side alone for new or missing rows)."""
    if a is None and b is None:
        return "n/a"
    return f"{fmt_us(a)} → {fmt_us(b)}"


def judged_on_ab(r: RowVerdict) -> bool:
    """The row's verdict comes from a paired A/B against the base compiler (a row the
    base did not measure carries an A/B entry without a ratio: judged as measured)."""
    return r.ab is not None and r.ab.ratio is not None


def confirmed_text(r: RowVerdict) -> str:
    n = len(r.samples)
    if judged_on_ab(r):
        unit = "pair" if r.ab.decision is not None else "round"  # interleaved: pairs
        how = "kernel replay" if r.ab.instrument == "kernel-replay" else "A/B"
        return f"{how}, {counted(r.ab.rounds, unit)}"
    if r.confirmed is True:
        return f"yes (median of {n})"
    if r.confirmed is False:
        return f"no (median of {n})"
    return "not re-measured" if r.verdict is Verdict.REGRESSION else ""


PLAIN_MARK = "†"
PLAIN_NOTE = "† timed without CUDA graphs (plain do_bench fallback): noisier"


def plain_rows(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """The rows the reports mark with PLAIN_MARK: plain-timed, not skipped (a dismissed
    op is often dismissed for that very reason) and measured by this run (a row that
    never ran, e.g. its kernels fail to compile, had no timing of its own)."""
    return [
        r
        for r in rows
        if r.plain_timed and r.verdict is not Verdict.SKIPPED and r.current_us is not None
    ]


def plain_mark(r: RowVerdict) -> str:
    """`` †`` after the label of a row timed by the plain fallback (of
    :func:`plain_rows`), else ""."""
    return f" {PLAIN_MARK}" if plain_rows([r]) else ""


_PLAIN_SIDES = {
    ("baseline", "current"): "in the baseline and this run",
    ("baseline",): "in the baseline only",
    ("current",): "in this run only",
}


def plain_sides(rows: Iterable[RowVerdict]) -> str:
    """Where plain-timed ``rows`` were timed so: ``in the baseline and this run``, or
    with a count per side in parentheses when they differ (``(1 in the baseline only,
    2 in this run only)``)."""
    sides = [_PLAIN_SIDES.get(tuple(r.plain_timed_in), "") for r in rows if r.plain_timed]
    kinds = list(dict.fromkeys(sides))
    if len(kinds) == 1:
        return kinds[0] or "in the baseline or this run"
    each = ", ".join(f"{sides.count(k)} {k or 'in the baseline or this run'}" for k in kinds)
    return f"({each})"


def plain_words(r: RowVerdict) -> str:
    """A plain-timed row's timing in words ("" for a row timed with CUDA graphs)."""
    if not r.plain_timed:
        return ""
    return (
        f"timed without CUDA graphs (plain do_bench fallback) {plain_sides([r])}: "
        "noisier than a graph-timed row"
    )


def row_numbers(r: RowVerdict) -> str:
    """One line of a row's numbers, the same words in every medium."""
    parts = [
        f"FlagGems {us_pair(r.baseline_us, r.current_us)} µs (kernel time {pct(r.kernel_change)})",
        f"torch {us_pair(r.baseline_torch_us, r.current_torch_us)} µs",
    ]
    if r.judged_change is not None:
        parts.append(f"judged change {pct(r.judged_change)} (limit {pct(r.limit)})")
    if c := confirmed_text(r):
        parts.append(f"confirmed: {c}")
    if w := plain_words(r):
        parts.append(w)
    return "; ".join(parts)


def speed_words(m: MachineSpeed) -> str:
    d = m.torch_change
    if abs(d) < 0.0005:
        return "torch at the baseline host's speed"
    return f"torch {abs(d) * 100:.1f} % {'slower' if d > 0 else 'faster'} than the baseline host"


def machine_speed_line(v: GateVerdict, host: str = "") -> str:
    """The run's machine-speed correction, stated once; ``host``: how to show a host
    name (the caller escapes it), "" to leave names out when there is one host."""
    ms = v.machine_speed
    if not ms:
        return ""
    if len(ms) == 1:
        said = f"this runner measured {speed_words(ms[0])} (median over {ms[0].rows} rows)"
    else:
        said = "; ".join(f"{host or 'runner'} {i + 1}: {speed_words(m)}" for i, m in enumerate(ms))
    if all(m.applied for m in ms):
        return f"Machine-speed correction: {said}; every judged change is corrected by it."
    return (
        f"Machine-speed correction: {said}; each row is corrected by its own torch "
        f"latency (estimator `{v.estimator}`)."
    )


def nondefault_thresholds(th: ThresholdsFile | None) -> list[str]:
    """``field: value (default …)`` for each setting that differs from zlbench's defaults,
    then one line per op and per row override, and per op's paired threshold."""
    if th is None:
        return []
    base = ThresholdDefaults()
    out = [
        f"{name}: {getattr(th, name)} (default {getattr(base, name)})"
        for name in ThresholdDefaults.model_fields
        if getattr(th, name) != getattr(base, name)
    ]
    out += [f"ops.{op}: {t}" for op, t in th.ops.items()]
    for o in th.rows:
        where = " ".join(x for x in (o.op, o.dtype, o.shape) if x)
        out.append(f"rows: {where}: {o.threshold}")
    out += [f"paired_ops.{op}: {t} (A/B against the base)" for op, t in th.paired_ops.items()]
    return out


def judged_rows(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """Judged rows with a change against the stored baseline (the op path measured them)."""
    return [r for r in rows if r.verdict in JUDGED and r.judged_change is not None]


def decided_rows(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """Judged rows with the change their verdict was decided on (:func:`decided_change`):
    the op path's rows and the rows a kernel replay's pairs decided, which have no change
    against the stored baseline (v7's broad change on an H100: 5,227 replayed rows beside
    37 of the op path, 2026-12-07)."""
    return [r for r in rows if r.verdict in JUDGED and decided_change(r) is not None]


def geomean_changes(rows: Iterable[RowVerdict]) -> tuple[float | None, float | None, int]:
    """(judged change, kernel time change, rows) as geometric means over judged rows."""
    rs = judged_rows(rows)
    gm = geomean(1.0 + r.judged_change for r in rs)
    gk = geomean(1.0 + r.kernel_change for r in rs if r.kernel_change is not None)
    return (None if gm is None else gm - 1.0), (None if gk is None else gk - 1.0), len(rs)


def geomean_decided(rows: Iterable[RowVerdict]) -> tuple[float | None, int, int, int]:
    """(geometric mean of the change each judged row was decided on, how many rows,
    how many of those an interleaved A/B or a kernel replay's pairs decided, how many of
    those a kernel replay's): with 0 such rows it is the judged change's."""
    rs = decided_rows(rows)
    gm = geomean(1.0 + decided_change(r) for r in rs)
    on_pairs = sum(1 for r in rs if decided_on_pairs(r))
    replayed = sum(1 for r in rs if r.ab is not None and r.ab.instrument == "kernel-replay")
    return (None if gm is None else gm - 1.0), len(rs), on_pairs, replayed


def geomean_words(rows: Iterable[RowVerdict]) -> tuple[str, str] | None:
    """The header's geomean, as (the bold part, the rest), or None without a judged row.
    It is the geomean of the change each row was decided on; where an interleaved A/B
    decided, that is its change vs the base, and the stored baseline's is beside it."""
    rows = list(rows)  # read twice
    judged, kernel, m = geomean_changes(rows)
    decided, n, on_ab, replayed = geomean_decided(rows)
    if not n:
        return None
    stored = f"FlagGems kernel time {pct(kernel, 2)} before the correction; + = slower"
    if not on_ab:
        return f"Geomean over {n} judged rows: judged change {pct(judged, 2)}", f"({stored})."
    by_replay = f", {replayed} of them by kernel replay" if replayed else ""
    if on_ab == n:
        head = f"Geomean over {n} judged rows: {pct(decided, 2)} vs the base"
        how = f"the A/B's change, which decided every one of them{by_replay}"
    else:
        head = f"Geomean over {n} judged rows: decided change {pct(decided, 2)}"
        how = (
            f"{on_ab} rows decided by the A/B vs the base{by_replay}, "
            f"{n - on_ab} by the stored baseline"
        )
    if not m:
        return head, f"({how}; none has a change vs the stored baseline)."
    over = f" over its {m} rows" if m < n else ""
    return head, f"({how}; vs the stored baseline: judged change {pct(judged, 2)}{over}, {stored})."


def largest_moves(rows: Iterable[RowVerdict], n: int = 3) -> list[RowVerdict]:
    """The ``n`` rows that moved most toward slower, then the ``n`` toward faster, by
    the change each was decided on (an interleaved A/B's vs the base, else the judged
    change): a row the A/B found slower is never among the faster ones."""
    rs = sorted(decided_rows(rows), key=lambda r: -decided_change(r))
    slower = [r for r in rs if decided_change(r) > 0][:n]
    faster = [r for r in reversed(rs) if decided_change(r) < 0][:n]
    return slower + faster


def passed_elsewhere(r: RowVerdict) -> bool:
    """A row whose verdict was decided by more than its judged change against the
    stored baseline: an A/B, an applied accept entry, or a re-measurement that did
    not confirm the flag. Each has its own section, which shows the deciding number."""
    return judged_on_ab(r) or bool(r.accepted and r.accepted.applied) or r.confirmed is False


def near_threshold(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """Passing rows whose judged change uses at least NEAR of their limit and stays
    below it (a row at or past its limit passed for a reason of its own:
    :func:`passed_elsewhere`, never "near")."""
    return sorted(
        (
            r
            for r in judged_rows(rows)
            if r.verdict is Verdict.PASS
            and r.limit
            and NEAR * r.limit <= r.judged_change < r.limit
            and not passed_elsewhere(r)
        ),
        key=lambda r: -r.judged_change,
    )


def improved(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """IMPROVEMENT rows that got faster by every number shown for them (judged change,
    and the A/B's change when the A/B decided), fastest first; an A/B that judged a
    row faster than the base although it is slower than the stored baseline is in
    the A/B section, never under improvements."""
    out = [
        r
        for r in rows
        if r.verdict is Verdict.IMPROVEMENT
        and r.judged_change is not None
        and r.judged_change < 0
        and not (judged_on_ab(r) and (r.ab.change is None or r.ab.change >= 0))
    ]
    return sorted(out, key=lambda r: r.judged_change)


def unconfirmed(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    """Rows flagged as regressed that re-measurement did not confirm."""
    return [r for r in rows if r.confirmed is False]


def decided_on_pairs(r: RowVerdict) -> bool:
    """The row's verdict was decided by an interleaved A/B (its change vs the base)."""
    return r.ab is not None and r.ab.decision is not None and r.ab.change is not None


def decided_change(r: RowVerdict) -> float | None:
    """The change the row's verdict was decided on: an interleaved A/B's vs the base,
    else the stored baseline's."""
    return r.ab.change if decided_on_pairs(r) else r.judged_change


def worst_first(rows: Iterable[RowVerdict]) -> list[RowVerdict]:
    return sorted(rows, key=lambda r: -(c if (c := decided_change(r)) is not None else 0))


def decided_texts(r: RowVerdict) -> tuple[str, str]:
    """The judged change and limit the row's verdict was decided on, as shown in every
    table: an interleaved A/B's change vs the base and its paired threshold and floor
    (the stored baseline's change beside it, labelled), else the stored baseline's
    change and limit."""
    ab = r.ab
    if not decided_on_pairs(r) or ab.threshold is None:  # a row judged on no number: no limit
        judged = r.judged_change is not None and r.verdict is not Verdict.SKIPPED
        return pct(r.judged_change), (pct(r.limit) if judged else "")
    stored = f" ({pct(r.judged_change)} vs stored)" if r.judged_change is not None else ""
    return f"{pct(ab.change)} vs base{stored}", f"{pct(ab.threshold)} and {ab.floor_us:g} µs"


OpRows = Mapping[tuple[str, str], list[RowVerdict]]


def rows_by_op(rows: Iterable[RowVerdict]) -> OpRows:
    """Each op's rows, in order, by ``(repo, run_name)``: built once per render, so
    that what a report says per op reads that op's rows, never every row."""
    out: dict[tuple[str, str], list[RowVerdict]] = {}
    for r in rows:
        out.setdefault((r.key.repo, r.key.run_name), []).append(r)
    return out


def op_rows(o: OpVerdict, by_op: OpRows) -> list[RowVerdict]:
    """The rows of op ``o`` (``by_op``: :func:`rows_by_op`)."""
    return by_op.get((o.repo, o.run_name), [])


def op_limit(o: OpVerdict, by_op: OpRows) -> float | None:
    """The judged change at an op's threshold: for an op an interleaved A/B decided,
    the pair rule's threshold itself (its rows' ``ab.threshold``: it bounds the change vs
    the base, as the rows show), else ``1 / (1 - t) - 1``. ``by_op``:
    :func:`rows_by_op`."""
    paired = [r for r in op_rows(o, by_op) if decided_on_pairs(r)]
    if o.threshold is not None and paired:
        # the pair rule's own threshold (the rows' A/B: +3.0 % on the shipped gates),
        # not the per-row threshold of the stored baseline's comparison
        return next((r.ab.threshold for r in paired if r.ab and r.ab.threshold), o.threshold)
    return limit_of(o.threshold)


def over_budget_line(v: GateVerdict, code: Callable[[str], str] = str, bold: str = "") -> str:
    """The header's line on the changed ops the gate did not time for its GPU budget
    (``--time-budget``), "" when none: they are not judged, so the header says so."""
    over = v.codegen.over_budget if v.codegen is not None else {}
    if not over:
        return ""
    names = op_names(v)
    shown = ", ".join(code(key_name(names, k)) for k in sorted(over)[:5])
    more = f" and {len(over) - 5} more" if len(over) > 5 else ""
    return (
        f"{bold}Not judged: {len(over)} op(s) whose timed kernels changed were not timed"
        f"{bold}, beyond the gate's GPU budget ({code('--time-budget')}): {shown}{more} "
        "(listed under Generated code)."
    )


def gpu_difference_line(v: GateVerdict) -> str:
    """The header's line on a baseline recorded on another GPU model of the runner's
    architecture, accepted because a base compiler was paired with the PR on this GPU
    (``GateVerdict.gpu_difference``); "" otherwise (a refused one is the summary)."""
    d = v.gpu_difference
    return d.line if d is not None and d.accepted else ""


# --------------------------------------------------------------------------- op names


def op_names(v: GateVerdict) -> dict[str, str]:
    """Op key -> the one spelling a person reads and types, for every op the verdict
    names (judged, proven identical, over the budget, not measured):
    :func:`zlbench.protocol.ops.display_names` over them all."""
    keys = [op_key(o.repo, o.run_name) for o in v.ops]
    keys += [op_key(r.key.repo, r.key.run_name) for r in v.rows]
    if v.codegen is not None:
        keys += [*v.codegen.not_timed, *v.codegen.over_budget]
    return display_names([*keys, *v.not_measured])


def name_of(names: Mapping[str, str], repo: str, run_name: str) -> str:
    """The spelling of op ``repo/run_name`` in ``names`` (:func:`op_names`); an op
    ``names`` lacks is spelled as if alone."""
    key = op_key(repo, run_name)
    return names.get(key) or (display_names([key])[key] if run_name else "")


def row_op(key: RowKey, names: Mapping[str, str] | None = None) -> str:
    """A row's op: its op's spelling (:func:`name_of`), then the benchmark's own op
    name in parentheses where the op's test file times another one too
    (``mm (mm_self_transpose)``)."""
    if not key.run_name:  # rows aligned across runs of other names (zlbench compare)
        return key.op
    name = name_of(names or {}, key.repo, key.run_name)
    own = op_name_of(op_key(key.repo, key.run_name))
    return name if key.op in (own, name) else f"{name} ({key.op})"


def row_label(key: RowKey, names: Mapping[str, str] | None = None) -> str:
    """``bmm bfloat16 [shape]``: a row by its op (:func:`row_op`)."""
    occ = f" #{key.occurrence}" if key.occurrence else ""
    return f"{row_op(key, names)} {key.dtype} {key.shape}{occ}"


def key_name(names: Mapping[str, str], key: str) -> str:
    """:func:`name_of` of an op key (``main/bmm__at__test_bmm.py``)."""
    return names.get(key) or display_names([key])[key]


# --------------------------------------------------------------------------- compilers


def _build(dist, version, commit, build=None, path=None) -> str:
    if not (dist or version or commit or build or path):
        return "not recorded (no run measured it)"
    said = f"{dist or 'unknown'} {version or '?'}"
    ids = [f"commit {commit}" if commit else "", f"build {build}" if build else ""]
    ids = [x for x in ids if x]
    said += f", {', '.join(ids)}" if ids else " (no commit or build fingerprint recorded)"
    return said + (f", from {path}" if path else "")


def env_compiler(e: Environment) -> str:
    """``triton 3.6.0, build cf2eb46954aaab91, from /venv/.../triton``: one side's
    compiler by its build, as its run recorded it."""
    return _build(
        e.triton_dist, e.triton_version, e.flagtree_commit, e.compiler_build, e.compiler_path
    )


def ab_compiler(c: AbCompiler, build: str | None = None) -> str:
    """An A/B side's compiler (:func:`env_compiler`'s words)."""
    return _build(c.dist, c.version, c.commit, build, c.path)


def compiler_line(v: GateVerdict) -> str:
    """The header's line naming the compiler under test by its build and the base's
    beside it: the A/B's base compiler where one ran, else the compiler the baseline
    was recorded with. Plain text with artifact strings (the caller escapes it)."""
    cur = v.current_env
    if v.ab is not None:
        # the runs' own record where it names a build of the compiler the A/B probed as
        # the PR's; the A/B's probe where they disagree on its path (a run that followed
        # a linked copy's links recorded the install it links to, 2026-12-01)
        same = not (cur.compiler_path and v.ab.pr.path) or cur.compiler_path == v.ab.pr.path
        pr = cur if (cur.compiler_build or cur.flagtree_commit) and same else None
        under = env_compiler(pr) if pr is not None else ab_compiler(v.ab.pr)
        return f"Compilers: under test {under}; base (the A/B's) {ab_compiler(v.ab.base)}."
    base = env_compiler(v.baseline_env)
    return f"Compilers: under test {env_compiler(cur)}; the baseline was recorded with {base}."


# The limit of a row, in words (every report's legend, docs/reports.md): a threshold is
# on the speedup ratio, the limit on the judged change (kernel time).
LIMIT_WORDS = (
    "a threshold t bounds the speedup ratio (fails below 1 − t); in kernel time that is "
    "a judged change of 1/(1 − t) − 1, so 5 % per row is a limit of +5.3 %"
)
