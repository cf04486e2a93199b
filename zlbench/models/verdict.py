"""Models of the gate's verdict (``verdict.json``), which the reports render.

Built on :mod:`zlbench.models.run` (row keys, markers, environments).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import Field

from zlbench.models.base import SCHEMA_VERSION, _Model
from zlbench.models.run import Environment, Marker, RowKey


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
