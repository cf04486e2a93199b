"""Models of the gate's verdict (``verdict.json``), which the reports render.

Built on :mod:`zlbench.models.run` (row keys, markers, environments) and
:mod:`zlbench.models.baseline` (the thresholds in force).
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar, Literal

from pydantic import Field

from zlbench.models.ab import AbSummary, PairedRow
from zlbench.models.accept import AcceptedNote, AcceptEntry
from zlbench.models.base import OnDisk, _Model
from zlbench.models.baseline import ThresholdsFile
from zlbench.models.codegen_screen import KernelNote
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
    # an interleaved A/B whose interval still straddles the threshold after its budget:
    # shown first in the reports with its interval; it does not fail the gate
    INCONCLUSIVE = "INCONCLUSIVE"


# Verdicts that fail the gate (exit 1).
FAILING_VERDICTS = frozenset(
    {Verdict.REGRESSION, Verdict.FALLBACK, Verdict.FAILED, Verdict.MISSING}
)


class RowVerdict(_Model):
    """One row's verdict. Changes are relative, ``+0.05`` = 5 % more kernel time
    (slower); the same sign in every report (docs/reports.md)."""

    key: RowKey
    verdict: Verdict
    baseline_speedup: float | None = None
    current_speedup: float | None = None
    baseline_us: float | None = Field(None, description="FlagGems kernel latency, baseline, µs")
    current_us: float | None = Field(None, description="FlagGems kernel latency, current, µs")
    baseline_torch_us: float | None = Field(None, description="torch latency, baseline, µs")
    current_torch_us: float | None = Field(None, description="torch latency, current, µs")
    kernel_change: float | None = Field(
        None, description="current_us / baseline_us - 1, uncorrected (+ = slower)"
    )
    ratio: float | None = Field(
        None,
        description="the judged statistic (GateVerdict.estimator): FlagGems speed vs the "
        "baseline after the machine-speed correction, < 1 slower; median over samples "
        "when confirmed",
    )
    judged_change: float | None = Field(
        None, description="1 / ratio - 1: kernel time change after the correction (+ = slower)"
    )
    threshold: float | None = Field(None, description="relative, e.g. 0.05: fails if ratio < 1 - t")
    limit: float | None = Field(
        None, description="judged_change at the threshold: 1/(1-t)-1 (1/(1+t)-1 for IMPROVEMENT)"
    )
    samples: list[float] = Field(default_factory=list, description="ratios incl. re-measures")
    confirmed: bool | None = Field(None, description="regression confirmed by re-measurement")
    reason: str = ""
    ab: PairedRow | None = Field(None, description="A/B against the base compiler (judged on it)")
    accepted: AcceptedNote | None = Field(None, description="the accept entry matching the row")
    codegen: list[KernelNote] = Field(
        default_factory=list,
        description="the kernels the baseline's codegen records say this row launched, "
        "changed ones first, with what the codegen screen found (docs/codegen.md); empty: "
        "no screen, or no record names the row",
    )
    kernel_code: str = Field(
        "",
        description="the kernels of `codegen`'s list (every row, a row without notes too) "
        "with the code the compiler under test built of each: name@kernel_id=code_digest "
        "pairs joined by ';', the history store's timed-kernel digest (docs/history.md); "
        "empty: no screen, or no record names the row",
    )
    plain_timed: bool = Field(
        False,
        description="the baseline row or the current row was timed by the plain do_bench "
        "fallback, not a CUDA graph (Row.no_cudagraph, the BENCHMARK_DIRECT_NO_CUDAGRAPH "
        "marker): noisier; the reports mark the row with a dagger",
    )
    plain_timed_in: list[Literal["baseline", "current"]] = Field(
        default_factory=list, description="which side(s) were timed by the plain fallback"
    )


class OpVerdict(_Model):
    repo: str
    run_name: str
    op: str
    verdict: Verdict
    geomean_ratio: float | None = Field(None, description="geomean of the rows' judged ratios")
    judged_change: float | None = Field(None, description="1 / geomean_ratio - 1 (+ = slower)")
    threshold: float | None = None
    rows: int = 0
    reason: str = ""
    duration_s: float | None = Field(None, description="wall time of the op's run (result.json)")
    log_tail: list[str] = Field(default_factory=list)
    reproduce: str | None = None  # exact zlbench command that re-measures it


class MachineSpeed(_Model):
    """The machine-speed correction of one host: how its torch latencies compared
    with the baseline's (median over its matched rows)."""

    host: str | None = None
    torch_change: float = Field(description="median current / baseline torch latency - 1")
    rows: int = Field(0, description="matched rows the median is over")
    applied: bool = Field(description="True: the estimator divides it out of every row")


class CodegenSummary(_Model):
    """What the gate's codegen screen found and what it let the gate skip
    (docs/codegen.md, "Gate integration")."""

    screened: bool = Field(description="False: no screen ran (see note); every op is timed")
    note: str = Field("", description="why there is no screen, or what limits it")
    time: Literal["all", "changed"] = Field(
        "all", description="gate --time: all ops, or only those the screen did not prove unchanged"
    )
    kernels: int = Field(0, description="kernels the screen rebuilt and compared")
    changed: int = Field(0, description="kernels whose generated code differs")
    failed: list[str] = Field(
        default_factory=list,
        description="one line per kernel the baseline compiled that the compiler under test "
        "fails to compile: such a kernel fails the gate",
    )
    screen_file: str = Field("", description="codegen.json, relative to the report's dir")
    wall_s: float | None = Field(
        None, description="wall time of the screen's rebuild (codegen.json wall_s), if recorded"
    )
    not_timed: dict[str, str] = Field(
        default_factory=dict,
        description="op key -> proof that its kernels are unchanged (--time changed): not timed",
    )
    over_budget: dict[str, str] = Field(
        default_factory=dict,
        description="op key -> why it was not timed although its kernels changed: beyond the "
        "gate's GPU budget (--time-budget); not judged, listed in every report",
    )


class EnvFinding(_Model):
    field: str
    baseline: str | None = None
    current: str | None = None
    mismatch: bool = True  # False: informational (e.g. compiler commit differs, expected)


class GpuDifference(_Model):
    """The baseline was recorded on another GPU model than the results were measured
    on (``gate.env.gpu_difference``). Accepted only with a base compiler (the
    interleaved A/B pairs PR and base on this GPU, the stored timings are context)
    and the same architecture; else the gate refuses, naming the command that records
    this runner's own baseline."""

    baseline_gpu: str | None = None
    baseline_arch: str | None = None  # "sm_90"; None: not known
    runner_gpu: str | None = None
    runner_arch: str | None = None
    accepted: bool = False
    line: str = ""  # the report's first lines (accepted) or the refusal


class GateVerdict(OnDisk):
    """``verdict.json``: everything the reports are rendered from."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
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
    gpu_difference: GpuDifference | None = Field(
        None,
        description="the baseline's GPU model differs from the runner's: accepted (same "
        "architecture, a base compiler paired on this GPU) or why not; None: same GPU",
    )
    baseline_env: Environment = Field(default_factory=Environment)
    current_env: Environment = Field(default_factory=Environment)
    markers: list[Marker] = Field(default_factory=list)
    estimator: str = Field("", description="the judged statistic: ratio | torch_normalized")
    machine_speed: list[MachineSpeed] = Field(default_factory=list)
    thresholds: ThresholdsFile | None = Field(None, description="the thresholds in force")
    thresholds_source: str = Field("", description="where they came from (file or manifest)")
    reproduce_template: str = Field(
        "", description="zlbench run with $OP $REPO $RUN $DTYPES $FLAGGEMS_DIR to fill per op"
    )
    systemic: list[str] = Field(
        default_factory=list,
        description="one line per failure many ops share (batch.json 'systemic'), e.g. "
        "'13 ops fail the same way under the compiler under test: SystemError in "
        "triton/backends/nvidia/driver.py:328'; the reports lead with them",
    )
    not_measured: list[str] = Field(
        default_factory=list,
        description="op keys never measured (time budget spent, or a systemic failure "
        "before they began): never PASS",
    )
    drift: list[str] = Field(
        default_factory=list,
        description="sentinel rows (kernels identical) that moved on the A/B: runner drift or "
        "a launcher or runtime change, shown and never failing on their own",
    )
    ab: AbSummary | None = Field(None, description="the A/B against the base compiler, if any")
    base_compiler: str = Field(
        "",
        description="--base-compiler as the gate was given it ('' : none); set also when "
        "nothing was A/B-measured (ab None), so the reports say why",
    )
    codegen: CodegenSummary | None = Field(
        None, description="the codegen screen of the baseline's kernels, if the gate ran one"
    )
    accept: list[AcceptEntry] = Field(default_factory=list, description="the accept list given")
    accept_source: str = Field("", description="the --accept file as given")
    accept_unmatched: list[AcceptEntry] = Field(
        default_factory=list, description="accept entries that matched no judged row"
    )
