"""What a batch is asked to do (:class:`BatchConfig`) and what it did (:class:`BatchOutcome`).

Plain values only; :func:`zlbench.runner.batch.run.run_batch` takes the one and
returns the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from zlbench.models import Measuring, OpStatus, Scheduling, Selection
from zlbench.protocol.options import measuring_args

# FlagGems' autotune config space (flag_gems.runtime.flagtune): "0" its default
# configs, "1" the expanded / cost-model space. Set in every benchmark process.
FLAGTUNE_VAR = "USE_FLAGTUNE"
DEFAULT_FLAGTUNE = "0"
# --op-timeout's default by mode: a record pass tunes every kernel from a cold tuning
# DB (first FlagTune sweeps of one op ran 10+ minutes on the H200), a replay only
# measures pinned configs. 0 or None: no limit.
RECORD_OP_TIMEOUT_S = 1800.0
REPLAY_OP_TIMEOUT_S = 900.0
# execute_plan's signature (zlbench.runner.execute.worker); injectable for tests.
Executor = Callable[..., list[OpStatus]]


@dataclass
class BatchConfig:
    """What a batch is asked to do. Plain values only: the CLI resolves env vars.

    Selection (see :mod:`zlbench.runner.catalog.select`): exactly one of ``all_ops``,
    ``ops`` or ``ops_file``. A SPEC is ``op``, ``repo:op`` or ``op@test_file.py``.
    ``repos`` defaults to ``["main"]``. ``restrict_to``: ``"<repo>/<run_name>"``
    keys (e.g. the baseline's op set) the selection is intersected with.

    Measuring: ``replay_root`` None means record mode; otherwise replay, records at
    ``<replay_root>/<repo>/<run_name>/autotune_records/`` (a batch or baseline dir).
    ``gpus``: values for CUDA_VISIBLE_DEVICES, one worker each; ``""`` leaves the
    variable alone (the CLI defaults the list from CUDA_VISIBLE_DEVICES or all
    visible GPUs). ``shard``: ``(K, N)``, K 1-based. ``per_process``: max ops per
    pytest process (None = no limit, 1 = one op per process). ``out_dir`` is
    claimed as is when absent or empty, else ``-2``, ``-3``... (unless ``resume``,
    which continues the batch in ``out_dir``). ``env``: base environment of the
    workers (None = this process's). ``sweep_gpus``: record mode only (ignored when
    replaying, so a refresh's replay passes spread over ``gpus`` as usual): each op's
    autotune sweep is split over these GPUs, ops one after the other, each measured
    on the first of them (:mod:`zlbench.runner.sweep.run`); ``gpus`` is then unused.
    """

    out_dir: Path
    flaggems_dirs: dict[str, Path]  # repo label -> FlagGems checkout
    ops_dir: Path  # holds inventory_<repo>.csv and dismiss.txt
    all_ops: bool = False
    ops: list[str] = field(default_factory=list)
    ops_file: Path | None = None
    repos: list[str] = field(default_factory=list)
    restrict_to: set[str] | None = None
    dismiss_file: Path | None = None  # default <ops_dir>/dismiss.txt
    gpus: list[str] = field(default_factory=lambda: [""])
    shard: tuple[int, int] | None = None
    replay_root: Path | None = None
    resume: bool = False
    keep_failed: bool = False  # with resume: a FAIL/TIMEOUT/CRASH op keeps its status
    # seconds per op; "auto": RECORD_OP_TIMEOUT_S when recording, REPLAY_OP_TIMEOUT_S
    # when replaying (a refresh's record and replay passes each get their own);
    # 0 or None: no limit (see :meth:`op_timeout`)
    op_timeout_s: float | None | Literal["auto"] = "auto"
    per_process: int | None = None
    timing: Literal["cudagraph", "kernel"] = "cudagraph"
    dtypes: list[str] = field(default_factory=list)  # [] = the op's defaults
    shape_file: Path | None = None
    ttgir: bool = True
    max_retries: int = 2  # extra attempts after rc 1 / CRASH (docs/design.md §5.17)
    # Seconds from the start after which nothing more is measured; None: no budget,
    # unless ``budget_factor`` derives one from ``durations`` (runner.batch.budget).
    budget_s: float | None = None
    budget_factor: float | None = None
    # USE_FLAGTUNE of the benchmark processes; None: the environment's, else "0"
    # (the gate passes its baseline's, so both measure the same config space).
    use_flagtune: str | None = None
    # Also run the ops the dismiss list names and those marked unconditional skip.
    recheck_left_out: bool = False
    # Record mode: keep FlagGems' persistent tuning DB (the environment's, else its
    # default) instead of a fresh one per process (--reuse-tuning-db; ignored when
    # replaying; refused by baseline refresh and with a sweep).
    reuse_tuning_db: bool = False
    env: dict[str, str] | None = None
    progress: TextIO | None = None  # progress lines (None: silent)
    sink: Callable[[str], None] | None = None  # raw pytest output lines (None: dropped)
    extra_pytest_args: list[str] = field(default_factory=list)  # appended to each pytest argv
    argv: list[str] = field(default_factory=list)  # recorded in batch.json
    executor: Executor | None = None  # default: zlbench.runner.execute.worker.execute_plan
    # Interpreter of the compiler env measured (an A/B side, runner.ab.env.side_config);
    # None: this one. The precompile workers run it too, so they fill its triton's cache.
    python: str | None = None
    sweep_gpus: list[str] = field(default_factory=list)  # multi-GPU sweep (record mode)
    # Recorded seconds per "repo/run_name" (an ops_status.csv, runner.batch.costs):
    # shards and GPUs are balanced by them; {} = every op costs the same (hash deal).
    durations: dict[str, float] = field(default_factory=dict)
    # Whose they are and the GPU model they were recorded on (the progress header's
    # forecast says so: runner.batch.forecast.expected_line); "" / None: not said.
    durations_source: str = ""
    durations_gpu: str | None = None
    # Replay mode: compile the replay root's recorded kernels (codegen records) with
    # this many CPU processes into one triton cache the batch's processes share,
    # before the GPU starts (runner.batch.precompile); 0 = off, each process compiles.
    precompile_jobs: int = 0
    # Benchmark processes per GPU; > 1: they overlap everything but their timing, which
    # takes the GPU's turn (zlbench.protocol.turn, docs/screening.md "Sharing a GPU").
    gpu_share: int = 1
    # Replay: "auto" cuts an op longer than its share of a process slot into row
    # parts run by several processes and merged at the end (runner.batch.parts); "off".
    split_rows: str = "auto"
    # One side of an interleaved A/B (runner.ab.interleave): the dir both sides' benchmark
    # processes meet in, this side ("pr" | "base") and the pair rule (JSON); each GPU's
    # turn file lies in that dir, so both sides' processes of one GPU share its turn.
    pair_dir: Path | None = None
    pair_side: str | None = None
    pair_rule: str | None = None
    # Replay: op key -> the only rows to measure (runner.batch.parts.row_picks; the
    # gate's op path after the kernel replay); such an op is never cut into parts.
    row_picks: dict[str, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)

    @classmethod
    def from_options(
        cls, selection: Selection, measuring: Measuring, scheduling: Scheduling, **rest: Any
    ) -> BatchConfig:
        """The config of the three option models (``zlbench.models.options``), their
        fields put in by :data:`OPTION_FIELDS`; ``rest``: the other fields (out dir,
        FlagGems dirs, shard, I/O, seams). ``extra_pytest_args`` in ``rest`` go after the
        measuring options' (:func:`zlbench.protocol.options.measuring_args`)."""
        if selection.ops_dir is None:
            raise ValueError("BatchConfig.from_options: the selection has no ops_dir")
        models = {Selection: selection, Measuring: measuring, Scheduling: scheduling}
        fields = {
            name: _listed(getattr(models[model], option))
            for name, (model, option) in OPTION_FIELDS.items()
        }
        extra = [*measuring_args(measuring), *rest.pop("extra_pytest_args", [])]
        return cls(**fields, extra_pytest_args=extra, **rest)

    def options(self) -> tuple[Selection, Measuring, Scheduling]:
        """The three option models of this config, the inverse of :meth:`from_options`
        through the same :data:`OPTION_FIELDS`: the measuring's budgets,
        ``phase_timings`` and ``aot_compile`` went into ``extra_pytest_args`` as plugin
        flags and are the models' defaults here (``batch.json`` is built from these,
        :meth:`zlbench.models.BatchInfo.from_options`)."""
        given: dict[type, dict[str, Any]] = {Selection: {}, Measuring: {}, Scheduling: {}}
        for name, (model, option) in OPTION_FIELDS.items():
            given[model][option] = getattr(self, name)
        return (
            Selection(**given[Selection]),
            Measuring(**given[Measuring]),
            Scheduling(**given[Scheduling]),
        )

    def op_timeout(self) -> float | None:
        """The per-op timeout in effect: ``op_timeout_s`` with "auto" resolved by mode;
        None for no limit."""
        t = self.op_timeout_s
        if t == "auto":
            return REPLAY_OP_TIMEOUT_S if self.replay_root else RECORD_OP_TIMEOUT_S
        return float(t) if t else None


# The config's fields that are an option model's field of the same name, by model.
_SAME_NAMES: dict[type, tuple[str, ...]] = {
    Selection: (
        "ops_dir", "all_ops", "ops", "ops_file", "repos", "recheck_left_out", "dtypes",
        "shape_file",
    ),
    Measuring: ("ttgir", "reuse_tuning_db", "split_rows"),
    Scheduling: (
        "gpus", "sweep_gpus", "gpu_share", "per_process", "op_timeout_s", "max_retries",
        "precompile_jobs",
    ),
}  # fmt: skip
# BatchConfig field -> (option model, its field): the one place the models' fields and
# the config's meet, both ways (BatchConfig.from_options, BatchConfig.options)
OPTION_FIELDS: dict[str, tuple[type, str]] = {
    "timing": (Measuring, "mode"),  # the config's name of upstream's --mode
    **{name: (model, name) for model, names in _SAME_NAMES.items() for name in names},
}


def _listed(value: Any) -> Any:
    """A model's tuple as the config's list; any other value as it is."""
    return list(value) if isinstance(value, tuple) else value


@dataclass
class BatchOutcome:
    """What a batch did. ``exit_code``: 0 all PASS/SKIP, 1 any FAIL/TIMEOUT/CRASH/ERROR,
    2 nothing measured. ``statuses`` is also ``<out_dir>/ops_status.csv``."""

    out_dir: Path
    statuses: list[OpStatus]
    counts: dict[str, int]  # RunStatus value -> ops
    summary_rows: int  # rows written to summary.csv
    exit_code: int


def default_executor() -> Executor:
    from zlbench.runner.execute.worker import execute_plan

    return execute_plan
