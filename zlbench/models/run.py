"""Models of one run: markers, rows, the environment, ``result.json`` and the
worker plan the runner hands to the plugins.

The vocabulary every other model is built from (a ``Row``, a ``RowKey``, a
``Marker``, an ``Environment``), so it imports only :mod:`zlbench.models.base` and
:mod:`zlbench.models.timing` (the environment's ``Timing``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from zlbench.models.base import OnDisk, _Model
from zlbench.models.timing import Timing, parse_timing

# --------------------------------------------------------------------------- markers


class MarkerKind(str, Enum):
    """The two marker lines of docs/design.md §3."""

    REPLAY_FALLBACK = "AUTOTUNE_REPLAY_FALLBACK"
    NO_CUDAGRAPH = "BENCHMARK_DIRECT_NO_CUDAGRAPH"


class Marker(_Model):
    """One marker line, e.g.
    ``AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=mm_kernel``."""

    kind: MarkerKind
    reason: str
    kernel: str | None = None  # REPLAY_FALLBACK only
    phase: str | None = None  # NO_CUDAGRAPH only: sync|warmup|capture
    # Row the marker was emitted during, when known (dtype, shape_detail text).
    dtype: str | None = None
    shape_detail: str | None = None

    def line(self) -> str:
        if self.kind is MarkerKind.REPLAY_FALLBACK:
            return f"{self.kind.value} reason={self.reason} kernel={self.kernel}"
        return f"{self.kind.value} phase={self.phase} reason={self.reason}"


# --------------------------------------------------------------------------- rows


class RowKey(_Model):
    """Identity of a row within one repo (docs/design.md §3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str
    run_name: str
    op: str  # FlagGems benchmark op_name (bench.op_name, e.g. "softmax_backward")
    dtype: str  # short name: "bfloat16"
    shape: str  # shape_detail text exactly as upstream prints it
    occurrence: int = 0  # index among rows with the same (op, dtype, shape) in one run

    def label(self) -> str:
        occ = f" #{self.occurrence}" if self.occurrence else ""
        return f"{self.repo}/{self.op} {self.dtype} {self.shape}{occ}"


class Row(_Model):
    """One measured shape of one op and dtype."""

    op: str
    dtype: str
    shape: str
    occurrence: int = 0
    status: Literal["SUCCESS", "FAILED"] = "SUCCESS"
    latency_base_ms: float | None = None  # torch
    latency_ms: float | None = None  # FlagGems
    speedup: float | None = None  # latency_base / latency
    tflops: float | None = None
    gbps: float | None = None
    error: str | None = None
    # The timing method fell back from CUDA graph to plain do_bench for this row.
    no_cudagraph: bool = False

    def key(self, repo: str, run_name: str) -> RowKey:
        return RowKey(
            repo=repo,
            run_name=run_name,
            op=self.op,
            dtype=self.dtype,
            shape=self.shape,
            occurrence=self.occurrence,
        )


def assign_occurrences(rows: list[Row]) -> list[Row]:
    """Number rows that share (op, dtype, shape) in the order they were measured."""
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for row in rows:
        k = (row.op, row.dtype, row.shape)
        out.append(row.model_copy(update={"occurrence": seen.get(k, 0)}))
        seen[k] = seen.get(k, 0) + 1
    return out


# --------------------------------------------------------------------------- environment


def arch_text(arch: int | str | tuple[int, int] | None) -> str | None:
    """A GPU architecture as the gate compares it: ``"sm_90"`` for a CUDA compute
    capability (9, 0) or triton's target arch 90 (``models.codegen.Target``); a string
    is kept as it is (``"sm_90"``, ``"gfx942"`` on hip); None stays None."""
    if arch is None:
        return None
    if isinstance(arch, tuple):
        return f"sm_{arch[0]}{arch[1]}"
    if isinstance(arch, int) or arch.isdigit():
        return f"sm_{int(arch)}"
    return arch


class Environment(_Model):
    """What a run was measured on. Unknown fields stay None, never guessed."""

    gpu_model: str | None = None
    # the GPU's architecture, "sm_90" (models.run.arch_text of torch's compute
    # capability); None in files written before it was recorded (the gate then reads
    # it from the codegen records or the GPU model's name: gate.env.gpu_arch_of)
    gpu_arch: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    triton_dist: str | None = None  # distribution that provides `import triton`
    triton_version: str | None = None
    flagtree_commit: str | None = None
    # None in files written before they were recorded
    compiler_path: str | None = Field(None, description="the directory `import triton` loaded from")
    compiler_build: str | None = Field(
        None,
        description="fingerprint of that build (zlbench.plugins.environment.compiler_build): "
        "two builds whose version strings agree still differ here",
    )
    flaggems_package: str | None = None  # flag_gems | flaggems_vllm
    flaggems_version: str | None = None
    flaggems_commit: str | None = None
    flaggems_dirty: bool | None = None
    python: str | None = None
    hostname: str | None = None
    mode: str | None = None  # cudagraph | kernel
    level: str | None = None  # core
    zlbench_version: str | None = None
    zlbench_commit: str | None = None
    # USE_FLAGTUNE of the benchmark process: FlagGems' autotune config space ("0":
    # its default configs; "1": the expanded/cost-model space). The runner sets it.
    use_flagtune: str | None = None
    # benchmark processes per GPU that timed in turns (--gpu-share; None: not recorded,
    # i.e. before sharing existed: one)
    gpu_share: int | None = None
    # how it was timed (models.timing.Timing: upstream's --mode, zlbench's method and
    # its budgets); None: not recorded (files written before it was). Budgets change
    # the noise (docs/screening.md), so the gate compares it with the baseline's. Files
    # written before it was a model hold the string ``timing_method`` instead ("graph
    # warmup_ms=100 replays=10", or "upstream"): read into this field.
    timing: Timing | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_timing_method(cls, data: Any) -> Any:
        """An old file's ``timing_method`` string, parsed into ``timing``
        (:func:`zlbench.models.timing.parse_timing`, upstream's mode from ``mode``)."""
        if not isinstance(data, dict) or "timing_method" not in data:
            return data
        data = dict(data)
        text = data.pop("timing_method")
        if text is not None and data.get("timing") is None:
            data["timing"] = parse_timing(text, data.get("mode"))
        return data


# --------------------------------------------------------------------------- run dir


class RunStatus(str, Enum):
    PASS = "PASS"  # pytest passed, rows measured
    FAIL = "FAIL"  # pytest failed (rows measured before the failure are kept)
    SKIP = "SKIP"  # test skipped (unsupported op / unconditional skip)
    TIMEOUT = "TIMEOUT"  # killed by the per-op timeout (runner)
    CRASH = "CRASH"  # process died: signal, poisoned CUDA context (runner)
    ERROR = "ERROR"  # could not be started (bad input)


class RunResult(OnDisk):
    """``<run>/result.json``: one op in one pytest process (or one slot of a worker)."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["run"] = "run"
    repo: str
    run_name: str  # directory name under <repo>/; usually the op selector
    op: str  # selector the user asked for (pytest mark / op name)
    test_nodeids: list[str] = Field(default_factory=list)
    status: RunStatus
    mode: str  # record | replay
    timing: str  # cudagraph | kernel
    dtypes: list[str] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
    markers: list[Marker] = Field(default_factory=list)
    marker_counts: dict[str, int] = Field(default_factory=dict)  # "KIND reason" -> count
    failing_shape: str | None = None
    error: str | None = None
    environment: Environment = Field(default_factory=Environment)
    shape_file_sha256: str | None = None
    replay_from: str | None = None
    started: str | None = None  # ISO 8601 UTC
    duration_s: float | None = None  # wall time inside the test(s)
    bench_s: float | None = None  # time spent inside benchmark test calls
    # tests of the op that pytest skipped (a skipped parametrization counts once);
    # 0 in files written before it was counted
    skipped_tests: int = 0


def count_markers(markers: list[Marker]) -> dict[str, int]:
    """``RunResult.marker_counts``: ``"<KIND> <reason>"`` -> number of markers."""
    counts: dict[str, int] = {}
    for m in markers:
        k = f"{m.kind.value} {m.reason}"
        counts[k] = counts.get(k, 0) + 1
    return counts


def counts_of_kind(counts: dict[str, int], kind: MarkerKind) -> dict[str, int]:
    """The entries of ``counts`` (keys as :func:`count_markers` builds them) of one kind."""
    return {k: n for k, n in counts.items() if k.split(" ", 1)[0] == kind.value}


# --------------------------------------------------------------------------- worker plan


def records_file_name(op: str) -> str:
    """File name of an op's autotune records (``autotune_records/<this>``): path-safe."""
    return op.replace("/", "_").replace("@", "__at__") + ".json"


class PlanEntry(_Model):
    """One op for the plugins to run inside a (possibly shared) pytest process."""

    repo: str = "main"
    op: str  # the selector the user asked for
    run_name: str
    run_dir: str  # absolute
    nodeids: list[str]  # pytest node ids of this op's benchmark test(s)
    mode: Literal["record", "replay"] = "record"
    replay_records: str | None = None  # dir holding <op>.json autotune records (replay)
    shape_file: str | None = None  # absolute; None: upstream default
    dtypes: list[str] = Field(default_factory=list)  # [] = the op's defaults
    # Row part [k, n] (k 1-based): only the rows whose index within their (benchmark
    # op, dtype) is k-1 modulo n are measured (zlbench.runner.batch.parts); None: all.
    part: list[int] | None = None
    # Row picks: only these rows are measured, each (benchmark op, dtype, index within
    # that pair) as the baseline's rows count them (zlbench.runner.batch.parts.row_picks:
    # the gate's op path timing only the rows the kernel replay could not); None: all.
    rows: list[tuple[str, str, int]] | None = None

    @field_validator("part")
    @classmethod
    def _part_is_k_of_n(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and (len(v) != 2 or not 1 <= v[0] <= v[1]):
            raise ValueError(f"part must be [k, n] with 1 <= k <= n, got {v}")
        return v


class WorkerPlan(OnDisk):
    """``plan.json`` handed by the runner to the plugins (``--zl-plan``).

    The plugins print ``ZLBENCH_OP_BEGIN run_name=<n>`` / ``ZLBENCH_OP_END
    run_name=<n> status=<S>`` around each entry so the runner can split the
    stream into per-op run.log files and knows which op was in flight when the
    process died.
    """

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["plan"] = "plan"
    timing: Literal["cudagraph", "kernel"] = "cudagraph"
    level: str = "core"
    seed: int = 0
    ttgir: bool = True
    entries: list[PlanEntry]
