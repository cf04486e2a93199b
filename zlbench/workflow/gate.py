"""The gate's workflow: measure a baseline's ops, confirm flagged ops, judge, write reports.

:func:`run_gate` is what ``zlbench gate`` does and :func:`rejudge` what ``zlbench
report`` does; both take a :class:`GateJob` (plain values: the CLI fills it from
argv and the environment) and :class:`GateSeams` (how to measure, the clock, the
output streams; :mod:`zlbench.workflow.gate_job`). The judge (``zlbench.gate``) and
the renderers (``zlbench.report``) are pure; the workflow writes what they return into
the job's out dir: ``junit.xml``, ``report.md``, ``comment.md`` (report.md cut to fit a
PR comment), ``report.html``, ``verdict.json`` (:mod:`zlbench.workflow.gate_judge`),
the codegen screen (``codegen/``, :mod:`zlbench.workflow.codegen`), the measured
``results/`` batch, the ``confirm/<i>/`` re-measures (docs/design.md) and
``steps.json`` (each step's wall seconds). The screen's compiled kernels stay in a
temp triton cache dir that the measuring batches of the compiler under test share
(docs/codegen.md).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from zlbench.codegen.screen import flaggems_sources
from zlbench.errors import ZlbenchError
from zlbench.gate.confirm import Remeasure
from zlbench.gate.load import (
    CONFIRM_DIR,
    RESULTS_DIR,
    BaselineSet,
    ResultsSet,
    check_results_root,
    load_results,
    report_label,
)
from zlbench.models import REPLAY_DIR, RowKey
from zlbench.protocol.cache import kernel_cache_dir, mark_built
from zlbench.protocol.layout import op_key
from zlbench.runner.ab.env import PR_ENV, CompilerEnv
from zlbench.runner.baseline_batch import baseline_durations, durations_gpu
from zlbench.runner.batch.parts import row_picks
from zlbench.workflow.ab import measure_interleaved
from zlbench.workflow.codegen import (
    cached_kernels,
    measure_ops,
    screen_for_gate,
    unmeasured_results,
)
from zlbench.workflow.codegen_plan import load_for_rejudge, plan_timing, sentinel_ops
from zlbench.workflow.codegen_step import CodegenStep
from zlbench.workflow.gate_job import (
    NO_SASS_FLAG,
    GateJob,
    GateSeams,
    MeasureRequest,
    make_remeasure,
    measure_batch,
    remeasure_job,
)
from zlbench.workflow.gate_judge import (
    GateInputs,
    claim_out,
    dismissed_ops,
    judge_and_write,
    load_inputs,
    timed,
    write_steps,
)
from zlbench.workflow.gate_record import record_of, write_record

__all__ = [  # the entry paths, and the names the tests take from here
    "NO_SASS_FLAG",
    "GateInputs",
    "GateJob",
    "GateSeams",
    "MeasureRequest",
    "dismissed_ops",
    "measure_batch",
    "rejudge",
    "remeasure_job",
    "run_gate",
    "screen_step",
]


# --------------------------------------------------------------------------- the jobs


def rejudge(job: GateJob, seams: GateSeams | None = None) -> int:
    """``zlbench report``: judge ``job.results`` (a gate output dir, a batch dir or a
    run dir) offline and write every report into ``job.out``; the verdict's exit code."""
    seams = seams or GateSeams()
    started = time.monotonic()  # a big baseline takes seconds (v7: ~8 s): said on stderr
    inputs = load_inputs(job, seams)
    err = seams.stderr or sys.stderr
    if getattr(err, "isatty", None) and err.isatty():  # a log keeps a refusal one line
        scope = inputs.opts.scope
        n = len(scope) if scope is not None else len(inputs.baseline.ops)
        seams.warn(f"zlbench report: judging {n} op(s) of {report_label(job.results or '')} "
                   f"against {inputs.opts.baseline_label} …")  # fmt: skip
    code = _judge_given(inputs, job, seams, command="report")
    seams.warn(f"zlbench report: judged in {time.monotonic() - started:.1f} s")
    return code


def _judge_given(inputs: GateInputs, job: GateJob, seams: GateSeams, command: str) -> int:
    if job.results is None:
        raise ZlbenchError("no results dir to judge")
    label, scope = report_label(job.results), inputs.opts.scope
    results = load_results(job.results)
    check_results_root(job.results, results, scope or inputs.baseline.ops)
    out, ab_dir = Path(job.out), Path(job.results)  # a merged gate dir holds ab/
    codegen = load_for_rejudge(
        Path(job.results), label, inputs.baseline.ops, inputs.baseline.path, job.selection.ops_dir
    )
    if codegen is not None and (codegen.skipped or codegen.summary.over_budget):
        # the gate timed only these (--time changed, --time-budget); an op listed as beyond
        # the budget whose rows the results hold is judged all the same
        over = {k: w for k, w in codegen.summary.over_budget.items() if k not in results.ops}
        codegen.summary.over_budget = over
        scope = (scope or set(inputs.baseline.ops)) - set(codegen.skipped) - set(over)
    return judge_and_write(
        *(inputs, results, out, job, seams),
        scope=scope,
        results_label=label,
        command=command,
        ab_dir=ab_dir,
        codegen=codegen,
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
        if job.kernel_cache is not None:
            raise ZlbenchError("--kernel-cache keeps what a gate compiles: not with --results")
        return _judge_given(inputs, job, seams, command="gate")
    out = claim_out(Path(job.out), seams)
    write_record(out, record_of(job, inputs.baseline.path, inputs.specs, inputs.opts.scope))
    started = time.monotonic()
    try:  # steps.json also when a step stops the gate (the seconds spent so far)
        with (  # never in --out
            tempfile.TemporaryDirectory(prefix="zl-gate-cache-") as cache,
            tempfile.TemporaryDirectory(prefix="zl-gate-base-cache-") as base_cache,
        ):
            pr_dir, base_dir = kernel_caches(job) or (None, None)
            return _measure_and_judge(
                *(inputs, job, out, seams),
                pr_dir or Path(cache),
                base_dir or Path(base_cache),
            )
    finally:
        inputs.steps.seconds["total"] = round(time.monotonic() - started, 3)
        write_steps(out, inputs.steps, seams)


def _measure_and_judge(
    inputs: GateInputs,
    job: GateJob,
    out: Path,
    seams: GateSeams,
    cache: Path,
    base_cache: Path | None = None,
) -> int:
    """Screen (its kernels compiled into ``cache``; with ``--replay``, the base
    compiler's into ``base_cache``), measure, confirm, judge."""
    # with a base compiler the measure step is the A/B (both sides, pairs included)
    inputs.steps.seconds = {"screen": 0.0, "measure": 0.0}
    if not inputs.ab.ab:
        inputs.steps.seconds["confirm"] = 0.0
    kept = job.kernel_cache is not None
    keep_base = job.replay or kept  # a later --replay builds there
    before = cached_kernels(cache) if kept else 0  # what a kept cache held before the screen
    with timed(inputs.steps, "screen"):
        codegen = screen_step(inputs, job, out, seams, cache, base_cache if keep_base else None)
    if kept:
        mark_screened(codegen, cache, before)
    ops = plan_timing(
        codegen,
        inputs.baseline,
        inputs.opts.scope,
        job.selection.ops_dir,
        None if job.replay else job.time_budget_s,  # --replay: the budget is the replay's
        job.time_first,
    )
    scope = inputs.opts.scope  # the ops judged: those timed when the plan left some out
    if over := codegen.summary.over_budget:
        seams.say(f"zlbench gate: --time-budget {job.time_budget_s:g} s: {len(over)} changed "
                  "op(s) not timed (listed in every report)")  # fmt: skip
        scope = ops
    if codegen.skipped:
        seams.say(f"zlbench gate: --time changed: {len(ops)} op(s) timed, "
                   f"{len(codegen.skipped)} proven unchanged by the codegen screen")  # fmt: skip
        scope = ops  # the skipped ops are not judged MISSING
    picks: dict[str, tuple[tuple[str, str, int], ...]] = {}  # the replay's op-path rows
    if job.replay and codegen.screen is not None:
        with timed(inputs.steps, "replay"):
            ops, scope, picks = replay_step(
                inputs, job, out, seams, codegen, set(ops), scope, cache, base_cache
            )
    elif job.replay:
        seams.say("zlbench gate: --replay: no codegen screen (the baseline has no codegen "
                  "records): every changed op is timed through FlagGems")  # fmt: skip
    if job.replay_part is not None:  # the merging gate (--replayed) measures and judges
        k, n = job.replay_part
        seams.say(f"zlbench gate: replay part {k}/{n} written to {out / REPLAY_DIR}; the "
                  f"verdict: the same gate with --replayed and every part's --out")  # fmt: skip
        return 0
    measured = measure_ops(codegen, ops, seams.say)  # not those that fail to compile
    req = MeasureRequest(inputs.baseline, measured, out / RESULTS_DIR, job.shard, job)
    req.rows = picks
    req.shared_cache = _shared_cache(inputs, codegen, cache, seams)
    req.base_cache = _base_shared_cache(inputs, base_cache, seams)
    req.sass = req.shared_cache is None  # the screen compiled them: it has their SASS
    if codegen.held_back and not req.ops:  # nothing compiles: FAIL without GPU time
        unmeasured = unmeasured_results(req.out_dir)
        return _judge_measured(inputs, req, unmeasured, seams, codegen, scope)
    if job.shard is not None:
        return run_shard(inputs, req, seams, codegen, scope)
    with timed(inputs.steps, "measure"):
        batch_dir, _ = _measure_step(inputs, req, seams)
    return _judge_measured(inputs, req, load_results(batch_dir), seams, codegen, scope)


def _timed_anyway(
    inputs: GateInputs, job: GateJob, codegen: CodegenStep, ops: set[str]
) -> set[str]:
    """The gate's own sentinels among ``ops``: timed through FlagGems whatever the
    replay covers. With ``--time all`` every op is timed and none as a sentinel (the
    plan reads no sentinel list), so they are read here: without them a ``--time all
    --replay`` gate timed no op through FlagGems that the replay covered (an A/A on an
    H100, 2026-12-06: add, exp, sum and softmax judged by replay alone)."""
    anyway = set(codegen.sentinel_only)
    if job.time == "all":
        scoped = {k: r for k, r in inputs.baseline.ops.items() if k in ops}
        anyway |= sentinel_ops(scoped, job.selection.ops_dir)
    return anyway


def _runner_gpu(cuda_visible_devices: str | None) -> str | None:
    """This runner's GPU model (nvidia-smi's name of the first GPU the gate uses), None
    when it cannot say."""
    from zlbench.runner.batch.shard import default_gpus, gpu_model

    return gpu_model(default_gpus(cuda_visible_devices)[0])


def _recorded_on(baseline_gpu: str | None, runner_gpu: str | None) -> str | None:
    """What the replay's forecast says of the baseline's recorded op seconds against
    this runner's GPU model (the batch's words), None when the baseline names none."""
    from zlbench.runner.batch.forecast import where_recorded

    if not baseline_gpu:
        return None
    return where_recorded(baseline_gpu, runner_gpu)


def replay_step(
    inputs: GateInputs,
    job: GateJob,
    out: Path,
    seams: GateSeams,
    codegen: CodegenStep,
    ops: set[str],
    scope: set[str] | None,
    cache: Path | None = None,
    base_cache: Path | None = None,
) -> tuple[set[str], set[str] | None, dict[str, tuple[tuple[str, str, int], ...]]]:
    """``--replay``: the changed rows of ``ops`` timed by kernel replay first
    (:mod:`zlbench.runner.replay`, ``<out>/replay/``); (the ops the op path still
    measures, the ops judged, op key -> the only rows the op path measures of an op
    the replay judged in part: ``runner.batch.parts.row_picks`` of its baseline rows).
    An op with a row deferred beyond ``--time-budget`` is neither measured nor judged:
    it is listed with the command that times it, as an op over the op-level budget is.
    ``cache``: the triton cache dir the screen compiled the PR's kernels into (the
    replay's PR side builds there: a kernel the screen built is not compiled again);
    ``base_cache``: the same for the base compiler's side, used when the screen's base
    rebuild put kernels there (not when the base-screen cache spared it)."""
    from zlbench.models.replay import DEFAULT_L2
    from zlbench.runner.replay import families_of, replay_changed

    assert codegen.screen is not None and inputs.ab.base is not None
    runner = _runner_gpu(job.cuda_visible_devices)
    outcome = replay_changed(
        baseline=inputs.baseline,
        screen=codegen.screen,
        ops=ops,
        out=out,
        pr=PR_ENV,
        base=inputs.ab.base,
        pythonpath=flaggems_sources(job.flaggems_dirs.values()),
        budget_s=job.time_budget_s,
        rerun=rerun_command(job.argv),
        say=seams.say,
        families=families_of(inputs.baseline, job.selection.ops_dir),
        timed_anyway=_timed_anyway(inputs, job, codegen, ops),
        every_row=job.time == "all",  # nightly, and the replay's own A/A
        jobs=job.codegen_jobs,
        op_costs=baseline_durations(inputs.baseline.path, per_dtype=False),
        pr_cache=cache,
        # the base's builds go to a kernel cache whatever it holds; a gate's own only
        # when the screen's base rebuild filled it (else the replay's own dir)
        base_cache=(
            base_cache
            if base_cache is not None and (job.kernel_cache or cached_kernels(base_cache))
            else None
        ),
        recorded_on=_recorded_on(durations_gpu(inputs.baseline.manifest), runner),
        recorded_gpu=inputs.baseline.manifest.gpu_model,  # the rows' (a capture keeps them)
        runner_gpu=runner,
        part=job.replay_part,
        parts=job.replayed,
        l2=job.replay_l2 or DEFAULT_L2,
    )
    deferred = {}
    for d in outcome.run.deferred:
        deferred.setdefault(op_key(d.key.repo, d.key.run_name), d.command)
    for key, command in deferred.items():
        codegen.summary.over_budget[key] = f"rows deferred beyond the replay's budget: {command}"
    judged = (scope if scope is not None else set(inputs.baseline.ops)) - set(deferred)
    measured = ops - outcome.replayed_ops - set(deferred)
    picks = op_path_picks(inputs.baseline, outcome.op_rows, measured)
    if picks:
        seams.say(picks_line(picks, outcome.sentinel_rows))
    return measured, judged, picks


def picks_line(picks: Mapping[str, Collection[object]], sentinel_rows: Mapping[str, object]) -> str:
    """``zlbench gate: replay: 3 op(s) timed through FlagGems for some rows only: 2
    row(s) not replayed, 1 family sentinel row(s) (the replay judges the rest)``."""
    n = sum(len(p) for p in picks.values())
    mine = sum(1 for k in picks if k in sentinel_rows)
    what = f"{n - mine} row(s) not replayed" + (f", {mine} family sentinel row(s)" if mine else "")
    return (
        f"zlbench gate: replay: {len(picks)} op(s) timed through FlagGems for some rows "
        f"only: {what} (the replay judges the rest)"
    )


def op_path_picks(
    baseline: BaselineSet, op_rows: Mapping[str, Collection[RowKey]], measured: set[str]
) -> dict[str, tuple[tuple[str, str, int], ...]]:
    """Op key -> the row picks (``runner.batch.parts.row_picks``) of ``op_rows``' rows
    among its baseline rows, for each op the op path measures; an op whose picks would
    be every row of it, or none, is measured whole (left out)."""
    out = {}
    for key, keys in op_rows.items():
        res = baseline.ops.get(key)
        if key not in measured or res is None:
            continue
        picks = row_picks(
            res.rows, lambda r, res=res, w=set(keys): r.key(res.repo, res.run_name) in w
        )
        if 0 < len(picks) < len(res.rows):
            out[key] = picks
    return out


def rerun_command(argv: list[str]) -> str:
    """``zlbench gate ...`` as ``argv`` (``sys.argv``) started it, less the flags a
    deferred row's command sets again (``--ops``, ``--time``) or must not repeat
    (``--out``, ``--time-budget``, the ops file), each with all of its values."""
    drop = {"--time-budget", "--ops", "--ops-file", "--out", "--time"}
    words, dropping = [], False
    for w in argv[1:]:
        if w.startswith("-"):
            flag = w.split("=", 1)[0]
            dropping = flag in drop and "=" not in w  # its values follow
            if flag in drop:
                continue
        elif dropping:
            continue
        words.append(w)
    return shlex.join(["zlbench", *(words or ["gate"])])


def _measure_step(inputs: GateInputs, req: MeasureRequest, seams: GateSeams) -> tuple[Path, int]:
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
        sub.rows = req.rows  # both sides the same rows
        sub.shared_cache = req.shared_cache if env == PR_ENV else req.base_cache
        sub.sass = req.sass  # both sides alike
        batch_dir, codes[pair[1]] = seams.measure(sub)
        return batch_dir

    mode = "full" if inputs.ab.options.full else "changed"
    share = f" (shard {req.shard[0]}/{req.shard[1]}: its share of them)" if req.shard else ""
    seams.say(f"zlbench gate: interleaved A/B of {len(req.ops)} op(s){share} against the base "
              f"compiler ({inputs.ab.options.base_compiler}), paired row by row")  # fmt: skip
    pr_dir, _ = measure_interleaved(inputs.ab, sorted(req.ops), req.out_dir.parent, side, mode)
    inputs.ab_measured = True
    return pr_dir, codes.get("pr", 0)


def screen_step(
    inputs: GateInputs,
    job: GateJob,
    out: Path,
    seams: GateSeams,
    cache: Path | None = None,
    base_cache: Path | None = None,
) -> CodegenStep:
    """The codegen screen of the baseline's kernels, before any GPU time: the
    FlagGems checkouts' ``src/`` go first on the rebuild workers' path; the kernels
    it compiles are kept in the triton cache dir ``cache`` (None: not kept), the base
    compiler's in ``base_cache`` (None: not kept)."""
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
        base=job.codegen_base,  # PR vs base compiler (screen_job resolved it)
        base_cache_out=base_cache,
        ops=inputs.opts.scope,  # --ops / --ops-file: only the kernels of the ops in scope
    )


def kernel_caches(job: GateJob) -> tuple[Path, Path | None] | None:
    """With ``--kernel-cache``: the PR side's and the base side's triton cache dirs in
    it (``protocol.cache.kernel_cache_dir`` of each compiler's fingerprint: the PR's
    this interpreter's, the base's ``--base-compiler``'s; None without one), made; None
    without it (the gate's own caches)."""
    if job.kernel_cache is None:
        return None
    from zlbench.workflow.codegen import compiler_fingerprint  # as the screen stamps it

    pr = kernel_cache_dir(job.kernel_cache, compiler_fingerprint())
    base = None
    if job.codegen_base is not None:
        base = kernel_cache_dir(job.kernel_cache, job.codegen_base.fingerprint)
    for d in (pr, base):
        if d is not None:
            d.mkdir(parents=True, exist_ok=True)
    return pr, base


def mark_screened(step: CodegenStep, cache: Path, before: int) -> None:
    """Note in the PR's kernel cache ``cache`` the kernels the screen built there (those
    with a binary: ``KernelScreen.binary_digest``), when it compiled any here (the cache
    grew past ``before`` kernels); a screen taken from elsewhere (``--screen``,
    ``--rebuilt``) built nothing here and notes nothing."""
    if step.screen is None or cached_kernels(cache) <= before:
        return
    mark_built(cache, [k.kernel_id for k in step.screen.kernels if k.binary_digest])


def _shared_cache(
    inputs: GateInputs, step: CodegenStep, cache: Path, seams: GateSeams
) -> Path | None:
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


def _base_shared_cache(
    inputs: GateInputs, base_cache: Path | None, seams: GateSeams
) -> Path | None:
    """With a base compiler, ``base_cache`` when the screen's base rebuild or the
    replay's builds compiled the base compiler's kernels into it: the A/B's base side
    then loads them, as its PR side loads the screen's (both sides alike: before, each
    base process compiled its own, 16.8 s against the PR side's 9.9 s over v7's first
    op-path shard on an H100 in the forty-sixth session; with it, 7.2 s against 10.3 s
    in the forty-ninth's), else None; one line says so.
    Triton keys each entry by its compiler's digest: the dir is the base compiler's."""
    if not inputs.ab.ab or base_cache is None:
        return None
    n = cached_kernels(base_cache)
    if n == 0:
        return None
    seams.say(f"zlbench gate: the A/B's base side uses the base compiler's {n} compiled "
              "kernels (the screen's base rebuild and the replay's builds)")  # fmt: skip
    return base_cache


def _judge_measured(
    inputs: GateInputs,
    req: MeasureRequest,
    results: ResultsSet,
    seams: GateSeams,
    codegen: CodegenStep | None,
    scope: set[str] | None,
    command: str = "gate",
) -> int:
    """Judge the batch that ``req`` measured (``results``) within ``scope``, confirming
    flagged ops (or the A/B) into its gate dir, ``req.out_dir``'s parent; the verdict's
    exit code."""
    out = req.out_dir.parent
    remeasure, ab = _remeasure_or_ab(inputs, req, out, seams)
    return judge_and_write(
        *(inputs, results, out, req.job, seams),
        scope=scope,
        results_label=report_label(results.path),
        remeasure=remeasure,
        command=command,
        ab_measure=ab,
        codegen=codegen,
    )


def _remeasure_or_ab(
    inputs: GateInputs, req: MeasureRequest, out: Path, seams: GateSeams
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
        sub.shared_cache = req.shared_cache if env == PR_ENV else req.base_cache
        sub.sass = req.sass  # both sides alike
        with timed(inputs.steps, "ab"):
            return seams.measure(sub)[0]

    return None, measure


# --------------------------------------------------------------------------- one shard


def shard_scope(batch_dir: Path, results: ResultsSet, scope: set[str] | None) -> set[str]:
    """The ops of a shard's batch: its ops_status.csv rows and batch.json's ops
    (dismissed and skipped included), within ``scope`` when one is given."""
    from zlbench.runner.batch.info import batch_ops

    keys = set(results.ops) | (batch_ops(batch_dir) or set())
    return keys & scope if scope is not None else keys


def run_shard(
    inputs: GateInputs,
    req: MeasureRequest,
    seams: GateSeams,
    codegen: CodegenStep | None,
    scope: set[str] | None,
) -> int:
    """``gate --shard K/N``: measure the shard, judge its slice (within ``scope``) only
    to find flagged
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
    scope = shard_scope(batch_dir, results, scope)
    _judge_measured(inputs, req, results, seams, codegen, scope, f"gate --shard {label}")
    seams.say(
        f"shard {label}: the verdict above covers this shard only (the judge gives the verdict):"
    )
    seams.say("zlbench merge SHARD_GATE_DIRS... --out MERGED, then")
    seams.say(f"zlbench gate --baseline {req.job.baseline} --results MERGED")
    if code != 2 and codegen is not None and codegen.summary.failed:
        return 1  # a kernel that stopped compiling fails every shard
    return 2 if code == 2 else 0
