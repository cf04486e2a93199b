"""What the codegen screen tells the gate (pure: no triton, no files).

:func:`ops_to_time`: which baseline ops must be timed. An op may be skipped only
on proof: it has codegen records, every baseline row of it is named by some
record as a row that launched a kernel (by its shape, or, where the recorder saw
the launch before the row's shape was named, by its dtype:
:func:`zlbench.codegen.timed.known_ref`), and every kernel that counts for it
(:mod:`zlbench.codegen.timed`: launched inside its rows' timed regions, or all of
them where the records do not say) rebuilt identical; or its codegen index holds
no record at all (its record pass launched no Triton kernel). Sentinel ops
(``ops/sentinels.txt``) are always timed: launcher and runtime changes move speed
without changing a kernel.

:func:`row_notes`: the codegen explanation of every judged row (which kernels it
launched, their class, first differing stage, resource deltas, diff file), the
kernel with the largest change first; :func:`annotate_rows` puts it, as one line of
at most 200 characters naming that kernel, into the reason of the rows a reader must
act on (regressions, improvements, failures).

Rows are matched on ``(repo, run_name, dtype, shape)``: the recorder names the
row in flight by its op's selector and does not count occurrences, so every
occurrence of a (dtype, shape) in a run shares that row's kernels.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from zlbench.codegen.timed import RowRef, TimedKernels, known_ref, row_ref
from zlbench.models.baseline import BaselineResult
from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    CLASS_LABELS,
    CodegenClass,
    CodegenScreen,
    KernelNote,
    KernelScreen,
)
from zlbench.models.run import RowKey
from zlbench.models.verdict import RowVerdict, Verdict
from zlbench.protocol.ops import spec_matches
from zlbench.report.codegen import change_rank, row_explanation


@dataclass
class TimingPlan:
    """Every baseline op, either to time (with why) or skipped (with the proof)."""

    time: dict[str, str] = field(default_factory=dict)  # op key -> why it is timed
    skip: dict[str, str] = field(default_factory=dict)  # op key -> proof it is unchanged
    # op key -> why a changed op was not timed: beyond the gate's GPU budget (listed in
    # every report, never silently: :func:`within_budget`)
    over_budget: dict[str, str] = field(default_factory=dict)

    def timed_ops(self) -> set[str]:
        return set(self.time)


SENTINELS_FILE = "sentinels.txt"  # in the ops dir (ops/), read with gate.plan.read_ops_file
DEFAULT_OP_COST_S = 30.0  # an op without a recorded duration, in a GPU budget
SENTINEL_WHY = "sentinel op"  # why a sentinel op is timed (alone, or after its changes)


def is_sentinel(why: str) -> bool:
    """Whether a timing plan's reason says the op is a sentinel."""
    return why == SENTINEL_WHY or why.endswith(f"; {SENTINEL_WHY}")


def matches_spec(spec: str, key: str, op: str) -> bool:
    """A SPEC (``protocol.ops`` grammar) names the op with this key, or ``spec`` is
    the bare op name (then it names the op in every test file)."""
    return spec == op or spec_matches(spec, key)


def ops_to_time(
    screen: CodegenScreen,
    baseline_ops: Mapping[str, BaselineResult],
    sentinels: Collection[str] = (),
) -> TimingPlan:
    """Split the baseline's ops (``<repo>/<run_name>`` -> result) into timed and skipped.
    Only the kernels that count for an op (:mod:`zlbench.codegen.timed`: those it ran
    inside its rows' timed regions) decide; a changed setup kernel changes no op."""
    view = TimedKernels.of(screen)
    rows_known = {row_ref(row) for k in screen.kernels for row in k.rows}
    plan = TimingPlan()
    for key, result in sorted(baseline_ops.items()):
        kernels = view.op_kernels(key)
        why = _why_time(key, result, kernels, screen, rows_known, sentinels)
        if why:
            plan.time[key] = why
        elif not kernels:  # proven with no kernel: an empty index (_why_unproven)
            plan.skip[key] = (
                f"launches no Triton kernel (its record pass compiled and launched none); "
                f"all {len(result.rows)} row(s) covered"
            )
        else:
            setup = [k for k in view.op_setup(key) if k.status in CHANGED_CLASSES]
            which = "timed kernel(s)" if setup else "kernel(s)"
            apart = f" ({len(setup)} changed outside the timed region)" if setup else ""
            plan.skip[key] = (
                f"all {len(kernels)} {which} identical{apart}; "
                f"all {len(result.rows)} row(s) covered"
            )
    return plan


def change_size(kernels: Iterable[KernelScreen]) -> float:
    """How much an op's code changed, to order ops within a GPU budget: per changed
    kernel that counts for it, the SASS instructions it gained or lost where its SASS
    was disassembled, else the lines its first differing stage's diff adds or removes
    (a kernel changed before SASS is not disassembled: about one line per
    instruction); at least 1. A kernel that could not be rebuilt counts as the largest
    change."""
    size = 0.0
    for k in kernels:
        if k.status in (CodegenClass.FAILED, CodegenClass.MISSING):
            return float("inf")
        if k.status in CHANGED_CLASSES:
            sass = k.deltas.get("sass_instructions")
            lines = k.changed_lines if sass is None else None
            size += max(1.0, abs(sass if sass is not None else lines or 0.0))
    return size


def priority_order(
    plan: TimingPlan, screen: CodegenScreen, first: Collection[str] = ()
) -> list[str]:
    """``plan``'s timed ops in the order a GPU budget takes them: sentinel ops first
    (the runner-drift check), then the ops of ``first`` (the PR tier), then the rest,
    each group by :func:`change_size` largest first, op key last."""
    view = TimedKernels.of(screen)

    def rank(key: str) -> tuple[int, float, str]:
        group = 0 if is_sentinel(plan.time[key]) else 1 if key in first else 2
        return (group, -change_size(view.op_kernels(key)), key)

    return sorted(plan.time, key=rank)


def within_budget(
    plan: TimingPlan,
    screen: CodegenScreen,
    costs: Mapping[str, float],
    budget_s: float,
    first: Collection[str] = (),
) -> TimingPlan:
    """``plan`` with its timed ops cut to ``budget_s`` GPU seconds (each op's recorded
    seconds in ``costs``, else :data:`DEFAULT_OP_COST_S`), taken in priority order:
    sentinel ops always (they are the runner-drift check), then the ops of ``first``
    (the PR tier), then the rest, each group by :func:`change_size` largest first (op
    key last). The ops left out go to ``over_budget`` with their rank and cost: the
    reports list every one of them."""
    order = priority_order(plan, screen, first)
    out = TimingPlan(skip=dict(plan.skip))
    spent = 0.0
    for i, key in enumerate(order, start=1):
        cost = costs.get(key, DEFAULT_OP_COST_S)
        if is_sentinel(plan.time[key]) or spent + cost <= budget_s:
            out.time[key] = plan.time[key]
            spent += cost
        else:
            out.over_budget[key] = (
                f"changed, not timed: beyond the GPU budget of {budget_s:g} s "
                f"(priority {i} of {len(order)}, about {cost:.0f} s): {plan.time[key]}"
            )
    return out


def _why_time(
    key: str,
    result: BaselineResult,
    kernels: list[KernelScreen],
    screen: CodegenScreen,
    rows_known: set[RowRef],
    sentinels: Collection[str],
) -> str | None:
    """Why op ``key`` must be timed; None when the screen proves it unchanged."""
    sentinel = any(matches_spec(s, key, result.op) for s in sentinels)
    why = _why_unproven(key, result, kernels, screen, rows_known)
    if why is not None:  # the codegen reason first: it says what changed
        return why + (f"; {SENTINEL_WHY}" if sentinel else "")
    return SENTINEL_WHY if sentinel else None


def _why_unproven(
    key: str,
    result: BaselineResult,
    kernels: list[KernelScreen],
    screen: CodegenScreen,
    rows_known: set[RowRef],
) -> str | None:
    if key in screen.ops_without_records:
        return "no codegen records in the baseline"
    if screen.ops_with_unrecorded.get(key):
        return f"{screen.ops_with_unrecorded[key]} kernel(s) its record pass ran without a record"
    if not kernels:
        # an empty index: the record pass launched no Triton kernel for it (proven)
        if key in screen.ops_without_kernels:
            return None
        return "no kernel of this op in the codegen screen"
    unproven = [k for k in kernels if k.status is not CodegenClass.IDENTICAL]
    if unproven:
        return "kernel(s) " + ", ".join(_short(k) for k in unproven[:5]) + _more(unproven, 5)
    unknown = [
        r
        for r in result.rows
        if known_ref(row_ref(r.key(result.repo, result.run_name)), rows_known) is None
    ]
    if unknown:
        return f"{len(unknown)} row(s) whose kernels the records do not name"
    return None


def _short(k: KernelScreen) -> str:
    return f"{k.name} ({CLASS_LABELS[k.status]})"


def _more(items: list, shown: int) -> str:
    return f" and {len(items) - shown} more" if len(items) > shown else ""


# --------------------------------------------------------------------------- row notes


def kernel_note(k: KernelScreen, diff_prefix: str = "") -> KernelNote:
    """One kernel's explanation; ``diff_prefix`` makes its diff path relative to
    where the reader is (e.g. ``codegen/`` in a gate output dir)."""
    return KernelNote(
        kernel_id=k.kernel_id,
        name=k.name,
        config=k.config,
        status=k.status,
        first_stage=k.first_stage,
        deltas=k.deltas,
        diff_file=diff_prefix + k.diff_file if k.diff_file else None,
        error=k.error,
        code_digest=k.code_digest,
    )


def row_notes(
    rows: Iterable[RowKey], screen: CodegenScreen, diff_prefix: str = ""
) -> dict[RowKey, list[KernelNote]]:
    """For every row: the kernels that count for it (:mod:`zlbench.codegen.timed`:
    those the baseline records say it launched inside its timed region, all of them
    where the records do not say), the one that matters first
    (``report.codegen.change_rank``: failed, then the largest change). A row no record
    names maps to an empty list (kernels unknown)."""
    view = TimedKernels.of(screen)
    out = {}
    for row in rows:
        notes = [kernel_note(k, diff_prefix) for k in view.row_kernels(row_ref(row))]
        out[row] = sorted(notes, key=change_rank)
    return out


# Verdicts whose rows get the codegen explanation in their reason.
EXPLAINED = frozenset({Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.FAILED})


def annotate_rows(
    rows: list[RowVerdict], screen: CodegenScreen, diff_prefix: str = ""
) -> list[RowVerdict]:
    """Copies of ``rows``; those with a verdict in EXPLAINED have the row's codegen
    explanation (``report.codegen.row_explanation``) appended to their reason."""
    notes = row_notes([r.key for r in rows], screen, diff_prefix)
    return [explain_row(r, notes[r.key]) for r in rows]


def explain_row(r: RowVerdict, notes: list[KernelNote]) -> RowVerdict:
    """``r`` with the explanation of its kernels ``notes`` appended to its reason
    when its verdict is in EXPLAINED (else ``r`` itself)."""
    if r.verdict not in EXPLAINED:
        return r
    text = row_explanation(notes)
    return r.model_copy(update={"reason": f"{r.reason}; {text}" if r.reason else text})
