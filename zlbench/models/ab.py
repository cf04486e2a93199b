"""Models of the same-runner A/B against the base compiler (``gate --base-compiler``).

The PR's compiler (this environment) and the base compiler (another Python
environment) measure the same ops in alternating rounds on one runner; each
row is judged on the paired statistic of those rounds (docs/judging.md).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from zlbench.models.base import OnDisk, _Model, upgrade_from
from zlbench.models.run import RowKey
from zlbench.models.timing import SAMPLING_FIELDS, PairSampling

AbMode = Literal["suspects", "full", "changed"]
SIDES = ("pr", "base")


class AbCompiler(_Model):
    """Which compiler one side ran: what ``import triton`` gave in that environment."""

    env: str = Field("", description="the environment as given (venv, interpreter or site dir)")
    python: str | None = None  # interpreter that ran it
    dist: str | None = None  # distribution that provides `import triton` (flagtree, triton)
    version: str | None = None
    commit: str | None = None  # vcs commit of that distribution, when recorded
    path: str | None = Field(None, description="directory `import triton` loaded from")

    def label(self) -> str:
        parts = [self.dist or "unknown", self.version or "?"]
        if self.commit:
            parts.append(f"@{self.commit[:12]}")
        return " ".join(parts) + (f" ({self.path})" if self.path else "")


class PairedRow(_Model):
    """One row's A/B: per-round latencies of both sides and the paired statistic.

    ``ratio`` is the median over rounds of ``base_us / pr_us`` (< 1: the PR is
    slower), the same orientation as ``RowVerdict.ratio``; ``delta_us`` the median
    of ``pr_us - base_us`` (> 0: the PR is slower)."""

    rounds: int = Field(description="rounds in which both sides measured the row")
    pr_us: list[float] = Field(default_factory=list, description="PR FlagGems latency per round")
    base_us: list[float] = Field(default_factory=list, description="base latency per round")
    round_ratios: list[float] = Field(default_factory=list, description="base_us / pr_us")
    ratio: float | None = Field(None, description="median of round_ratios")
    change: float | None = Field(None, description="1 / ratio - 1: vs the base (+ = slower)")
    delta_us: float | None = Field(
        None, description="median over rounds of pr_us - base_us: vs the base (+ = slower)"
    )
    threshold: float | None = Field(
        None,
        gt=0,
        lt=1,
        allow_inf_nan=False,
        description="paired threshold: REGRESSION needs ratio < 1 - t and delta_us > floor_us",
    )
    floor_us: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="paired floor: REGRESSION needs also delta_us > floor_us (0: no floor)",
    )
    screen_verdict: str | None = Field(None, description="the verdict against the stored baseline")
    inherited: bool = Field(
        False, description="slower than the stored baseline, not than the base: the base's"
    )
    within_floor: bool = Field(
        False, description="beyond the threshold but within the floor: judged unchanged"
    )
    # An interleaved A/B (AbSummary.method "interleaved"): ``rounds`` counts the kept
    # pairs, ``pr_us``/``base_us``/``round_ratios`` are per pair; the intervals are
    # those of the medians (zlbench.protocol.pairs), the decision is the pair rule's.
    dropped: int = Field(0, ge=0, description="pairs left out: a sample taken while throttled")
    change_lo: float | None = Field(None, description="interval of the change: low end")
    change_hi: float | None = Field(None, description="interval of the change: high end")
    delta_lo_us: float | None = Field(None, description="interval of delta_us: low end")
    delta_hi_us: float | None = Field(None, description="interval of delta_us: high end")
    decision: str | None = Field(
        None, description="REGRESSION, PASS, IMPROVEMENT or INCONCLUSIVE by the pair rule"
    )
    plain: bool = Field(False, description="timed by the plain fallback (no CUDA graph)")
    blocks: int | None = Field(
        None,
        ge=0,
        description="the intervals are over this many block medians (a plain row's, or a "
        "replayed row's balanced AB/BA blocks)",
    )
    instrument: Literal["", "kernel-replay"] = Field(
        "", description="kernel-replay: the PR and base binaries timed standalone (issue 51)"
    )
    pr_mhz: float | None = Field(None, description="median SM clock of the PR's samples")
    base_mhz: float | None = Field(None, description="median SM clock of the base's samples")


class AbSummary(OnDisk):
    """What the A/B measured, with which compilers, at which cost; also
    ``<gate out>/ab/ab.json`` next to the rounds ``ab/<i>/{pr,base}/``.

    Its numbers and flags are strict (an artifact's ``"0.03"`` or ``true`` where a
    number stands is refused, never coerced; an int where a float stands is a number)."""

    FORMAT_VERSION: ClassVar[int] = 2
    schema_version: int = FORMAT_VERSION
    mode: AbMode
    rounds: StrictInt
    order: list[str] = Field(default_factory=list, description="sides in the order measured")
    threshold: StrictFloat = Field(
        gt=0,
        lt=1,
        allow_inf_nan=False,
        description="paired threshold: a row is a REGRESSION when slower than the base "
        "beyond it AND by more than floor_us",
    )
    floor_us: StrictFloat = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="paired floor in µs (0: none, as in files written without it)",
    )
    ops: list[str] = Field(default_factory=list, description="op keys measured both ways")
    seconds: dict[str, StrictFloat] = Field(
        default_factory=dict, description="side -> wall time, s"
    )
    pr: AbCompiler = Field(default_factory=AbCompiler)
    base: AbCompiler = Field(default_factory=AbCompiler)
    note: str = ""
    method: Literal["rounds", "interleaved"] = Field(
        "rounds",
        description="rounds: each side of each round a fresh batch (files written before "
        "the interleaved A/B); interleaved: one process per side, pairs row by row",
    )
    pr_is_screen: StrictBool = Field(
        False, description="the PR side is the gate's results/ (no ab/1/pr/ of its own)"
    )
    # how the interleaved A/B sampled (models.timing.PairSampling: the sides' per-sample
    # Timing and the adaptive pairs; None for rounds); version 1 held the adaptive pairs'
    # fields at the top level (_sampling_of_v1)
    sampling: PairSampling | None = None
    # the plain rows' threshold of the pair rule (verdict policy, zlbench.protocol.pairs)
    threshold_plain: StrictFloat | None = Field(None, gt=0, lt=1, allow_inf_nan=False)
    # `zlbench ab` (docs/judging.md "Calibers"); the defaults are the gate's A/B: both
    # sides replay the baseline's records, in one environment but for the compiler
    caliber: Literal["pinned", "own-best"] = Field(
        "pinned",
        description="pinned: both sides replayed the same records (the code's change "
        "alone); own-best: each side tuned fresh and replayed its own winners",
    )
    env_vars: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="side -> environment variables set for it alone"
    )
    records: dict[str, str] = Field(
        default_factory=dict, description="side -> the autotune records dir it replayed"
    )
    aa: StrictBool = Field(False, description="an A/A on purpose: both sides alike")

    @model_validator(mode="before")
    @classmethod
    def _v1_sampling(cls, data: Any) -> Any:
        """The adaptive pairs' fields at the top level (version 1; also a verdict.json's
        copy of one, and an ab.json edited so) read into ``sampling``."""
        return _sampling_of_v1(data) if isinstance(data, dict) else data

    # the sampling's adaptive pairs as version 1 named them (None: a rounds A/B)
    @property
    def min_pairs(self) -> int | None:
        return self.sampling.min_pairs if self.sampling else None

    @property
    def max_pairs(self) -> int | None:
        return self.sampling.max_pairs if self.sampling else None

    @property
    def max_pairs_plain(self) -> int | None:
        return self.sampling.max_pairs_plain if self.sampling else None

    @property
    def block_pairs_plain(self) -> int | None:
        return self.sampling.block_pairs_plain if self.sampling else None

    @property
    def confidence(self) -> float | None:
        return self.sampling.confidence if self.sampling else None

    @field_validator("order", "seconds", "env_vars", "records")
    @classmethod
    def _known_sides(cls, v):
        """``order`` items and ``seconds`` keys name a side, nothing else (an
        artifact's free strings would reach the report)."""
        if bad := [s for s in v if s not in SIDES]:
            raise ValueError(f"{str(bad[0])[:40]!r} is not a side (one of {', '.join(SIDES)})")
        return v


def _sampling_of_v1(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with version 1's top-level ``min_pairs``, ``max_pairs``,
    ``max_pairs_plain``, ``block_pairs_plain`` and ``confidence`` moved into
    ``sampling`` (a value given there is kept unless the top level names it; None at the
    top level: not recorded). Without any of them: unchanged (a rounds A/B's sampling
    stays None; an interleaved one of version 1 gets the defaults of what it lacked, as
    its judge read it). Its ``Timing`` was not recorded: None."""
    flat = {k: data[k] for k in SAMPLING_FIELDS if k in data}
    if not flat:
        return data
    out = {k: v for k, v in data.items() if k not in SAMPLING_FIELDS}
    given = {k: v for k, v in flat.items() if v is not None}
    if given or out.get("sampling") is not None:
        out["sampling"] = {**(out.get("sampling") or {}), **given}
    return out


@upgrade_from(AbSummary, 1)
def _ab_from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the adaptive pairs moved into ``sampling`` (models.timing)."""
    return _sampling_of_v1(data)


class PairSample(_Model):
    """One sample of an interleaved A/B: one side's per-call ms of one row. Strict: a
    number given as a string (``"0.002"``) or a bool (``true``), a flag given as a
    number or a string, is refused, never coerced (an int ms is a number)."""

    side: Literal["pr", "base"]
    ms: StrictFloat = Field(gt=0, allow_inf_nan=False)
    mhz: StrictInt | None = Field(None, description="SM clock after the sample (NVML)")
    reasons: StrictInt | None = Field(None, description="NVML clock event reasons after the sample")
    plain: StrictBool = Field(False, description="timed by the plain fallback (no CUDA graph)")


class PairedSamples(_Model):
    """One row's samples in slot order (pairs: slots 2k and 2k+1)."""

    key: RowKey
    samples: list[PairSample] = Field(default_factory=list)
    alone: list[str] = Field(default_factory=list, description="sides that timed it alone")


class PairsFile(OnDisk):
    """``<gate out>/ab/pairs.json``: every row's samples of an interleaved A/B."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    rows: list[PairedSamples] = Field(default_factory=list)
