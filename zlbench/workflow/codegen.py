"""The gate's codegen step (docs/codegen.md, "Gate integration").

Before measuring, :func:`screen_for_gate` rebuilds every kernel the baseline
recorded with the compiler under test (``<out>/codegen/``); a baseline without
codegen records (v1) gets a note and every op is timed. :func:`plan_timing`
chooses the ops to time: all of them (``--time all``) or only those the screen
did not prove unchanged plus the sentinel ops (``--time changed``); the plan is
kept in ``<out>/codegen/timing.json`` so that ``zlbench report`` re-judges the
same op set (:func:`load_for_rejudge`). :func:`screen_evidence` gives the judge
(:mod:`zlbench.gate.decide`) what the screen proved (a kernel that stopped compiling
fails the gate, sentinels whose kernels are identical); after judging :func:`explain`
adds each explained row's kernels, and :func:`report_extras` the reports' parts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from zlbench.codegen.collect import has_codegen_records
from zlbench.codegen.screen import DIFFS_DIR, SCREEN_JSON, SCREEN_MD, RebuiltInput, ScreenOptions
from zlbench.codegen.select import (
    EXPLAINED,
    SENTINEL_WHY,
    SENTINELS_FILE,
    TimingPlan,
    explain_row,
    matches_spec,
    ops_to_time,
    priority_order,
    row_notes,
    within_budget,
)
from zlbench.codegen.shards import manifest_sha256
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.gate.decide import Evidence, ScreenEvidence, decide
from zlbench.gate.load import BaselineSet, ResultsSet, load_results
from zlbench.models import (
    UNPROVEN_CLASSES,
    BaselineResult,
    CodegenClass,
    CodegenScreen,
    CodegenSummary,
    GateVerdict,
    KernelNote,
    KernelScreen,
    RowVerdict,
    TimingPlanFile,
    Verdict,
    check_tree_inside,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, op_key
from zlbench.protocol.ops import read_ops_file
from zlbench.report.codegen import headline, row_explanation, setup_line
from zlbench.report.escape import one_line
from zlbench.report.facts import ReportExtras

TIME_MODES = ("all", "changed")
TIMING_JSON = "timing.json"
NO_RECORDS = "the baseline has no codegen records: no codegen screen, every op is timed"
IR_DIFF_LIMIT = 200_000  # characters of IR diff per op in report.html

Screen = Callable[[ScreenOptions, Callable[[str], None]], CodegenScreen]


def run_screen(opts: ScreenOptions, say: Callable[[str], None]) -> CodegenScreen:
    """The real screen (worker processes); the gate's default ``GateSeams.screen``."""
    from zlbench.codegen.screen import run_screen as screen

    return screen(opts, say)


@dataclass
class CodegenStep:
    """The codegen screen of one gate (or of the results dir a report re-judges)."""

    summary: CodegenSummary
    screen: CodegenScreen | None = None
    dir: Path | None = None  # where codegen.json and diffs/ are
    diff_prefix: str = f"{CODEGEN_SCREEN_DIR}/"  # diff paths as the report's reader sees them
    # op key -> the compile failure that keeps it from being timed (its rows FAILED)
    held_back: dict[str, str] = field(default_factory=dict)
    sentinel_only: set[str] = field(default_factory=set)  # timed only as sentinels
    # the plan of a screen-only gate (a CPU job's artifact, --screen): timed as listed
    given: TimingPlanFile | None = None
    plan: TimingPlanFile | None = None  # the plan written to timing.json (plan_timing)

    @property
    def skipped(self) -> dict[str, str]:
        """Op key -> proof that its kernels are unchanged: the ops not timed."""
        return self.summary.not_timed


def failed_line(k: KernelScreen) -> str:
    config = f" [{k.config}]" if k.config else ""
    return one_line(f"{k.name}{config}: {k.error or 'compile failed'}", 300)


def summarize(screen: CodegenScreen, time: str, screen_file: str) -> CodegenSummary:
    missing = len(screen.missing())
    notes = [f"{missing} kernel(s) could not be rebuilt: their ops are timed"] * bool(missing)
    view = TimedKernels.of(screen)
    notes.append(view.note(view.by_op))  # setup kernels counted as timed, when any are
    return CodegenSummary(
        screened=True,
        note="; ".join(n for n in notes if n),
        time=time,
        kernels=len(screen.kernels),
        changed=len(screen.changed()),
        failed=[failed_line(k) for k in screen.failed()],
        screen_file=screen_file,
        wall_s=screen.wall_s,  # the JUnit codegen suite's time
    )


def no_screen(time: str) -> CodegenStep:
    return CodegenStep(CodegenSummary(screened=False, note=NO_RECORDS, time=time))


def screen_for_gate(
    baseline_dir: Path,
    out: Path,
    *,
    time: str,
    jobs: int,
    pythonpath: list[str],
    screen: Screen,
    say: Callable[[str], None],
    progress: Callable[[str], None],
    cache_out: Path | None = None,
    rebuilt: tuple[Path, ...] = (),
) -> CodegenStep:
    """Screen the baseline's kernels into ``<out>/codegen/`` (nothing when the
    baseline has no codegen records: a note, every op timed). ``say``: what it
    found (stdout); ``progress``: the screen's progress lines (stderr);
    ``cache_out``: a triton cache dir the rebuilt kernels are also put in;
    ``rebuilt``: shard dirs of `zlbench codegen --shard K/N` jobs, classified instead
    of rebuilding (then nothing is put in ``cache_out``)."""
    if not has_codegen_records(baseline_dir):
        say(f"zlbench gate: {NO_RECORDS}")
        return no_screen(time)
    cg_dir = out / CODEGEN_SCREEN_DIR
    opts = ScreenOptions(
        baseline=baseline_dir,
        out=cg_dir,
        jobs=jobs,
        pythonpath=pythonpath,
        cache_out=cache_out,
        exec_generated=True,  # the gate loaded the baseline only as its manifest says
        rebuilt=RebuiltInput(rebuilt, manifest_sha256(baseline_dir), compiler_fingerprint())
        if rebuilt
        else None,
    )
    result = screen(opts, progress)
    setup = TimedKernels.of(result).setup_changed()
    apart = f", {len(setup)} of them only outside the timed region" if setup else ""
    say(f"zlbench gate: codegen screen: {headline(result)}{apart} ({cg_dir / SCREEN_MD})")
    for k in result.failed():
        progress(f"zlbench gate: codegen: FAILED {failed_line(k)}")
    summary = summarize(result, time, f"{CODEGEN_SCREEN_DIR}/{SCREEN_JSON}")
    if isinstance(screen, ScreenArtifact):  # taken from a CPU job: its plan is timed
        summary.note = "; ".join(n for n in (summary.note, cpu_note(screen.plan)) if n)
        return CodegenStep(summary, result, cg_dir, given=screen.plan)
    return CodegenStep(summary, result, cg_dir)


def cached_kernels(cache: Path) -> int:
    """How many compiled kernels the triton cache dir ``cache`` holds (triton's file
    cache: one ``<key>/__grp__<name>.json`` group per compiled kernel)."""
    return sum(1 for _ in Path(cache).glob("*/__grp__*"))


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
    )
    if step.given is not None:  # keep where the plan came from (the reports say so)
        timing = timing.model_copy(update=_origin(step.given))
    dump_json_model(step.dir / TIMING_JSON, timing)
    step.plan = timing
    return plan.timed_ops()


# --------------------------------------------------------------------------- a CPU job's screen


def compiler_fingerprint() -> str:
    """The compiler under test as the screen job and the measuring gate both see it,
    without importing it: ``<distribution> <version> sha256:<16 hex>`` for the
    distribution that provides ``triton``, the digest over the file hashes its RECORD
    lists (dist-info, byte code and console scripts left out: one wheel installed in
    two venvs on two machines gives one digest), or over the package's files where no
    RECORD lists them (a source checkout, an editable install); "" when no ``triton``
    is importable."""
    import hashlib
    import importlib.metadata as md
    import importlib.util

    h, names = hashlib.sha256(), []
    for name in sorted(set(md.packages_distributions().get("triton", []))):
        dist = md.distribution(name)
        names.append(f"{dist.metadata['Name']} {dist.version}")
        for f in sorted(dist.files or [], key=str):
            top = f.parts[0]  # "..": a console script, whose shebang names the venv
            if f.hash is None or top == ".." or top.endswith(".dist-info"):
                continue
            if "__pycache__" in f.parts:
                continue
            h.update(f"{f.as_posix()},{f.hash.mode}={f.hash.value}\n".encode())
    if h.digest() == hashlib.sha256().digest():  # no RECORD with hashes: the files
        try:
            spec = importlib.util.find_spec("triton")
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            return ""
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(root).as_posix()}\n".encode())
                h.update(hashlib.sha256(path.read_bytes()).digest())
        names = names or ["triton (no distribution)"]
    return f"{', '.join(names)} sha256:{h.hexdigest()[:16]}"


def cpu_note(plan: TimingPlanFile) -> str:
    """The reports' line for a screen taken from a CPU job's artifact."""
    when = f" at {plan.generated}" if plan.generated else ""
    return f"codegen screen from a CPU job (gate --screen-only{when}, {plan.compiler})"


def _origin(plan: TimingPlanFile) -> dict:
    keys = ("screen_only", "baseline_sha256", "compiler", "scope", "generated")
    return {k: getattr(plan, k) for k in keys}


@dataclass
class ScreenArtifact:
    """A screen-only gate's ``codegen/`` (``dir``), checked by :func:`load_screen_artifact`:
    used as the gate's ``screen`` seam it copies the screen into the gate's own
    ``codegen/`` instead of rebuilding anything, and its ``plan`` is what is timed."""

    dir: Path
    plan: TimingPlanFile
    screen: CodegenScreen

    def __call__(self, opts: ScreenOptions, say: Callable[[str], None]) -> CodegenScreen:
        import shutil

        opts.out.mkdir(parents=True, exist_ok=True)
        for name in (SCREEN_JSON, SCREEN_MD):
            if (self.dir / name).is_file():
                shutil.copyfile(self.dir / name, opts.out / name)
        if (self.dir / DIFFS_DIR).is_dir():  # no link out: load_screen_artifact checked
            shutil.copytree(self.dir / DIFFS_DIR, opts.out / DIFFS_DIR, dirs_exist_ok=True)
        say(f"zlbench gate: {cpu_note(self.plan)}: not re-run here")
        return self.screen


def load_screen_artifact(
    given: Path, baseline: BaselineSet, scope: set[str] | None, compiler: str
) -> ScreenArtifact:
    """The screen-only gate's output ``given`` (its ``--out``, or the ``codegen/`` in it)
    for a gate of ``baseline`` over ``scope`` (None: every op) with the compiler
    ``compiler`` (:func:`compiler_fingerprint`), or one line, exit 2: not a screen-only
    plan, a broken file, another baseline (its manifest's sha256), another compiler,
    another op set, a plan that does not cover the op set or skips an op its screen
    does not prove unchanged. Read only inside ``given``; nothing is written."""
    where = f"--screen {given}"
    if not Path(given).is_dir():
        raise ZlbenchError(f"{where}: no such directory")
    rel = "" if (Path(given) / TIMING_JSON).is_file() else CODEGEN_SCREEN_DIR
    check_tree_inside(given, rel, where)  # its diffs/ are copied: no link out
    timing_file = resolve_inside(given, f"{rel}/{TIMING_JSON}" if rel else TIMING_JSON, where)
    if not timing_file.is_file():
        raise ZlbenchError(
            f"{where}: no {CODEGEN_SCREEN_DIR}/{TIMING_JSON}: not the --out of "
            "`zlbench gate --screen-only`"
        )
    plan = load_json_model(timing_file, TimingPlanFile)  # broken: one line
    if not plan.screen_only:
        raise ZlbenchError(
            f"{timing_file}: not a screen-only gate's plan (a measuring gate "
            "wrote it): give the --out of `zlbench gate --screen-only`"
        )
    if plan.baseline_sha256 != manifest_sha256(baseline.path):
        raise ZlbenchError(
            f"{where}: screened against another baseline (manifest sha256 "
            f"{plan.baseline_sha256[:12] or 'none'}, {baseline.path}'s is "
            f"{manifest_sha256(baseline.path)[:12]}): re-run the screen job"
        )
    if plan.compiler != compiler:
        raise ZlbenchError(
            f"{where}: screened with another compiler ({plan.compiler or 'none'}"
            f"), this gate's is {compiler or 'none'}: re-run the screen job"
        )
    keys = sorted(k for k in baseline.ops if scope is None or k in scope)
    if plan.scope != keys:
        raise ZlbenchError(
            f"{where}: screened for another op set ({len(plan.scope)} op(s), "
            f"this gate's has {len(keys)}): give both the same --ops/--ops-file"
        )
    parts = [set(plan.timed), set(plan.skipped), set(plan.over_budget)]
    if (
        set().union(*parts) != set(keys)
        or sum(map(len, parts)) != len(keys)
        or (sorted(plan.order) != sorted(plan.timed))
    ):
        raise ZlbenchError(
            f"{timing_file}: the plan does not split the op set into timed, "
            "skipped and over-budget ops: not a screen-only gate's own plan"
        )
    screen_file = timing_file.with_name(SCREEN_JSON)
    if not screen_file.is_file():
        if has_codegen_records(baseline.path):
            raise ZlbenchError(f"{where}: no {SCREEN_JSON} beside {TIMING_JSON}")
        screen = CodegenScreen(baseline_dir=str(baseline.path))  # v1: every op timed
    else:
        screen = load_json_model(screen_file, CodegenScreen)
        listed = {k: r for k, r in baseline.ops.items() if k in plan.skipped}
        proven_skips(plan, screen, listed, timing_file)  # every skip proven again
    return ScreenArtifact(timing_file.parent, plan, screen)


def screen_only(
    step: CodegenStep,
    baseline: BaselineSet,
    scope: set[str] | None,
    ops_dir: Path,
    *,
    budget_s: float | None,
    first: Path | None,
    compiler: str,
    generated: str,
    out: Path,
) -> TimingPlanFile:
    """``gate --screen-only``: after the screen (``step``, written into ``<out>/codegen/``),
    plan the ops to time as a measuring gate would (sentinels, the PR tier, the largest
    code change first, within ``budget_s``) and write the plan, stamped with what a
    measuring gate checks before it takes it (:func:`load_screen_artifact`): the
    baseline's manifest sha256, the compiler's fingerprint, the op set."""
    timed = plan_timing(step, baseline, scope, ops_dir, budget_s, first)
    keys = sorted(k for k in baseline.ops if scope is None or k in scope)
    plan = step.plan or TimingPlanFile(  # no codegen records (v1): every op timed
        time=step.summary.time, timed={k: NO_RECORDS for k in keys}, order=keys
    )
    plan = plan.model_copy(
        update=dict(
            screen_only=True,
            baseline_sha256=manifest_sha256(baseline.path),
            compiler=compiler,
            scope=keys,
            generated=generated,
        )
    )
    assert set(plan.timed) == timed
    dump_json_model(out / CODEGEN_SCREEN_DIR / TIMING_JSON, plan)
    return plan


def check_budget(time: str, budget_s: float | None) -> None:
    """A ``--time-budget`` that can cut the changed ops, or one line, exit 2."""
    if budget_s is not None and not (0 < budget_s < math.inf):
        raise ZlbenchError(f"--time-budget must be a number of seconds > 0, got {budget_s}")
    if budget_s is not None and time != "changed":
        raise ZlbenchError("--time-budget cuts the changed ops: only with --time changed")


def baseline_durations(baseline_dir: Path, per_dtype: bool = True) -> dict[str, float]:
    """The recorded seconds per op of the baseline's ops_status.csv (per dtype, or as
    recorded: a GPU budget's unit), when it ships one (they size the batch's time budget
    and the gate's --time-budget); else none."""
    from zlbench.protocol.layout import OPS_STATUS
    from zlbench.runner.batch.costs import load_durations

    path = Path(baseline_dir) / OPS_STATUS
    return load_durations(path, per_dtype) if path.is_file() else {}


def _tier(ops_dir: Path, first: Path | None, ops: Mapping[str, BaselineResult]) -> set[str]:
    """The op keys of ``ops`` that the ops file ``first`` (default the PR tier) names."""
    path = first if first is not None else Path(ops_dir) / PRIORITY_TIER
    if not path.is_file():
        if first is not None:
            raise ZlbenchError(f"--time-first {first}: ops file not found")
        return set()
    specs = read_ops_file(path)
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
            out[op] = _not_timed(failed[0].name, failed[0].config, failed[0].error) + more
    return out


def measure_ops(step: CodegenStep, ops: set[str], say: Callable[[str], None]) -> set[str]:
    """The ops the gate measures on the GPU: ``ops`` less those whose kernels fail to
    compile (``step.held_back``: their rows are FAILED without GPU time); one line
    says how many were held back."""
    held = set(step.held_back) & set(ops)
    if held:
        rest = len(ops) - len(held)
        tail = f"{rest} op(s) measured" if rest else "nothing to measure on the GPU"
        say(f"zlbench gate: {len(held)} op(s) not timed: their kernels fail to compile; {tail}")
    return set(ops) - held


def unmeasured_results(batch_dir: Path) -> ResultsSet:
    """An empty results batch at ``batch_dir`` (written, so that ``zlbench report``
    re-judges the gate dir): every op in scope failed to compile, none was measured."""
    from zlbench.runner.batch.status import write_ops_status

    batch_dir.mkdir(parents=True, exist_ok=True)
    write_ops_status(batch_dir, [])
    return load_results(batch_dir)


def _sentinels(ops_dir: Path) -> list[str]:
    path = Path(ops_dir) / SENTINELS_FILE
    if not path.is_file():
        raise ZlbenchError(
            f"{path}: no sentinel op list; --time changed needs one (docs/codegen.md)"
        )
    return read_ops_file(path)


def load_for_rejudge(
    results: Path, label: str, baseline_ops: Mapping[str, BaselineResult]
) -> CodegenStep | None:
    """The screen and timing plan a gate left in ``<results>/codegen/`` (None when it
    holds none), both opened only inside ``results`` (never through a link out); diff
    paths shown as ``<label>/codegen/diffs/…`` (the results dir as given). Every op the
    plan says was not timed is proven again from the screen and ``baseline_ops``
    (:func:`proven_skips`): an artifact's list alone drops no op from the verdict."""
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
    summary.over_budget = {k: v for k, v in timing.over_budget.items() if k in baseline_ops}
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


# --------------------------------------------------------------------------- the verdict


def _noted(r: RowVerdict, notes: list[KernelNote]) -> bool:
    """Rows that carry their kernels in verdict.json: the explained verdicts and any
    row that launched a kernel the screen did not prove identical."""
    return r.verdict in EXPLAINED or any(n.status in UNPROVEN_CLASSES for n in notes)


PRIORITY_TIER = "tiers/pr.txt"  # in the ops dir: timed first within --time-budget


def screen_evidence(step: CodegenStep | None, rows: list[RowVerdict]) -> ScreenEvidence | None:
    """What the screen proved that changes verdicts (:mod:`zlbench.gate.decide`): the
    ops held back for compile failures, each of their rows' own failing kernel, the
    compile lead, the sentinels whose kernels are identical. None without a screen."""
    if step is None:
        return None
    failures: dict = {}
    if step.held_back and step.screen is not None:
        held = [r.key for r in rows if op_key(r.key.repo, r.key.run_name) in step.held_back]
        for key, notes in row_notes(held, step.screen, step.diff_prefix).items():
            own = [n for n in notes if n.status is CodegenClass.FAILED]
            if own:
                failures[key] = _not_timed(own[0].name, own[0].config, own[0].error)
    return ScreenEvidence(
        summary=step.summary,
        held_back=dict(step.held_back),
        row_failures=failures,
        compile_lead=compile_lead(step) if step.summary.failed else "",
        identical_sentinels=identical_sentinels(step),
    )


def explain(v: GateVerdict, step: CodegenStep | None) -> GateVerdict:
    """``v`` with each explained row's kernels (``codegen``) and its explanation in its
    reason (no verdict changes: the judge decided them). A row of an op held back for
    a compile failure already names its failing kernel."""
    if step is None or step.screen is None:
        return v
    notes = row_notes([r.key for r in v.rows], step.screen, step.diff_prefix)
    rows = []
    for r in v.rows:
        if op_key(r.key.repo, r.key.run_name) not in step.held_back:
            r = explain_row(r, notes[r.key])
        noted = _noted(r, notes[r.key])
        rows.append(r.model_copy(update={"codegen": notes[r.key]}) if noted else r)
    return v.model_copy(update={"rows": rows})


def apply_screen(v: GateVerdict, step: CodegenStep | None) -> GateVerdict:
    """``v`` decided on the screen's evidence (compile failures, no sentinels), then
    explained: the codegen summary, each explained row's kernels and explanation; the
    rows of the ops held back for compile failures FAILED with that failure as reason;
    a kernel that no longer compiles fails the gate: FAIL, exit 1, led by
    :func:`compile_lead`. The screen alone: a gate decides on all of its evidence at
    once."""
    if step is None:
        return v
    ev = screen_evidence(step, v.rows)
    assert ev is not None
    ev = replace(ev, identical_sentinels=frozenset())
    return explain(decide(v, Evidence(screen=ev)), step)


def compile_lead(step: CodegenStep) -> str:
    """The verdict's lead when kernels fail to compile, one line: how many, the error,
    where (kernels, ops not timed, the screen's report)."""
    kernels = step.screen.failed() if step.screen is not None else []
    n = len(step.summary.failed)
    errors = Counter(_error(k) for k in kernels)
    error, _ = errors.most_common(1)[0] if errors else ("compile failed", 0)
    other = f" (+{len(errors) - 1} other error(s))" if len(errors) > 1 else ""
    names = list(dict.fromkeys(k.name for k in kernels))
    functions = f"{len(names)} kernel functions: " if len(names) != n else ""
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    where = [functions + names[0] + more] * bool(names)
    if step.held_back:
        where.append(f"{len(step.held_back)} op(s) not timed, their rows FAILED")
    if step.summary.screen_file:
        where.append(str(Path(step.summary.screen_file).with_name(SCREEN_MD)))
    text = f"{n} kernel(s) the baseline compiled fail to compile: {error}{other}"
    return one_line(text + (f" ({'; '.join(where)})" if where else ""), 500)


def _error(k: KernelScreen) -> str:
    return one_line((k.error or "compile failed").removeprefix("compile failed: "), 200)


def _not_timed(name: str, config: str, error: str | None) -> str:
    """``not timed: mm_kernel [BLOCK=64 …] fails to compile: RuntimeError: …``."""
    config = f" [{config}]" if config else ""
    why = (error or "compile failed").removeprefix("compile failed: ")
    return one_line(f"not timed: {name}{config} fails to compile: {why}", 300)


# --------------------------------------------------------------------------- the reports


def _op_notes(rows: Iterable[RowVerdict], verdicts: frozenset) -> dict[str, list[KernelNote]]:
    """Op key -> the kernels of its rows with these verdicts, each once."""
    out: dict[str, dict[str, KernelNote]] = {}
    for r in rows:
        if r.verdict in verdicts and r.codegen:
            for n in r.codegen:
                out.setdefault(op_key(r.key.repo, r.key.run_name), {}).setdefault(n.kernel_id, n)
    return {k: list(v.values()) for k, v in out.items()}


def report_extras(v: GateVerdict, step: CodegenStep | None, artifact_url: str) -> ReportExtras:
    """The reports' extras: the run's link, the screen's counts, per failing op its
    codegen explanation and (for report.html) the IR diffs of its changed kernels."""
    extras = ReportExtras(artifact_url=artifact_url)
    if step is None or step.screen is None:
        return extras
    extras.codegen = (step.summary.changed, step.summary.kernels)
    extras.setup_changed = [setup_line(k) for k in TimedKernels.of(step.screen).setup_changed()]
    regressed = _op_notes(v.rows, frozenset({Verdict.REGRESSION}))
    extras.explanations = {k: row_explanation(ns) for k, ns in regressed.items()}
    explained = _op_notes(v.rows, EXPLAINED)
    extras.ir_diffs = {k: t for k, ns in explained.items() if (t := _diffs(step, ns))}
    return extras


def _diffs(step: CodegenStep, notes: list[KernelNote]) -> str:
    """The diff files of ``notes`` (read from the screen's dir), up to IR_DIFF_LIMIT."""
    texts = []
    left = IR_DIFF_LIMIT + 1  # characters still wanted: never read a whole huge file
    for n in notes:
        if not n.diff_file or step.dir is None or left <= 0:
            continue
        try:  # a path from an artifact: read only inside the screen's dir
            path = resolve_inside(step.dir, n.diff_file.removeprefix(step.diff_prefix))
            if not path.is_file():  # a FIFO would hang the report
                continue
            with path.open(encoding="utf-8", errors="replace") as f:
                texts.append(f.read(left))
            left -= len(texts[-1]) + 1
        except (OSError, ZlbenchError):
            continue
    text = "\n".join(texts)
    if len(text) > IR_DIFF_LIMIT:
        text = text[:IR_DIFF_LIMIT] + "\n… (cut: the whole diff is in the codegen/diffs/ dir)\n"
    return text
