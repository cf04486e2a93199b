"""The gate's job and its seams: what one ``gate`` / ``report`` is asked to do
(:class:`GateJob`, plain values the CLI fills from argv and the environment), what it
asks the batch runner to measure (:class:`MeasureRequest`, :func:`measure_batch`), where
it meets the world (:class:`GateSeams`: how to measure, the screen, the clock, the
output streams) and the confirm step's re-measure (:func:`make_remeasure`). The entry
paths are :mod:`zlbench.workflow.gate`'s; the judging is :mod:`zlbench.workflow.gate_judge`'s.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from zlbench.gate.confirm import Remeasure
from zlbench.gate.load import BaselineSet, load_results
from zlbench.models import Measuring, Row, RowKey, Scheduling, Selection
from zlbench.protocol.options import flag as plugin_flag
from zlbench.runner.ab.env import CompilerEnv
from zlbench.runner.preflight import check_checkouts, check_compiler
from zlbench.workflow.ab import AbOptions
from zlbench.workflow.codegen import BaseSide, Screen, run_screen


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
    replay: bool = False  # --replay: changed rows timed by kernel replay (issue 51)
    # --replay-part K/N: replay part K of N of the plan's rows, nothing else (no verdict)
    replay_part: tuple[int, int] | None = None
    replayed: tuple[Path, ...] = ()  # --replayed: the parts' gate dirs, taken as replayed
    replay_l2: str | None = None  # --replay-l2 (None: models.replay.DEFAULT_L2)
    # --kernel-cache: a triton cache dir per compiler kept across gates (None: the gate's
    # own, removed at its end): protocol.cache.kernel_cache_dir
    kernel_cache: Path | None = None
    store: str | None = None  # --store / ZLBENCH_STORE: the results store (issue 52)
    store_branch: str = "main"  # --store-branch: the branch the gate's commit is on
    codegen_jobs: int = 1
    # --rebuilt: the shard dirs of `zlbench codegen --shard K/N` jobs the screen classifies
    codegen_rebuilt: tuple[Path, ...] = ()
    # --base-screen-cache: where the base compiler's rebuild is kept per base build and
    # baseline (None: not kept); the base side itself is resolved from ab.base_compiler
    # by the gate job (workflow.screen_job) before the screen: codegen.base_side
    base_screen_cache: Path | None = None
    codegen_base: BaseSide | None = None
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
    # with a base compiler: the base compiler's kernels that the screen's base rebuild
    # and the replay's builds compiled (a triton cache dir of its own), which the A/B's
    # base side shares as the PR side shares ``shared_cache``; None: each base process
    # compiles its kernels
    base_cache: Path | None = None
    # False when the screen's compiled kernels feed the measure step (shared_cache
    # set, on both A/B sides): the screen has their SASS, so the measure step's
    # records skip disassembly (cuobjdump at each op's end, off the timings)
    sass: bool = True
    # one side of an interleaved A/B: (meeting dir, side "pr" | "base", pair rule JSON)
    pair: tuple[Path, str, str] | None = None
    # op key -> the only rows to measure (the rows the kernel replay left to the op
    # path: runner.batch.parts.row_picks); an op not named: all its rows
    rows: dict[str, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)


NO_SASS_FLAG = plugin_flag("codegen-no-sass")

Measure = Callable[[MeasureRequest], tuple[Path, int]]  # -> (batch dir, batch exit code)


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def measure_batch(req: MeasureRequest) -> tuple[Path, int]:
    """Replay ``req.ops`` against the baseline's records with
    :func:`zlbench.runner.batch.run.run_batch`: (batch dir, batch exit code)."""
    from zlbench.runner.baseline_batch import baseline_replay_config
    from zlbench.runner.batch.budget import DEFAULT_BUDGET_FACTOR
    from zlbench.runner.batch.run import run_batch, sharing_cache

    job = req.job
    config = baseline_replay_config(
        req.baseline,
        req.ops,
        req.out_dir,
        ops_dir=job.selection.ops_dir,
        flaggems_dirs=job.flaggems_dirs,
        cuda_visible_devices=job.cuda_visible_devices,
        measuring=job.measuring,
        scheduling=job.scheduling,
        shard=req.shard,
        progress=sys.stderr,
        argv=list(job.argv),
        budget_factor=DEFAULT_BUDGET_FACTOR,  # a broken compiler fails in bounded time
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
    if req.rows:
        config = replace(config, row_picks={k: v for k, v in req.rows.items() if k in req.ops})
    outcome = run_batch(config)
    return outcome.out_dir, outcome.exit_code


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
