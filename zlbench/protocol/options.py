"""Command-line options of the zlbench plugins: one table, both sides.

Why: the runner builds the pytest command line and the plugins parse it. The
plugins register every option of :data:`OPTIONS` (:func:`add_options`) and
the runner spells each flag with :func:`flag` / :func:`arg`, which refuse a
name that is not in the table, so the two can never disagree on an option.
:func:`timing_args` renders a ``models.Timing`` as these options and
:func:`measuring_args` a ``models.Measuring`` (the batch's measuring options). Imports
nothing from torch/triton/pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zlbench.models.options import Measuring
from zlbench.models.timing import (
    DEFAULT_REPLAYS,
    DEFAULT_WARMUP_MS,
    Timing,
    TimingMethod,
    number_text,
)

PREFIX = "--zl-"
# The plugin writing <run_dir>/timings.json (where each op's wall time went), loaded only
# when asked for (``Measuring.phase_timings``); the loader plugin does not register it.
PHASES_PLUGIN = "zlbench.plugins.phases"

# name -> (kwargs for argparse-style addoption). Names are without the prefix.
# The loader plugin registers these (option group "zlbench").
OPTIONS: dict[str, dict[str, Any]] = {
    "plan": dict(
        default=None,
        metavar="PLAN.json",
        help="zlbench worker plan (models.WorkerPlan): the ops to run in this process",
    ),
    "timing": dict(
        default=TimingMethod.GRAPH.value,
        choices=[m.value for m in TimingMethod],
        help="graph: replace upstream do_bench/do_bench_cudagraph by zlbench's "
        "CUDA-graph timing (default); upstream: leave upstream timing alone; capture: "
        "two eager calls, untimed (a launch capture's, not a measurement)",
    ),
    "timing-backend": dict(
        default="auto",
        choices=["auto", "cuda", "cpu"],
        help="timing backend: cuda on a GPU, cpu for the CPU test tier (auto: cuda if available)",
    ),
    "warmup-ms": dict(
        default=DEFAULT_WARMUP_MS,
        type=float,
        help="warmup budget before CUDA-graph capture, in ms (sized to 5-200 calls)",
    ),
    "replays": dict(
        default=DEFAULT_REPLAYS,
        type=int,
        help="graph replays per measurement (the median is reported)",
    ),
    "device": dict(
        default="auto",
        choices=["auto", "cuda", "cpu"],
        help="cuda: stop at start-up when no CUDA device is usable; auto: whatever is there",
    ),
    "color": dict(
        default="auto",
        choices=["auto", "yes", "no"],
        help="colour in pytest's terminal output (auto: only on a terminal)",
    ),
    "verbose-header": dict(
        action="store_true",
        default=False,
        help="keep pytest's session header (quiet by default under a plan)",
    ),
}

# Options of a multi-GPU sweep child (zlbench.runner.sweep) and of compiling a record
# sweep ahead (zlbench.plugins.aot); the autotune plugin registers these (option group
# "zlbench-autotune").
SWEEP_OPTIONS: dict[str, dict[str, Any]] = {
    "sweep-shard": dict(
        default=None,
        metavar="K/N",
        help="sweep child: tune only the round-robin shard K of N of each kernel's configs",
    ),
    "sweep-out": dict(
        default=None,
        metavar="FILE",
        help="sweep child: write each key's shard winner and its timing here (JSON)",
    ),
    "aot-compile": dict(
        default="auto",
        metavar="auto|off|N",
        help="record mode: compile the configs of each autotune sweep on N threads "
        "before it benchmarks them (auto: the usable CPU cores, at most 16; off: each "
        "config compiles at its first benchmark launch, as before; docs/autotune.md)",
    ),
}

# Options of the codegen recorder (zlbench.plugins.codegen, docs/codegen.md); it
# registers these (option group "zlbench-codegen").
CODEGEN_OPTIONS: dict[str, dict[str, Any]] = {
    "codegen-standin": dict(
        default=None,
        metavar="TARGET",
        help="compile without a GPU: a stand-in triton driver reporting TARGET "
        "(e.g. cuda:90) is made active; kernel launches do nothing",
    ),
    "no-codegen": dict(
        action="store_true",
        default=False,
        help="do not record codegen (<run_dir>/codegen/)",
    ),
    "codegen-no-sass": dict(
        action="store_true",
        default=False,
        help="record codegen without disassembling SASS (no cuobjdump at op end)",
    ),
}

_ALL = {**OPTIONS, **SWEEP_OPTIONS, **CODEGEN_OPTIONS}


def add_options(
    addoption: Callable[..., Any],
    prefix: str = PREFIX,
    table: dict[str, dict[str, Any]] = OPTIONS,
) -> None:
    """Register every option of ``table`` through ``addoption`` (e.g.
    ``parser.getgroup(...).addoption``)."""
    for name, kwargs in table.items():
        addoption(prefix + name, dest=dest(name, prefix), **kwargs)


def dest(name: str, prefix: str = PREFIX) -> str:
    """The attribute name of option ``name`` on ``config.option``."""
    return (prefix + name).lstrip("-").replace("-", "_")


def flag(name: str, prefix: str = PREFIX) -> str:
    """The command-line flag of option ``name`` (for building a pytest command)."""
    if name not in _ALL:
        raise KeyError(f"unknown zlbench plugin option: {name}")
    return prefix + name


def arg(name: str, value: object, prefix: str = PREFIX) -> list[str]:
    """``[flag, value]``: one option with its value, for a pytest command line."""
    return [flag(name, prefix), str(value)]


def timing_args(timing: Timing) -> list[str]:
    """The plugin options that make a benchmark process time as ``timing`` does: its
    method and, for a method with budgets, the budgets (upstream's ``--mode`` is
    upstream's own option, passed from the plan)."""
    out = arg("timing", timing.method.value)
    if timing.warmup_ms is not None:
        out += arg("warmup-ms", number_text(timing.warmup_ms))
    if timing.replays is not None:
        out += arg("replays", timing.replays)
    return out


def measuring_args(how: Measuring) -> list[str]:
    """The pytest arguments of the batch's measuring options: the phases plugin (when
    ``phase_timings``), the timing method and the graph-timing budgets that were given
    (None: the plugin's default is left alone, so PYTEST_ADDOPTS can still set it) and
    ``--zl-aot-compile off`` (when not ``aot_compile``), in that order. ``mode``, ``ttgir``,
    ``reuse_tuning_db`` and ``split_rows`` reach the process through the plan and the
    environment, not as options."""
    out = ["-p", PHASES_PLUGIN] if how.phase_timings else []
    if how.timing_method is not None:
        out += arg("timing", how.timing_method.value)
    if how.warmup_ms is not None:
        out += arg("warmup-ms", number_text(how.warmup_ms))
    if how.replays is not None:
        out += arg("replays", how.replays)
    if not how.aot_compile:
        out += arg("aot-compile", "off")
    return out


def get(config: Any, name: str, prefix: str = PREFIX) -> Any:
    """Value of option ``name`` from a pytest config."""
    return config.getoption(dest(name, prefix))
