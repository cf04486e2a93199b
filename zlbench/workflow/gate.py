"""The gate's workflow: measure a baseline's ops, confirm flagged ops, judge, write reports.

:func:`run_gate` is what ``zlbench gate`` does and :func:`rejudge` what ``zlbench
report`` does; both take a :class:`GateJob` (plain values: the CLI fills it from
argv and the environment) and :class:`GateSeams` (how to measure, the clock, the
output streams). The judge (``zlbench.gate``) and the renderers
(``zlbench.report``) are pure; this module writes what they return into the
job's out dir: ``junit.xml``, ``report.md``, ``comment.md`` (report.md cut to fit
a PR comment), ``report.html``, ``verdict.json``, the codegen screen
(``codegen/``, :mod:`zlbench.workflow.codegen`), the measured ``results/`` batch,
the ``confirm/<i>/`` re-measures (docs/design.md) and ``steps.json`` (each step's
wall seconds). The screen's compiled kernels stay in a temp triton cache dir that
the measuring batches of the compiler under test share (docs/codegen.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from zlbench.codegen.screen import flaggems_sources
from zlbench.errors import ZlbenchError
from zlbench.gate import verdict as judging
from zlbench.gate.baselines import check_out_outside_baseline
from zlbench.gate.confirm import Remeasure
from zlbench.gate.decide import decide
from zlbench.gate.load import (
    CONFIRM_DIR,
    RESULTS_DIR,
    BaselineSet,
    ResultsSet,
    baseline_shape_file,
    check_results_root,
    load_baseline,
    load_results,
    report_label,
)
from zlbench.gate.plan import baseline_scope, read_ops_file
from zlbench.gate.thresholds import load_thresholds, override_names
from zlbench.gate.verdict import SUMMARY_SEP, GateOptions
from zlbench.models import (
    STEPS_JSON,
    GateSteps,
    GateVerdict,
    Measuring,
    Row,
    RowKey,
    Scheduling,
    Selection,
    ThresholdsFile,
    dump_json_model,
)
from zlbench.protocol.layout import (
    COMMENT_MD,
    JUNIT_XML,
    REPORT_HTML,
    REPORT_MD,
    VERDICT_JSON,
    split_op_key,
)
from zlbench.protocol.ops import selector_for
from zlbench.protocol.options import flag as plugin_flag
from zlbench.report.escape import log_line
from zlbench.report.facts import ReportExtras
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import STEP_SUMMARY_LIMIT, render_comment, render_markdown
from zlbench.runner.ab.env import PR_ENV, CompilerEnv
from zlbench.runner.catalog.inventory import inventory_op_keys
from zlbench.runner.catalog.select import current_specs
from zlbench.runner.claim import hold_dir, write_file_set
from zlbench.runner.preflight import check_checkouts, check_compiler
from zlbench.workflow.ab import AbContext, AbOptions, evidence, measure_interleaved, prepare
from zlbench.workflow.codegen import (
    CodegenStep,
    Screen,
    baseline_durations,
    cached_kernels,
    check_budget,
    explain,
    load_for_rejudge,
    measure_ops,
    plan_timing,
    report_extras,
    run_screen,
    screen_evidence,
    screen_for_gate,
    unmeasured_results,
)

COMMENT_LIMIT = 64_000  # comment.md: room for ci/pr_comment.py's footer under GitHub's 65,536


@dataclass
class GateJob:
    """What one ``gate`` / ``report`` is asked to do. Plain values only.

    ``results`` set: judge that results dir, measure nothing. Else measure the
    baseline's ops (replay) into ``<out>/results/`` (``out`` claimed as a new dir),
    re-measure flagged ops ``confirm`` times (None: the thresholds' default) into
    ``<out>/confirm/<i>/``; ``shard`` ``(K, N)`` (K 1-based) measures one shard only.
    ``selection``: its ``ops`` / ``ops_file`` (op specs) narrow the baseline's op set
    (neither: all of it), its ``ops_dir`` holds the inventories and dismiss list (never
    None here); the rest of a :class:`~zlbench.models.options.Selection` is the
    baseline's, not the job's (:func:`measure_batch`). ``flaggems_dirs``,
    ``cuda_visible_devices`` and ``argv`` are handed to the batch runner;
    ``step_summary``: a file the comment-sized report is appended to (GitHub's step
    summary); ``artifact_url``: where the full reports are (the CI run's page).
    ``time``: ``all`` ops, or only the ops the codegen screen did not prove
    unchanged plus the sentinel ops (``changed``); ``codegen_jobs``: the screen's
    rebuild processes. ``selection``, ``measuring`` (the budgets, ``--phase-timings``,
    ``--split-rows``; its ``mode`` is not the job's: every batch times as the baseline
    was timed) and ``scheduling`` (``--gpu-share``, ``--precompile-jobs``; its ``gpus``
    are not the job's: ``cuda_visible_devices`` picks them when a batch starts) are the
    option models of :mod:`zlbench.models.options`, from which every measuring batch is
    built (:func:`measure_batch`)."""

    baseline: str | Path  # shown in the reports as given
    out: Path
    selection: Selection  # --ops / --ops-file / --ops-dir
    results: str | Path | None = None  # shown in the reports as given
    thresholds: Path | None = None
    shard: tuple[int, int] | None = None
    confirm: int | None = None
    allow_env_mismatch: bool = False
    flaggems_dirs: dict[str, Path] = field(default_factory=dict)
    cuda_visible_devices: str | None = None
    step_summary: str | None = None
    argv: list[str] = field(default_factory=list)
    ab: AbOptions = field(default_factory=AbOptions)  # --base-compiler, --full-ab, --accept
    thresholds_label: str = ""  # --thresholds as given (shown in the reports)
    artifact_url: str = ""
    time: str = "all"  # --time all | changed
    time_budget_s: float | None = None  # --time-budget: GPU seconds for the changed ops
    time_first: Path | None = None  # --time-first: ops timed first within the budget
    codegen_jobs: int = 1
    # --rebuilt: the shard dirs of `zlbench codegen --shard K/N` jobs the screen classifies
    codegen_rebuilt: tuple[Path, ...] = ()
    measuring: Measuring = field(default_factory=Measuring)  # --warmup-ms, --replays...
    scheduling: Scheduling = field(default_factory=Scheduling)  # --gpu-share...

    def __post_init__(self) -> None:
        if self.selection.ops_dir is None:
            raise ValueError("GateJob: the selection has no ops_dir")


@dataclass
class MeasureRequest:
    """What the gate asks the batch runner to measure (replay of ``baseline``)."""

    baseline: BaselineSet
    ops: set[str]  # op keys "<repo>/<run_name>"
    out_dir: Path
    shard: tuple[int, int] | None
    job: GateJob
    compiler: CompilerEnv | None = None  # None: this environment (the PR's build)
    # the screen's compiled kernels (a triton cache dir); never for the base compiler
    shared_cache: Path | None = None
    # False when the screen's compiled kernels feed the measure step (shared_cache
    # set, on both A/B sides): the screen has their SASS, so the measure step's
    # records skip disassembly (cuobjdump at each op's end, off the timings)
    sass: bool = True
    # one side of an interleaved A/B: (meeting dir, side "pr" | "base", pair rule JSON)
    pair: tuple[Path, str, str] | None = None


NO_SASS_FLAG = plugin_flag("codegen-no-sass")

Measure = Callable[[MeasureRequest], tuple[Path, int]]  # -> (batch dir, batch exit code)


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def measure_batch(req: MeasureRequest) -> tuple[Path, int]:
    """Replay ``req.ops`` against the baseline's records with
    :func:`zlbench.runner.batch.run.run_batch`: (batch dir, batch exit code)."""
    from zlbench.runner.batch.budget import DEFAULT_BUDGET_FACTOR
    from zlbench.runner.batch.config import BatchConfig
    from zlbench.runner.batch.run import run_batch, sharing_cache
    from zlbench.runner.batch.shard import default_gpus

    job, m = req.job, req.baseline.manifest
    selection = Selection(  # the baseline's ops, dtypes and shapes
        all_ops=True,
        repos=tuple(sorted({split_op_key(k)[0] for k in req.ops})),
        ops_dir=job.selection.ops_dir,
        dtypes=tuple(m.dtypes),
        shape_file=baseline_shape_file(req.baseline),
    )
    mode = "kernel" if m.timing == "kernel" else "cudagraph"  # as the baseline was timed
    measuring = job.measuring.model_copy(update={"mode": mode})
    gpus = tuple(default_gpus(job.cuda_visible_devices))
    scheduling = job.scheduling.model_copy(update={"gpus": gpus})
    config = BatchConfig.from_options(
        selection,
        measuring,
        scheduling,
        out_dir=req.out_dir,
        flaggems_dirs={k: Path(v) for k, v in job.flaggems_dirs.items()},
        restrict_to=set(req.ops),
        shard=req.shard,
        replay_root=req.baseline.path,
        progress=sys.stderr,
        argv=list(job.argv),
        budget_factor=DEFAULT_BUDGET_FACTOR,  # a broken compiler fails in bounded time
        durations=baseline_durations(req.baseline.path),
        use_flagtune=m.use_flagtune,  # the tuning space the baseline was measured in
        extra_pytest_args=[] if req.sass else [NO_SASS_FLAG],  # after the measuring's
    )
    if req.shared_cache is not None:  # the screen compiled the kernels there
        config = sharing_cache(config, req.shared_cache)
    if req.compiler is not None:
        from zlbench.runner.ab.env import side_config

        config = side_config(config, req.compiler)
    if req.pair is not None:
        meet, side, rule = req.pair
        config = replace(config, pair_dir=meet, pair_side=side, pair_rule=rule)
    outcome = run_batch(config)
    return outcome.out_dir, outcome.exit_code


def with_batch_notes(verdict: GateVerdict, results_dir: Path) -> GateVerdict:
    """The verdict with the batch's systemic failures (one line each) and the ops it
    never measured (``batch.json``), which the reports lead with."""
    from zlbench.models import resolve_inside
    from zlbench.runner.batch.info import read_batch_info

    path = Path(results_dir)
    if (path / RESULTS_DIR).is_dir():  # a gate dir: its batch is results/
        path = resolve_inside(path, RESULTS_DIR)
    info = read_batch_info(path)
    if info is None:
        return verdict
    notes = {"systemic": [f.line for f in info.systemic], "not_measured": list(info.not_measured)}
    return verdict.model_copy(update=notes)


NO_COMPILER_NOTE = "`gate --results DIR` judges stored results without one"


def check_measuring(job: GateJob, repos: Iterable[str]) -> None:
    """What the real measure step needs, before any work (:mod:`zlbench.runner.preflight`):
    a triton this interpreter's benchmark processes can import and a FlagGems checkout
    for every repo of ``repos`` (gate names them by environment variable only)."""
    check_compiler(note=NO_COMPILER_NOTE)
    check_checkouts(job.flaggems_dirs, repos)


Preflight = Callable[[GateJob, Iterable[str]], None]


@dataclass
class GateSeams:
    """Where the workflow meets the world; tests replace any of them.
    ``stdout`` / ``stderr`` None: the process's streams at the time of writing.
    ``preflight``: what measuring needs, checked before the screen, the GPU or
    ``--out`` (:func:`check_measuring` with the real ``measure``; None with a stand-in,
    which needs neither a compiler nor a FlagGems checkout)."""

    measure: Measure = measure_batch
    screen: Screen = run_screen  # the codegen screen (rebuild worker processes)
    now: Callable[[], str] = now_utc
    stdout: TextIO | None = None
    stderr: TextIO | None = None
    preflight: Preflight | None = None

    def __post_init__(self) -> None:
        if self.preflight is None and self.measure is measure_batch:
            self.preflight = check_measuring

    def say(self, text: str) -> None:
        print(text, file=self.stdout or sys.stdout)

    def warn(self, text: str) -> None:
        print(text, file=self.stderr or sys.stderr)


def remeasure_job(req: MeasureRequest) -> GateJob:
    """The job of a re-measure (confirm passes, the A/B): measured as the baseline was,
    with its processes per GPU, whatever ``--gpu-share`` the screen used. A shared GPU
    screens faster, but a row timed by the plain fallback (no CUDA graph: host syncs,
    launch overhead) runs beside the other processes' CPU work: on the H200 three such
    rows measured +28 to +43 % slower shared than the baseline, with their kernels
    identical, and a shared confirmation confirmed them (docs/measurements.md, ninth
    session). A re-measure decides a FAIL, so it runs with the baseline's share. Only
    the share changes: ``--warmup-ms``/``--replays`` (``measuring``) stay the job's.
    A screen shared unlike its baseline is still an environment mismatch (exit 2
    unless ``--allow-env-mismatch``): a shared GPU shifts small kernels, so a shared
    screen can also pass a row the baseline's share would flag (docs/screening.md)."""
    share, job = req.baseline.manifest.gpu_share or 1, req.job
    if job.scheduling.gpu_share == share:
        return job
    return replace(job, scheduling=job.scheduling.model_copy(update={"gpu_share": share}))


def make_remeasure(req: MeasureRequest, confirm_root: Path, measure: Measure) -> Remeasure:
    """The confirm step's re-measure: ``times`` replay batches of the flagged ops,
    into ``<out>/confirm/<i>/`` (kept, so ``zlbench report`` re-judges the same), with
    the baseline's processes per GPU (:func:`remeasure_job`)."""
    job = remeasure_job(req)

    def remeasure(ops: list[str], times: int) -> list[Mapping[RowKey, Row]]:
        passes = []
        for i in range(1, times + 1):
            sub = MeasureRequest(req.baseline, set(ops), confirm_root / str(i), None, job)
            sub.shared_cache, sub.sass = req.shared_cache, req.sass
            batch_dir, _ = measure(sub)
            passes.append(load_results(batch_dir).sample_rows())
        return passes

    return remeasure


# --------------------------------------------------------------------------- judging


def write_reports(
    verdict: GateVerdict,
    out: Path,
    job: GateJob,
    seams: GateSeams,
    extras: ReportExtras | None = None,
) -> None:
    """junit.xml, report.md, comment.md, report.html, verdict.json into ``out`` as one
    set (verdict.json last; an I/O error leaves none of them:
    :func:`zlbench.runner.claim.write_file_set`); the report cut to the step
    summary's limit is then appended to the job's step summary file when it has one."""
    extras = extras or ReportExtras(artifact_url=job.artifact_url)
    files = {
        JUNIT_XML: render_junit(verdict),
        REPORT_MD: render_markdown(verdict, extras),
        COMMENT_MD: render_comment(verdict, COMMENT_LIMIT, extras),
        REPORT_HTML: render_html(verdict, extras),
        VERDICT_JSON: verdict.model_dump_json(indent=2) + "\n",
    }
    write_file_set(out, files, last=VERDICT_JSON)
    if job.step_summary:
        try:
            with open(job.step_summary, "a", encoding="utf-8") as f:
                f.write(render_comment(verdict, STEP_SUMMARY_LIMIT, extras) + "\n")
        except OSError as e:
            seams.warn(f"zlbench: cannot append to GITHUB_STEP_SUMMARY: {e}")


def dismissed_ops(ops_dir: Path, keys: Iterable[str]) -> dict[str, str]:
    """``<repo>/<run_name>`` -> reason, for the ops that the dismiss list names."""
    from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss
    from zlbench.runner.catalog.select import DISMISS_FILE

    entries = load_dismiss(Path(ops_dir) / DISMISS_FILE)
    out = {}
    for key in keys:
        repo, run_name = split_op_key(key)
        entry = find_dismissal(entries, repo, selector_for(run_name))
        if entry is not None:
            out[key] = f"{entry.reason} ({entry.when})"
    return out


@dataclass
class _Inputs:
    baseline: BaselineSet
    thresholds: ThresholdsFile
    opts: GateOptions
    ab: AbContext = field(default_factory=lambda: AbContext(AbOptions()))
    steps: GateSteps = field(default_factory=GateSteps)  # written to <out>/steps.json
    ab_measured: bool = False  # the measure step was the interleaved A/B


@contextmanager
def timed(steps: GateSteps, name: str) -> Iterator[None]:
    """Add the wall seconds of the ``with`` body to ``steps.seconds[name]``."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        steps.seconds[name] = round(steps.seconds.get(name, 0.0) + time.monotonic() - t0, 3)


def load_inputs(job: GateJob, seams: GateSeams) -> _Inputs:
    """The baseline, the thresholds in force and the judge's options (with the op
    scope that the selection's ``ops`` / ``ops_file`` ask for)."""
    baseline = load_baseline(job.baseline)
    check_out_outside_baseline(job.out, baseline.path)
    names = override_names(baseline.ops.values())  # an override of no baseline op: refused
    th = load_thresholds(job.thresholds, baseline.manifest.thresholds, names)
    sel = job.selection
    specs = list(sel.ops) or (read_ops_file(sel.ops_file) if sel.ops_file else None)
    if specs:  # an old scripts' op name -> its op(s), one warning each (docs/ops.md)
        specs = current_specs(sel.ops_dir, specs, current=baseline.ops, warn=seams.warn)
    from_file = not sel.ops and sel.ops_file is not None  # only a file may be wider (plan.py)
    known = inventory_op_keys(sel.ops_dir) if from_file else None
    source = f"--ops-file {sel.ops_file}" if from_file else "--ops"
    scope, unmatched = baseline_scope(baseline, specs, source=source, known=known)
    if unmatched:
        seams.warn(f"zlbench: not in the baseline, skipped: {', '.join(unmatched)}")
    opts = GateOptions(
        scope=scope,
        allow_env_mismatch=job.allow_env_mismatch,
        baseline_label=report_label(job.baseline),
        generated=seams.now(),
        thresholds_label=job.thresholds_label,
    )
    ab = prepare(job.ab, measuring=job.results is None)  # before any GPU time
    if job.results is None:
        check_budget(job.time, job.time_budget_s)  # before the screen
    if job.results is None and seams.preflight is not None:  # before the screen and --out
        keys = scope if scope is not None else baseline.ops
        seams.preflight(job, {split_op_key(k)[0] for k in keys})
    return _Inputs(baseline, th, opts, ab)


def judge_and_write(
    inputs: _Inputs,
    results: ResultsSet,
    out: Path,
    job: GateJob,
    seams: GateSeams,
    remeasure: Remeasure | None = None,
    command: str = "gate",
    ab_measure: Callable[..., Path] | None = None,
    ab_dir: Path | None = None,
    codegen: CodegenStep | None = None,
) -> int:
    """Judge ``results`` against the baseline (the ops that the job's dismiss list
    names are dismissed), then on the A/B against the base compiler (measured with
    ``ab_measure`` into ``<out>/ab/``, or read from ``<ab_dir>/ab/``) and the accept
    list; put the codegen screen's findings in (``codegen``); write the reports
    into ``out``; the verdict's exit code."""
    opts = inputs.opts
    opts.dismissed = dismissed_ops(job.selection.ops_dir, {*inputs.baseline.ops, *results.ops})
    with hold_dir(out):  # one writer of out's reports at a time; exit 2 for the other
        verdict = judging.run_gate(inputs.baseline, results, inputs.thresholds, opts, remeasure)
        screen = screen_evidence(codegen, verdict.rows)
        verdict = decide(verdict, evidence(verdict, inputs.ab, ab_dir or out, ab_measure, screen))
        verdict = explain(verdict, codegen)
        verdict = with_batch_notes(verdict, results.path)
        extras = report_extras(verdict, codegen, job.artifact_url)
        write_reports(verdict, out, job, seams, extras)
    seams.say(log_line(verdict.summary))
    seams.say(f"reports: {out / REPORT_MD}, {out / REPORT_HTML}, {out / JUNIT_XML}, "
              f"{out / VERDICT_JSON}")  # fmt: skip
    if verdict.exit_code == 2:
        why = verdict.summary.split(SUMMARY_SEP)[0].removeprefix("ERROR: ")
        seams.warn(f"zlbench {command}: error: {why}")
    return verdict.exit_code


# --------------------------------------------------------------------------- the jobs


def rejudge(job: GateJob, seams: GateSeams | None = None) -> int:
    """``zlbench report``: judge ``job.results`` (a gate output dir, a batch dir or a
    run dir) offline and write every report into ``job.out``; the verdict's exit code."""
    seams = seams or GateSeams()
    return _judge_given(load_inputs(job, seams), job, seams, command="report")


def _judge_given(inputs: _Inputs, job: GateJob, seams: GateSeams, command: str) -> int:
    if job.results is None:
        raise ZlbenchError("no results dir to judge")
    inputs.opts.results_label = report_label(job.results)
    results = load_results(job.results)
    check_results_root(job.results, results, inputs.opts.scope or inputs.baseline.ops)
    out, ab_dir = Path(job.out), Path(job.results)  # a merged gate dir holds ab/
    codegen = load_for_rejudge(Path(job.results), inputs.opts.results_label, inputs.baseline.ops)
    if codegen is not None and (codegen.skipped or codegen.summary.over_budget):
        # the gate timed only these (--time changed, --time-budget); an op listed as beyond
        # the budget whose rows the results hold is judged all the same
        over = {k: w for k, w in codegen.summary.over_budget.items() if k not in results.ops}
        codegen.summary.over_budget = over
        scope = inputs.opts.scope or set(inputs.baseline.ops)
        inputs.opts.scope = scope - set(codegen.skipped) - set(over)
    return judge_and_write(
        inputs, results, out, job, seams, command=command, ab_dir=ab_dir, codegen=codegen
    )


def run_gate(job: GateJob, seams: GateSeams | None = None) -> int:
    """``zlbench gate``: judge ``job.results`` when given, else measure (one shard
    when ``job.shard``), confirm, judge and write the reports; the exit code."""
    seams = seams or GateSeams()
    inputs = load_inputs(job, seams)
    if job.results is not None:
        if job.shard or job.confirm or job.ab.base_compiler or job.time == "changed":
            raise ZlbenchError(
                "--shard, --confirm, --base-compiler and --time changed measure on a GPU: "
                "not with --results (a gate dir's codegen/timing.json says what it timed)"
            )
        return _judge_given(inputs, job, seams, command="gate")
    out = claim_out(Path(job.out), seams)
    started = time.monotonic()
    try:  # steps.json also when a step stops the gate (the seconds spent so far)
        with tempfile.TemporaryDirectory(prefix="zl-gate-cache-") as cache:  # never in --out
            return _measure_and_judge(inputs, job, out, seams, Path(cache))
    finally:
        inputs.steps.seconds["total"] = round(time.monotonic() - started, 3)
        _write_steps(out, inputs.steps, seams)


def _write_steps(out: Path, steps: GateSteps, seams: GateSeams) -> None:
    """``<out>/steps.json`` (atomic) when ``out`` exists; a write error is one line
    (the file only informs: it never changes the gate's outcome)."""
    if not out.is_dir():
        return
    try:
        dump_json_model(out / STEPS_JSON, steps)
    except OSError as e:
        seams.warn(f"zlbench gate: cannot write {out / STEPS_JSON}: {e}")


def _measure_and_judge(
    inputs: _Inputs, job: GateJob, out: Path, seams: GateSeams, cache: Path
) -> int:
    """Screen (its kernels compiled into ``cache``), measure, confirm, judge."""
    # with a base compiler the measure step is the A/B (both sides, pairs included)
    inputs.steps.seconds = {"screen": 0.0, "measure": 0.0}
    if not inputs.ab.ab:
        inputs.steps.seconds["confirm"] = 0.0
    with timed(inputs.steps, "screen"):
        codegen = screen_step(inputs, job, out, seams, cache)
    ops = plan_timing(
        codegen,
        inputs.baseline,
        inputs.opts.scope,
        job.selection.ops_dir,
        job.time_budget_s,
        job.time_first,
    )
    if over := codegen.summary.over_budget:
        seams.say(f"zlbench gate: --time-budget {job.time_budget_s:g} s: {len(over)} changed "
                  "op(s) not timed (listed in every report)")  # fmt: skip
        inputs.opts.scope = ops
    if codegen.skipped:
        seams.say(f"zlbench gate: --time changed: {len(ops)} op(s) timed, "
                   f"{len(codegen.skipped)} proven unchanged by the codegen screen")  # fmt: skip
        inputs.opts.scope = ops  # the skipped ops are not judged MISSING
    measured = measure_ops(codegen, ops, seams.say)  # not those that fail to compile
    req = MeasureRequest(inputs.baseline, measured, out / RESULTS_DIR, job.shard, job)
    req.shared_cache = _shared_cache(inputs, codegen, cache, seams)
    req.sass = req.shared_cache is None  # the screen compiled them: it has their SASS
    th = inputs.thresholds
    inputs.opts.confirm_times = th.confirm_repeats if job.confirm is None else job.confirm
    if codegen.held_back and not req.ops:  # nothing compiles: FAIL without GPU time
        return _judge_measured(inputs, req, unmeasured_results(req.out_dir), seams, codegen)
    if job.shard is not None:
        return run_shard(inputs, req, seams, codegen)
    with timed(inputs.steps, "measure"):
        batch_dir, _ = _measure_step(inputs, req, seams)
    return _judge_measured(inputs, req, load_results(batch_dir), seams, codegen)


def _measure_step(inputs: _Inputs, req: MeasureRequest, seams: GateSeams) -> tuple[Path, int]:
    """The gate's measure step: the PR's replay batch of ``req.ops``, or with a base
    compiler the interleaved A/B of them (both compilers at once on the same GPUs,
    paired row by row, :func:`zlbench.workflow.ab.measure_interleaved`), whose PR side
    is ``results/``. (batch dir, the PR batch's exit code)."""
    if not inputs.ab.ab:
        return seams.measure(req)
    job = remeasure_job(req)  # the baseline's processes per GPU
    codes: dict[str, int] = {}

    def side(env: CompilerEnv, ops: list[str], dest: Path, pair: tuple[Path, str, str]) -> Path:
        sub = MeasureRequest(req.baseline, set(ops), dest, req.shard, job, compiler=env, pair=pair)
        sub.shared_cache = req.shared_cache if env == PR_ENV else None  # never the base's
        sub.sass = req.sass  # both sides alike
        batch_dir, codes[pair[1]] = seams.measure(sub)
        return batch_dir

    mode = "full" if inputs.ab.options.full else "changed"
    seams.say(f"zlbench gate: interleaved A/B of {len(req.ops)} op(s) against the base "
              f"compiler ({inputs.ab.options.base_compiler}), paired row by row")  # fmt: skip
    pr_dir, _ = measure_interleaved(inputs.ab, sorted(req.ops), req.out_dir.parent, side, mode)
    inputs.ab_measured = True
    return pr_dir, codes.get("pr", 0)


def screen_step(
    inputs: _Inputs, job: GateJob, out: Path, seams: GateSeams, cache: Path | None = None
) -> CodegenStep:
    """The codegen screen of the baseline's kernels, before any GPU time: the
    FlagGems checkouts' ``src/`` go first on the rebuild workers' path; the kernels
    it compiles are kept in the triton cache dir ``cache`` (None: not kept)."""
    return screen_for_gate(
        inputs.baseline.path,
        out,
        time=job.time,
        jobs=job.codegen_jobs,
        pythonpath=flaggems_sources(job.flaggems_dirs.values()),
        screen=seams.screen,
        say=seams.say,
        progress=seams.warn,
        cache_out=cache,
        rebuilt=job.codegen_rebuilt,
    )


def _shared_cache(inputs: _Inputs, step: CodegenStep, cache: Path, seams: GateSeams) -> Path | None:
    """``cache`` when the screen compiled kernels into it (the measure step of the
    compiler under test then loads them instead of compiling them; a kernel not
    there is compiled as usual), else None; one line says which."""
    if step.screen is None:
        return None
    n = inputs.steps.shared_cache_kernels = cached_kernels(cache)
    if n == 0:
        seams.say("zlbench gate: the screen left no compiled kernel: the measure step compiles")
        return None
    seams.say(f"zlbench gate: measure step uses the screen's {n} compiled kernels "
              "(shared triton cache)")  # fmt: skip
    return cache


def _judge_measured(
    inputs: _Inputs,
    req: MeasureRequest,
    results: ResultsSet,
    seams: GateSeams,
    codegen: CodegenStep | None,
    command: str = "gate",
) -> int:
    """Judge the batch that ``req`` measured (``results``), confirming flagged ops (or
    the A/B) into its gate dir, ``req.out_dir``'s parent; the verdict's exit code."""
    out = req.out_dir.parent
    inputs.opts.results_label = report_label(results.path)
    remeasure, ab = _remeasure_or_ab(inputs, req, out, seams)
    return judge_and_write(
        inputs, results, out, req.job, seams, remeasure, command, ab_measure=ab, codegen=codegen
    )


def _remeasure_or_ab(
    inputs: _Inputs, req: MeasureRequest, out: Path, seams: GateSeams
) -> tuple[Remeasure | None, Callable[..., Path] | None]:
    """The confirmation re-measure, or (with a base compiler) the A/B that replaces
    it: ``measure(side env, op keys, batch dir)`` replays the ops in that env."""
    if inputs.ab_measured:  # the measure step was the A/B: nothing to re-measure
        return None, None
    share, given = remeasure_job(req).scheduling.gpu_share, req.job.scheduling.gpu_share
    if share != given:
        what = "the A/B" if inputs.ab.ab else "confirmation passes"
        seams.say(f"zlbench gate: {what} measure with {share} process(es) per GPU as the "
                  f"baseline was (--gpu-share {given} screens only)")  # fmt: skip
    if not inputs.ab.ab:

        def confirm(sub: MeasureRequest) -> tuple[Path, int]:
            with timed(inputs.steps, "confirm"):
                return seams.measure(sub)

        return make_remeasure(req, out / CONFIRM_DIR, confirm), None

    job = remeasure_job(req)

    def measure(env: CompilerEnv, ops: list[str], batch_out: Path) -> Path:
        sub = MeasureRequest(req.baseline, set(ops), batch_out, None, job, compiler=env)
        sub.shared_cache = req.shared_cache if env == PR_ENV else None  # never the base's
        sub.sass = req.sass  # both sides alike
        with timed(inputs.steps, "ab"):
            return seams.measure(sub)[0]

    return None, measure


def claim_out(out: Path, seams: GateSeams) -> Path:
    from zlbench.runner.claim import claim_batch_dir

    if out.exists() and not out.is_dir():
        raise ZlbenchError(f"--out {out}: exists and is not a directory")
    claimed = claim_batch_dir(out, resume=False)  # never mix two gate runs in one dir
    if claimed != out:
        seams.warn(f"zlbench gate: {out} is in use; writing to {claimed}")
    return claimed


# --------------------------------------------------------------------------- one shard


def shard_scope(batch_dir: Path, results: ResultsSet, scope: set[str] | None) -> set[str]:
    """The ops of a shard's batch: its ops_status.csv rows and batch.json's ops
    (dismissed and skipped included), within ``scope`` when one is given."""
    from zlbench.runner.batch.info import read_batch_info

    keys = set(results.ops)
    info = read_batch_info(batch_dir)
    if info is not None:
        keys |= {*info.ops, *info.skipped, *(d.key for d in info.dismissed)}
    return keys & scope if scope is not None else keys


def run_shard(
    inputs: _Inputs, req: MeasureRequest, seams: GateSeams, codegen: CodegenStep | None = None
) -> int:
    """``gate --shard K/N``: measure the shard, judge its slice only to find flagged
    ops, re-measure those into ``<out>/confirm/<i>/`` (as the unsharded gate does)
    and write the slice's reports. The verdict belongs to the judge that merges the
    shards' gate dirs (``zlbench merge``) and runs ``gate --results``: exit 0 once
    measured, 2 when nothing was measured. A shard with no op to run (more shards
    than runnable ops) exits 0 with a note and an empty ``results/``."""
    from zlbench.runner.batch.plan import EmptyShardError
    from zlbench.runner.batch.status import write_ops_status

    label = f"{req.shard[0]}/{req.shard[1]}"
    try:
        with timed(inputs.steps, "measure"):
            batch_dir, code = _measure_step(inputs, req, seams)
    except EmptyShardError as e:
        write_ops_status(req.out_dir, [])  # a valid, empty batch dir for `zlbench merge`
        seams.say(f"shard {label}: nothing to measure, exit 0 ({e})")
        return 0
    results = load_results(batch_dir)
    inputs.opts.scope = shard_scope(batch_dir, results, inputs.opts.scope)
    _judge_measured(inputs, req, results, seams, codegen, command=f"gate --shard {label}")
    seams.say(
        f"shard {label}: the verdict above covers this shard only (the judge gives the verdict):"
    )
    seams.say("zlbench merge SHARD_GATE_DIRS... --out MERGED, then")
    seams.say(f"zlbench gate --baseline {req.job.baseline} --results MERGED")
    if code != 2 and codegen is not None and codegen.summary.failed:
        return 1  # a kernel that stopped compiling fails every shard
    return 2 if code == 2 else 0
