"""Pydantic models of everything zlbench writes to disk.

This module is the contract between the parts (DESIGN.md §2, §3): plugins and
runner write these files, gate/report/cli read them. Every top-level file model
carries ``schema_version``; reading an unknown version is a clear error.

Imports nothing from zlbench but :mod:`zlbench.errors`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zlbench.errors import ZlbenchError

SCHEMA_VERSION = 1

REPOS = ("main", "vllm")
# Python package that each repo label imports.
REPO_PACKAGES = {"main": "flag_gems", "vllm": "flaggems_vllm"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# --------------------------------------------------------------------------- markers


class MarkerKind(str, Enum):
    """The two marker lines of DESIGN.md §3."""

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
    """Identity of a row within one repo (DESIGN.md §3)."""

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


class Environment(_Model):
    """What a run was measured on. Unknown fields stay None, never guessed."""

    gpu_model: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    triton_dist: str | None = None  # distribution that provides `import triton`
    triton_version: str | None = None
    flagtree_commit: str | None = None
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


# --------------------------------------------------------------------------- run dir


class RunStatus(str, Enum):
    PASS = "PASS"  # pytest passed, rows measured
    FAIL = "FAIL"  # pytest failed (rows measured before the failure are kept)
    SKIP = "SKIP"  # test skipped (unsupported op / unconditional skip)
    TIMEOUT = "TIMEOUT"  # killed by the per-op timeout (runner)
    CRASH = "CRASH"  # process died: signal, poisoned CUDA context (runner)
    ERROR = "ERROR"  # could not be started (bad input)


class RunResult(_Model):
    """``<run>/result.json``: one op in one pytest process (or one slot of a worker)."""

    schema_version: int = SCHEMA_VERSION
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


def count_markers(markers: list[Marker]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in markers:
        k = f"{m.kind.value} {m.reason}"
        counts[k] = counts.get(k, 0) + 1
    return counts


# --------------------------------------------------------------------------- batch dir


class OpStatus(_Model):
    """One row of ``ops_status.csv``."""

    repo: str
    op: str
    run_name: str
    status: RunStatus
    rc: int | None = None
    attempts: int = 0
    dtype_used: str = ""
    rows: int = 0
    seconds: float = 0.0
    gpu: str = ""
    run_dir: str = ""  # relative to the batch dir
    note: str = ""


OP_STATUS_FIELDS = list(OpStatus.model_fields)

SUMMARY_FIELDS = [
    "repo",
    "run_name",
    "op",
    "dtype",
    "shape",
    "occurrence",
    "status",
    "latency_base_ms",
    "latency_ms",
    "speedup",
    "no_cudagraph",
]

# Columns an ops_status.csv must have; the others may be absent (their defaults apply).
_OP_STATUS_REQUIRED = {name for name, f in OpStatus.model_fields.items() if f.is_required()}


def read_ops_status(path: str | os.PathLike) -> list[OpStatus]:
    """Read and validate ``ops_status.csv``.

    Empty cells take the field's default and unknown columns are ignored. A missing
    or unreadable file, a header without the required columns or a bad row is one
    ZlbenchError line: ``<file>:<line>: <field>: <problem>``."""
    path = Path(path)
    text = _read_text(path)
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames
        if header is None or not _OP_STATUS_REQUIRED <= set(header):
            raise ZlbenchError(f"{path}: not an ops_status.csv (columns {header})")
        return [_op_status(path, reader.line_num, rec) for rec in reader]
    except csv.Error as e:
        raise ZlbenchError(f"{path}:{reader.line_num}: not valid CSV: {e}") from None


def _op_status(path: Path, line: int, rec: dict[str | None, Any]) -> OpStatus:
    data = {k: v for k, v in rec.items() if k in OpStatus.model_fields and v not in ("", None)}
    try:
        return OpStatus.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "(row)"
        raise ZlbenchError(f"{path}:{line}: {field}: {err.get('msg')}") from None


class DismissedOp(_Model):
    """An op left out of a batch by the dismiss list (``batch.json``)."""

    key: str  # <repo>/<run_name>
    date: str
    reason: str


class BatchInfo(_Model):
    """``<batch>/batch.json``: what a batch was asked to do, and on what it ran.

    Written at the start of a batch and rewritten at its end (counts, environment);
    ``zlbench merge`` uses it to refuse mixing shards measured differently."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["batch"] = "batch"
    created: str  # ISO 8601 UTC
    finished: str | None = None
    argv: list[str] = Field(default_factory=list)  # CLI argv when run from the CLI
    selection: dict[str, object] = Field(default_factory=dict)  # all/ops/ops_file/repos
    mode: Literal["record", "replay"] = "record"
    replay_root: str | None = None
    timing: str = "cudagraph"
    level: str = "core"
    dtypes: list[str] = Field(default_factory=list)
    shape_file: str | None = None
    shape_file_sha256: str | None = None
    shard: str | None = None  # "K/N"
    gpus: list[str] = Field(default_factory=list)
    per_process: int | None = None
    op_timeout_s: float | None = None
    max_retries: int = 2
    resume: bool = False
    flaggems_dirs: dict[str, str] = Field(default_factory=dict)
    hostname: str | None = None
    zlbench_version: str | None = None
    ops: list[str] = Field(default_factory=list)  # keys measured: <repo>/<run_name>
    dismissed: list[DismissedOp] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # unconditional skips (keys)
    counts: dict[str, int] = Field(default_factory=dict)  # RunStatus -> ops
    rows: int = 0
    environments: dict[str, Environment] = Field(default_factory=dict)  # repo -> env
    merged_from: list[str] = Field(default_factory=list)  # shard dirs (zlbench merge)


# --------------------------------------------------------------------------- baseline


class BaselineRow(Row):
    """A baseline row: the median of K replay passes, plus its measured noise."""

    repeats: int = 1
    speedups: list[float] = Field(default_factory=list)  # one per repeat
    noise: float = 0.0  # max |s_i / median - 1| over the repeats


class BaselineResult(_Model):
    """``baselines/vN/<repo>/<run_name>/result.json``."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["baseline"] = "baseline"
    repo: str
    run_name: str
    op: str
    timing: str
    dtypes: list[str] = Field(default_factory=list)
    rows: list[BaselineRow] = Field(default_factory=list)
    marker_counts: dict[str, int] = Field(default_factory=dict)
    environment: Environment = Field(default_factory=Environment)


class ThresholdDefaults(_Model):
    # Statistic per row (docs/judging.md): "ratio" = current / baseline speedup;
    # "torch_normalized" = baseline / current FlagGems latency times the run's overall
    # torch-latency drift (per-row torch noise drops out). Chosen from H200 A/A runs.
    estimator: Literal["ratio", "torch_normalized"] = "torch_normalized"
    default: float = 0.05  # fail when ratio < 1 - default (after floor)
    noise_multiplier: float = 2.0  # floor = noise_multiplier * baseline row noise
    improvement: float | None = None  # None: same as the regression threshold
    op_aggregate: float | None = None  # geomean threshold for the op; None: = default
    confirm_repeats: int = 2


class BaselineManifest(_Model):
    """``baselines/vN/manifest.yaml``."""

    schema_version: int = SCHEMA_VERSION
    name: str
    created: str
    gpu_model: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    torch: str | None = None
    cuda: str | None = None
    compiler_dist: str | None = None
    compiler_version: str | None = None
    compiler_commit: str | None = None
    # repo -> {package, commit, dirty}
    flaggems: dict[str, dict[str, Any]] = Field(default_factory=dict)
    zlbench_version: str | None = None
    zlbench_commit: str | None = None
    shape_file: str | None = None
    shape_file_sha256: str | None = None
    dtypes: list[str] = Field(default_factory=list)
    timing: str = "cudagraph"
    level: str = "core"
    ops: list[str] = Field(default_factory=list)  # "<repo>/<run_name>"
    repeats: int = 1
    thresholds: ThresholdDefaults = Field(default_factory=ThresholdDefaults)
    files: dict[str, str] = Field(default_factory=dict)  # relpath -> sha256
    summary: dict[str, Any] = Field(default_factory=dict)


# --------------------------------------------------------------------------- worker plan


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


class WorkerPlan(_Model):
    """``plan.json`` handed by the runner to the plugins (``--zl-plan``).

    The plugins print ``ZLBENCH_OP_BEGIN run_name=<n>`` / ``ZLBENCH_OP_END
    run_name=<n> status=<S>`` around each entry so the runner can split the
    stream into per-op run.log files and knows which op was in flight when the
    process died.
    """

    schema_version: int = SCHEMA_VERSION
    kind: Literal["plan"] = "plan"
    timing: Literal["cudagraph", "kernel"] = "cudagraph"
    level: str = "core"
    seed: int = 0
    ttgir: bool = True
    entries: list[PlanEntry]


# --------------------------------------------------------------------------- verdicts


class Verdict(str, Enum):
    PASS = "PASS"
    REGRESSION = "REGRESSION"
    IMPROVEMENT = "IMPROVEMENT"
    FALLBACK = "FALLBACK"  # replay fallback marker, or a no-cudagraph marker the baseline lacked
    FAILED = "FAILED"  # op failed, crashed or timed out
    MISSING = "MISSING"  # a baseline row that was not measured
    NEW = "NEW"  # a measured row that the baseline does not have
    SKIPPED = "SKIPPED"  # dismissed / unsupported


# Verdicts that fail the gate (exit 1).
FAILING_VERDICTS = frozenset(
    {Verdict.REGRESSION, Verdict.FALLBACK, Verdict.FAILED, Verdict.MISSING}
)


class RowVerdict(_Model):
    key: RowKey
    verdict: Verdict
    baseline_speedup: float | None = None
    current_speedup: float | None = None
    ratio: float | None = None  # current / baseline speedup (the estimator's value)
    threshold: float | None = None  # relative, e.g. 0.05
    samples: list[float] = Field(default_factory=list)  # ratios incl. confirm re-measures
    confirmed: bool | None = None  # regression confirmed by re-measurement
    reason: str = ""


class OpVerdict(_Model):
    repo: str
    run_name: str
    op: str
    verdict: Verdict
    geomean_ratio: float | None = None
    threshold: float | None = None
    rows: int = 0
    reason: str = ""
    log_tail: list[str] = Field(default_factory=list)
    reproduce: str | None = None  # exact zlbench command that re-measures it


class EnvFinding(_Model):
    field: str
    baseline: str | None = None
    current: str | None = None
    mismatch: bool = True  # False: informational (e.g. compiler commit differs, expected)


class GateVerdict(_Model):
    """``verdict.json``: everything the reports are rendered from."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["verdict"] = "verdict"
    verdict: Literal["PASS", "FAIL", "ERROR"]
    exit_code: int
    summary: str
    baseline: str
    baseline_dir: str
    results_dir: str
    generated: str
    counts: dict[str, int] = Field(default_factory=dict)  # Verdict -> rows
    ops: list[OpVerdict] = Field(default_factory=list)
    rows: list[RowVerdict] = Field(default_factory=list)
    environment: list[EnvFinding] = Field(default_factory=list)
    allow_env_mismatch: bool = False
    baseline_env: Environment = Field(default_factory=Environment)
    current_env: Environment = Field(default_factory=Environment)
    markers: list[Marker] = Field(default_factory=list)


class RowOverride(_Model):
    op: str
    dtype: str | None = None
    shape: str | None = None
    threshold: float


class ThresholdsFile(ThresholdDefaults):
    """A thresholds yaml (``--thresholds``): defaults plus per-op / per-row overrides."""

    schema_version: int = SCHEMA_VERSION
    ops: dict[str, float] = Field(default_factory=dict)
    rows: list[RowOverride] = Field(default_factory=list)


# --------------------------------------------------------------------------- I/O helpers

_M = TypeVar("_M", bound=BaseModel)


def _short_error(path: Path, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e.get("loc", ())) or "(top level)"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{loc}': {e.get('msg')}{more}"


def _check_version(path: Path, data: Any) -> None:
    if isinstance(data, dict) and "schema_version" in data:
        v = data["schema_version"]
        if v != SCHEMA_VERSION:
            raise ZlbenchError(
                f"{path}: schema_version {v} is not supported "
                f"(this zlbench reads version {SCHEMA_VERSION})"
            )


def _read_text(path: Path) -> str:
    """A file's text; a missing or unreadable file is one ZlbenchError line."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: file not found") from None
    except OSError as e:
        raise ZlbenchError(f"{path}: cannot read: {e.strerror}") from None


def load_json_model(path: str | os.PathLike, model: type[_M]) -> _M:
    """Read and validate a JSON file; any problem is one ZlbenchError line."""
    path = Path(path)
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ZlbenchError(f"{path}: not valid JSON (truncated or corrupted?): {e}") from None
    _check_version(path, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None


def load_yaml_model(path: str | os.PathLike, model: type[_M]) -> _M:
    path = Path(path)
    text = _read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ZlbenchError(f"{path}: not valid YAML{where}") from None
    if data is None:
        data = {}
    _check_version(path, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temp file in the same dir + rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def dump_json_model(path: str | os.PathLike, obj: BaseModel) -> None:
    atomic_write_text(path, obj.model_dump_json(indent=2) + "\n")


def dump_yaml_model(path: str | os.PathLike, obj: BaseModel) -> None:
    data = obj.model_dump(mode="json")
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
