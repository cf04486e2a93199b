"""The measuring options of a command, as three small frozen models (issue 28 item 2):
what is selected (:class:`Selection`), how it is measured (:class:`Measuring`) and how
the work is spread over GPUs and processes (:class:`Scheduling`).

The CLI reads them from argv once (:mod:`zlbench.cli.options`: ``selection_from``,
``measuring_from``, ``scheduling_from``); :class:`zlbench.runner.batch.config.BatchConfig`
is built from them in one place (``BatchConfig.from_options``), and the plugin flags of
a :class:`Measuring` are rendered only by :func:`zlbench.protocol.options.measuring_args`.
They are not written to disk: ``batch.json`` keeps its own flat fields, built from them in
one place (:meth:`zlbench.models.BatchInfo.from_options`, from a config's
``BatchConfig.options``). Every numeric field is checked by its range
(:mod:`zlbench.models.ranges`), the one the CLI checks the flag with. Imports only
:mod:`zlbench.models.base`, :mod:`zlbench.models.ranges` and :mod:`zlbench.models.timing`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict

from zlbench.models.base import _Model
from zlbench.models.ranges import AT_LEAST_0, AT_LEAST_1, Range
from zlbench.models.timing import Replays, TimingMethod, WarmupMs

# --split-rows: "auto" cuts a replayed op longer than its share of a process slot into
# row parts (zlbench.runner.batch.parts); "off" never does.
SPLIT_MODES = ("auto", "off")
TIME_MODES = ("all", "changed")  # gate --time: every op, or those the codegen screen left
# gate --replay-l2: the L2 a replayed call starts from, the default first
# (models.replay.L2Policy and L2_POLICIES name the same: tests/models/test_replay_l2.py)
REPLAY_L2 = ("warm", "flush", "clean")
UpstreamMode = Literal["cudagraph", "kernel"]  # upstream FlagGems --mode


# The scheduling's ranges, as the CLI checks them before any work (zlbench.cli.numbers
# takes them from here) and the model validates them, in the same words.
GPU_SHARE = Range(1, high=8, note="benchmark processes per GPU")
PER_PROCESS = AT_LEAST_1
OP_TIMEOUT = Range(0, note="0 = no limit")
MAX_RETRIES = AT_LEAST_0
PRECOMPILE_JOBS = AT_LEAST_0


class _Options(_Model):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Selection(_Options):
    """What is selected: exactly one of ``all_ops``, ``ops`` (SPECs) or ``ops_file``,
    from ``repos`` ([]: main), in the inventories and dismiss list of ``ops_dir`` (None:
    the CLI's default); ``recheck_left_out`` also runs the dismissed and unconditionally
    skipped ops; ``dtypes`` ([]: each op's own) and ``shape_file`` (None: upstream's
    shapes) narrow what each op measures. Upstream's ``--level`` is always ``core``
    (``BatchInfo.level``), not an option."""

    all_ops: bool = False
    ops: tuple[str, ...] = ()
    ops_file: Path | None = None
    repos: tuple[str, ...] = ()
    ops_dir: Path | None = None
    recheck_left_out: bool = False
    dtypes: tuple[str, ...] = ()
    shape_file: Path | None = None


class Measuring(_Options):
    """How each op is measured: upstream's ``mode``; zlbench's ``timing_method`` (None:
    the plugin's default, or what PYTEST_ADDOPTS says); the graph-timing budgets
    (``warmup_ms``, ``replays``; None: the plugin's default, or what PYTEST_ADDOPTS
    says; the whole :class:`zlbench.models.Timing` is what the plugins then record);
    ``phase_timings`` (``<run_dir>/timings.json``); ``ttgir`` (dump TTGIR);
    ``aot_compile`` (record mode: compile each sweep's configs ahead); ``reuse_tuning_db``
    (record mode: keep FlagGems' persistent tuning DB); ``split_rows`` (replay: long
    ops as row parts, :data:`SPLIT_MODES`)."""

    mode: UpstreamMode = "cudagraph"
    timing_method: TimingMethod | None = None  # None: the plugin's default (graph)
    warmup_ms: WarmupMs = None
    replays: Replays = None
    phase_timings: bool = False
    ttgir: bool = True
    aot_compile: bool = True
    reuse_tuning_db: bool = False
    split_rows: Literal["auto", "off"] = "auto"


class Scheduling(_Options):
    """How the work is spread: ``gpus`` (values of CUDA_VISIBLE_DEVICES, one worker
    each; ``""`` leaves the variable alone), ``sweep_gpus`` (record mode: each op's
    autotune sweep split over these), ``gpu_share`` (benchmark processes per GPU, timing
    in turns), ``per_process`` (ops per pytest process at most; None: no limit),
    ``op_timeout_s`` (seconds; "auto": by mode, ``BatchConfig.op_timeout``; 0 or None:
    no limit), ``max_retries`` (extra attempts of a FAIL/CRASH op) and
    ``precompile_jobs`` (replay: CPU processes compiling the recorded kernels first;
    0: off)."""

    gpus: tuple[str, ...] = ("",)
    sweep_gpus: tuple[str, ...] = ()
    gpu_share: Annotated[int, GPU_SHARE.validator("--gpu-share")] = 1
    per_process: Annotated[int | None, PER_PROCESS.validator("--per-process")] = None
    op_timeout_s: Annotated[
        float | None | Literal["auto"], OP_TIMEOUT.validator("--op-timeout")
    ] = "auto"
    max_retries: Annotated[int, MAX_RETRIES.validator("--max-retries")] = 2
    precompile_jobs: Annotated[int, PRECOMPILE_JOBS.validator("--precompile-jobs")] = 0
