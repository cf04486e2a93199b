"""Models of a baseline set (``baselines/vN/``) and of the gate's thresholds.

A baseline row is a run row plus its measured noise; the thresholds a manifest
records are the defaults a ``--thresholds`` file overrides.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from zlbench.models.base import OnDisk, _Model
from zlbench.models.replay import LAUNCHES_JSON
from zlbench.models.run import Environment, Row
from zlbench.models.timing import Timing
from zlbench.protocol.layout import OPS_STATUS

# A row's noise is a fraction of its median. One pass 50 % off the median is not a
# measurement (baselines/v1's noisiest row: 1.4 %), and with the default
# noise_multiplier of 2 a row that noisy could never fail.
MAX_NOISE = 0.5


class BaselineRow(Row):
    """A baseline row: the median of K replay passes, plus its measured noise."""

    repeats: int = 1
    speedups: list[float] = Field(default_factory=list)  # one per repeat
    noise: float = 0.0  # max |s_i / median - 1| over the repeats, in [0, MAX_NOISE)

    @field_validator("noise")
    @classmethod
    def _sane_noise(cls, v: float) -> float:
        if not (math.isfinite(v) and 0.0 <= v < MAX_NOISE):
            raise ValueError(f"noise {v} is not a fraction in [0, {MAX_NOISE})")
        return v

    @field_validator("speedups")
    @classmethod
    def _usable_speedups(cls, v: list[float]) -> list[float]:
        if not all(math.isfinite(s) and s > 0 for s in v):
            raise ValueError(f"speedups {v} hold a value that is not a positive finite number")
        return v


class BaselineResult(OnDisk):
    """``baselines/vN/<repo>/<run_name>/result.json``."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
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


class BaselineManifest(OnDisk):
    """``baselines/vN/manifest.yaml``."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
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
    # how every pass was timed as a whole: upstream's mode, zlbench's method, its budgets
    # (None: recorded before it was; the gate then reads its ops' result.json)
    timing_method: Timing | None = None
    level: str = "core"
    use_flagtune: str | None = None  # USE_FLAGTUNE the baseline was measured with
    gpu_share: int | None = None  # --gpu-share of its passes (None: before sharing: one)
    ops: list[str] = Field(default_factory=list)  # "<repo>/<run_name>"
    # the version this one was derived from (``zlbench baseline attribute``: the same
    # records and numbers plus the timed-kernel attribution; summary.attribution)
    derived_from: str | None = None
    repeats: int = 1
    thresholds: ThresholdDefaults = Field(default_factory=ThresholdDefaults)
    files: dict[str, str] = Field(default_factory=dict)  # relpath -> sha256
    summary: dict[str, Any] = Field(default_factory=dict)

    def records_view(self, *, seconds: bool) -> dict[str, Any]:
        """What a capture version of this baseline (``zlbench baseline capture``) has the
        same: every field but the version's own (name, created, derived_from, summary)
        and the hash of every file but the ops' ``codegen/launches.json`` and, unless
        ``seconds``, ``ops_status.csv`` (a capture timed as a gate's op path replaces
        recorded seconds): the same records, rows and codegen indexes."""
        files = {
            k: v
            for k, v in self.files.items()
            if not k.endswith(f"/codegen/{LAUNCHES_JSON}") and (seconds or k != OPS_STATUS)
        }
        return {**self.model_dump(exclude=VERSION_FIELDS), "files": files}

    def records_sha256(self) -> str:
        """sha256 of :meth:`records_view` with the recorded seconds: one for this
        version and every capture version of it that kept them (a codegen screen's
        stamp: what it screened and planned from)."""
        view = json.dumps(self.records_view(seconds=True), sort_keys=True, default=str)
        return hashlib.sha256(view.encode()).hexdigest()


# A manifest's fields that are its version's own, not its content's, and `files`, which
# records_view compares by its own rule
VERSION_FIELDS = frozenset({"name", "created", "derived_from", "summary", "files"})


class RowOverride(_Model):
    op: str
    dtype: str | None = None
    shape: str | None = None
    threshold: float


class ThresholdsFile(ThresholdDefaults, OnDisk):
    """A thresholds yaml (``--thresholds``): defaults plus per-op / per-row overrides."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    ops: dict[str, float] = Field(default_factory=dict)
    rows: list[RowOverride] = Field(default_factory=list)
    # per op (name or run name): its rows' paired threshold in an A/B against the base
    # compiler, instead of --ab-threshold (its rows' relative paired threshold; the
    # A/B's floor in µs, --ab-floor-us, applies to every row alike)
    paired_ops: dict[str, float] = Field(default_factory=dict)
