"""The gate's timing plan (docs/codegen.md, "Gate integration"): :func:`plan_timing`
chooses the ops to time: all of them (``--time all``) or only those the screen did not
prove unchanged plus the sentinel ops (``--time changed``), within ``--time-budget``;
the plan is kept in ``<out>/codegen/timing.json`` so that ``zlbench report`` re-judges
the same op set (:func:`load_for_rejudge`, every skip proven again:
:func:`proven_skips`). The sentinels timed only as such and whose kernels are
identical never fail a PR on their own (:func:`identical_sentinels`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from zlbench.codegen.screen import SCREEN_JSON
from zlbench.codegen.select import (
    SENTINEL_WHY,
    SENTINELS_FILE,
    TimingPlan,
    matches_spec,
    ops_to_time,
    priority_order,
    within_budget,
)
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.models import (
    BaselineResult,
    CodegenClass,
    CodegenScreen,
    TimingPlanFile,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR
from zlbench.protocol.ops import read_ops_file
from zlbench.report.escape import one_line
from zlbench.runner.baseline_batch import baseline_durations
from zlbench.workflow.codegen_step import (
    TIMING_JSON,
    CodegenStep,
    cpu_note,
    not_timed_line,
    summarize,
)

PRIORITY_TIER = "tiers/pr.txt"  # in the ops dir: timed first within --time-budget


def plan_timing(
    step: CodegenStep,
    baseline: BaselineSet,
    scope: set[str] | None,
    ops_dir: Path,
    budget_s: float | None = None,
    first: Path | None = None,
) -> set[str]:
    """The ops to measure (within ``scope``; None: every baseline op). ``--time
    changed`` leaves out the ops the screen proves unchanged (never a sentinel op,
    never a row whose kernels the records do not name), and with ``budget_s`` the
    changed ops beyond that many GPU seconds in priority order (the ops of ``first``,
    default ``ops/tiers/pr.txt``, first: :func:`zlbench.codegen.select.within_budget`);
    the plan is written to ``<out>/codegen/timing.json``, the skipped ops kept in
    ``step.summary.not_timed``, those beyond the budget in ``step.summary.over_budget``
    (the gate checked ``budget_s`` before the screen: :func:`check_budget`)."""
    in_scope = {k: r for k, r in baseline.ops.items() if scope is None or k in scope}
    if step.screen is None or step.dir is None:
        return set(in_scope)
    if step.given is not None:  # a screen-only gate's plan (load_screen_artifact checked it)
        given = step.given
        plan = TimingPlan(dict(given.timed), dict(given.skipped), dict(given.over_budget))
        budget_s, order = given.budget_s, list(given.order)
    else:
        sentinels = _sentinels(ops_dir) if step.summary.time == "changed" else []
        plan = ops_to_time(step.screen, in_scope, sentinels)
        if step.summary.time == "all":
            plan.time.update({k: "--time all" for k in plan.skip})
            plan.skip = {}
        tier = _tier(ops_dir, first, in_scope)
        if budget_s is not None:
            costs = baseline_durations(baseline.path, per_dtype=False)
            plan = within_budget(plan, step.screen, costs, budget_s, tier)
        order = priority_order(plan, step.screen, tier)
    step.summary.not_timed = dict(plan.skip)
    step.summary.over_budget = dict(plan.over_budget)
    step.held_back = compile_failed_ops(step.screen, plan.timed_ops())
    step.sentinel_only = sentinel_only(plan.time)
    timing = TimingPlanFile(
        time=step.summary.time,
        timed=plan.time,
        skipped=plan.skip,
        failed=step.held_back,
        over_budget=plan.over_budget,
        budget_s=budget_s,
        order=order,
        decided_by=step.screen.decided_by,
        base_compiler=step.screen.base_compiler,
    )
    if step.given is not None:  # keep where the plan came from (the reports say so)
        timing = timing.model_copy(update=_origin(step.given))
    dump_json_model(step.dir / TIMING_JSON, timing)
    step.plan = timing
    return plan.timed_ops()


def _origin(plan: TimingPlanFile) -> dict:
    keys = (
        "screen_only",
        "baseline_sha256",
        "baseline_records_sha256",
        "compiler",
        "scope",
        "generated",
        "decided_by",
        "base_compiler",
    )
    return {k: getattr(plan, k) for k in keys}


def _tier(ops_dir: Path, first: Path | None, ops: Mapping[str, BaselineResult]) -> set[str]:
    """The op keys of ``ops`` that the ops file ``first`` (default the PR tier) names."""
    path = first if first is not None else Path(ops_dir) / PRIORITY_TIER
    if not path.is_file():
        if first is not None:
            raise ZlbenchError(f"--time-first {first}: ops file not found")
        return set()
    return _named(read_ops_file(path), ops)


def _named(specs: list[str], ops: Mapping[str, BaselineResult]) -> set[str]:
    """The op keys of ``ops`` that one of the op SPECs ``specs`` names."""
    return {k for k, r in ops.items() if any(matches_spec(s, k, r.op) for s in specs)}


def compile_failed_ops(screen: CodegenScreen, ops: Iterable[str]) -> dict[str, str]:
    """Op key -> one line, for those of ``ops`` that launched a kernel the compiler
    under test cannot build (a setup kernel too: the row's inputs cannot be made).
    They are not timed: their rows are FAILED with that line (:func:`apply_screen`)."""
    view = TimedKernels.of(screen)
    out = {}
    for op in sorted(ops):
        failed = [k for k in view.op_kernels(op) if k.status is CodegenClass.FAILED]
        if failed:
            more = f" (+{len(failed) - 1} more kernel(s))" if len(failed) > 1 else ""
            out[op] = not_timed_line(failed[0].name, failed[0].config, failed[0].error) + more
    return out


def sentinel_ops(ops: Mapping[str, BaselineResult], ops_dir: Path) -> set[str]:
    """The op keys of ``ops`` that the gate's sentinel list (``ops/sentinels.txt``)
    names; none when the ops dir has no list."""
    path = Path(ops_dir) / SENTINELS_FILE
    return _named(read_ops_file(path), ops) if path.is_file() else set()


def _sentinels(ops_dir: Path) -> list[str]:
    path = Path(ops_dir) / SENTINELS_FILE
    if not path.is_file():
        raise ZlbenchError(
            f"{path}: no sentinel op list; --time changed needs one (docs/codegen.md)"
        )
    return read_ops_file(path)


def load_for_rejudge(
    results: Path,
    label: str,
    baseline_ops: Mapping[str, BaselineResult],
    baseline_dir: Path | None = None,
    ops_dir: Path | None = None,
) -> CodegenStep | None:
    """The screen and timing plan a gate left in ``<results>/codegen/`` (None when it
    holds none), both opened only inside ``results`` (never through a link out); diff
    paths shown as ``<label>/codegen/diffs/…`` (the results dir as given). Every op the
    plan says was not timed is proven again from the screen and ``baseline_ops``
    (:func:`proven_skips`), every op it lists beyond the GPU budget re-planned from the
    screen, the recorded seconds of the baseline at ``baseline_dir`` and the sentinels
    and PR tier of ``ops_dir`` (:func:`replanned_over_budget`): an artifact's list alone
    drops no op from the verdict."""
    screen_file = resolve_inside(results, f"{CODEGEN_SCREEN_DIR}/{SCREEN_JSON}")
    if not screen_file.is_file():
        return None
    cg_dir = screen_file.parent
    screen = load_json_model(screen_file, CodegenScreen)
    timing_file = resolve_inside(results, f"{CODEGEN_SCREEN_DIR}/{TIMING_JSON}")
    timing = (
        load_json_model(timing_file, TimingPlanFile) if timing_file.is_file() else TimingPlanFile()
    )
    prefix = f"{label.rstrip('/')}/{CODEGEN_SCREEN_DIR}/"
    summary = summarize(screen, timing.time, prefix + SCREEN_JSON)
    if timing.screen_only:
        summary.note = "; ".join(n for n in (summary.note, cpu_note(timing)) if n)
    summary.not_timed = proven_skips(timing, screen, baseline_ops, timing_file)
    summary.over_budget = replanned_over_budget(
        timing, screen, baseline_ops, timing_file, baseline_dir, ops_dir
    )
    step = CodegenStep(summary, screen, cg_dir, prefix, held_back=dict(timing.failed))
    step.sentinel_only = sentinel_only(timing.timed)
    return step


def proven_skips(
    timing: TimingPlanFile,
    screen: CodegenScreen,
    baseline_ops: Mapping[str, BaselineResult],
    where: Path,
) -> dict[str, str]:
    """Op key -> proof, for the baseline ops ``timing`` lists as skipped, each proof
    recomputed from ``screen`` (:func:`ops_to_time`: every kernel that counts for the
    op identical, every row covered). A skipped op the screen does not prove unchanged,
    or a skip under ``--time all``, is refused: one line, exit 2 (docs/codegen.md)."""
    if timing.skipped and timing.time != "changed":
        raise ZlbenchError(
            f"{where}: {len(timing.skipped)} op(s) listed as not timed under --time "
            f"{timing.time}, which times every op: the artifact is not a gate's own plan"
        )
    listed = {k: r for k, r in baseline_ops.items() if k in timing.skipped}
    plan = ops_to_time(screen, listed)
    if plan.time:
        key, why = sorted(plan.time.items())[0]
        more = f" (+{len(plan.time) - 1} more op(s))" if len(plan.time) > 1 else ""
        raise ZlbenchError(
            one_line(
                f"{where}: {key} is listed as not timed, but the codegen screen does not "
                f"prove it unchanged ({why}){more}: judge it from a gate that timed it",
                500,
            )
        )
    return dict(plan.skip)


def replanned_over_budget(
    timing: TimingPlanFile,
    screen: CodegenScreen,
    baseline_ops: Mapping[str, BaselineResult],
    where: Path,
    baseline_dir: Path | None,
    ops_dir: Path | None,
) -> dict[str, str]:
    """Op key -> why, for the baseline ops ``timing`` lists beyond the GPU budget, each
    re-planned as the gate plans them (:func:`plan_timing`): the ops its plan covers
    (timed, skipped, beyond the budget) split by ``screen`` with the sentinels of
    ``ops_dir``, then cut to its recorded ``budget_s`` in priority order (the PR tier of
    ``ops_dir`` first) at the recorded seconds of the baseline at ``baseline_dir``. A
    list without a budget, or one the re-plan does not give, is refused: one line,
    exit 2 (docs/security.md "The judge re-derives")."""
    listed = {k for k in timing.over_budget if k in baseline_ops}
    if not listed:
        return {}
    if timing.budget_s is None:
        raise ZlbenchError(
            f"{where}: {len(listed)} op(s) listed as beyond the GPU budget, but no budget "
            "(budget_s) was given: the artifact is not a gate's own plan"
        )
    if baseline_dir is None or ops_dir is None:
        raise ZlbenchError(f"{where}: ops beyond the GPU budget cannot be re-planned here")
    planned = {*timing.timed, *timing.skipped, *timing.over_budget}
    in_plan = {k: r for k, r in baseline_ops.items() if k in planned}
    sentinels = _sentinels(ops_dir) if timing.time == "changed" else []
    plan = ops_to_time(screen, in_plan, sentinels)
    if timing.time == "all":
        plan.time.update({k: "--time all" for k in plan.skip})
        plan.skip = {}
    costs = baseline_durations(baseline_dir, per_dtype=False)
    tier = _tier(ops_dir, None, in_plan)
    plan = within_budget(plan, screen, costs, timing.budget_s, tier)
    if wrong := sorted(listed ^ set(plan.over_budget)):
        said = "lists" if wrong[0] in listed else "does not list"
        more = f" (+{len(wrong) - 1} more op(s))" if len(wrong) > 1 else ""
        raise ZlbenchError(
            one_line(
                f"{where}: {said} {wrong[0]} as beyond the GPU budget of "
                f"{timing.budget_s:g} s, which a re-plan from the codegen screen, the "
                f"baseline's recorded seconds and {ops_dir}/{PRIORITY_TIER} does not "
                f"give{more}: the artifact is not a gate's own plan",
                500,
            )
        )
    return dict(plan.over_budget)


def sentinel_only(timed: dict[str, str]) -> set[str]:
    """The ops timed as sentinels (whether their kernels are identical is read from the
    screen: :func:`identical_sentinels`)."""
    return {k for k, why in timed.items() if SENTINEL_WHY in why}


def _identical_ops(screen: CodegenScreen | None, keys: set[str]) -> set[str]:
    """Those of ``keys`` whose every recorded kernel the screen found identical (an op
    with no kernel in the screen is not proven)."""
    if screen is None:
        return set()
    seen: dict[str, bool] = {}
    for k in screen.kernels:
        for op in set(k.ops) & keys:
            seen[op] = seen.get(op, True) and k.status is CodegenClass.IDENTICAL
    return {op for op, same in seen.items() if same}


def identical_sentinels(step: CodegenStep | None) -> set[str]:
    """The ops timed only as sentinels whose every kernel the screen found identical:
    they never fail a PR on their own (:func:`zlbench.gate.decide.sentinels`)."""
    if step is None or not step.sentinel_only:
        return set()
    return _identical_ops(step.screen, step.sentinel_only)
