"""Model of the codegen screen's result (``<out>/codegen.json``, docs/codegen.md).

The screen rebuilds every compile request a baseline recorded
(:mod:`zlbench.models.codegen`) with the compiler under test and classifies each
kernel by the first pipeline stage whose output differs. This module holds only
the vocabulary and the file model; the comparison is :mod:`zlbench.codegen.diff`.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar, Literal

from pydantic import Field

from zlbench.models.base import OnDisk, _Model
from zlbench.models.run import RowKey


class CodegenClass(str, Enum):
    """What the compiler under test did to one baseline kernel."""

    IDENTICAL = "identical"  # every stage's output the same as the baseline's
    TTGIR = "ttgir_changed"  # TTGIR (or TTIR before it) differs
    LLIR_PTX = "llir_ptx_changed"  # TTGIR the same; LLIR or PTX differs
    SASS = "sass_changed"  # every IR the same; only the SASS (ptxas' output) differs
    FAILED = "compile_failed"  # the baseline compiled it; the compiler under test did not
    MISSING = "missing"  # a baseline kernel the screen has no rebuild result for


# Classes of a kernel whose device code may differ from the baseline's.
CHANGED_CLASSES = frozenset({CodegenClass.TTGIR, CodegenClass.LLIR_PTX, CodegenClass.SASS})
# Classes that prove nothing about the kernel's speed (it must be timed).
UNPROVEN_CLASSES = CHANGED_CLASSES | {CodegenClass.FAILED, CodegenClass.MISSING}
# The shape of a KernelScreen row whose kernel use named its dtype but no shape: the
# recorder saw the launch before the benchmark named the row's shape (FlagGems'
# concat builds its inputs without the hook that names it). It stands for every row of
# that op and dtype that no use names by shape. Never an upstream shape text.
UNNAMED_SHAPE = "(shape not recorded)"

CLASS_LABELS = {
    CodegenClass.IDENTICAL: "identical",
    CodegenClass.TTGIR: "TTGIR changed",
    CodegenClass.LLIR_PTX: "only LLIR/PTX changed",
    CodegenClass.SASS: "only SASS changed",
    CodegenClass.FAILED: "compile failed",
    CodegenClass.MISSING: "missing",
}

# Resource figures compared per kernel, in report order.
RESOURCES = ("n_regs", "n_spills", "shared", "sass_instructions", "compile_s")


class Resources(_Model):
    """What one build of a kernel used; None where the record does not say."""

    n_regs: int | None = None
    n_spills: int | None = None
    shared: int | None = None  # bytes of shared memory
    sass_instructions: int | None = None
    compile_s: float | None = None  # wall time of the whole compile


class KernelScreen(_Model):
    """One baseline kernel (one compile request) and what the screen found."""

    kernel_id: str  # the compile request's id
    name: str  # the Triton function name
    config: str = ""  # e.g. "BLOCK=256 num_warps=4 num_stages=3"
    status: CodegenClass
    first_stage: str | None = None  # first of models.codegen.STAGES that differs
    baseline: Resources = Field(default_factory=Resources)
    current: Resources | None = None  # None: no successful rebuild
    deltas: dict[str, float] = Field(default_factory=dict)  # RESOURCES: current - baseline
    diff_file: str | None = None  # relative to the screen's out dir: diffs/<id>.diff
    # Lines added or removed in that diff (its first differing stage's text); None where
    # no text diff was written (not changed, the baseline's text not stored, binary)
    changed_lines: int | None = None
    error: str | None = None  # compile failure (first lines) or why missing
    notes: list[str] = Field(default_factory=list)  # the rebuild's remarks ("source changed")
    ops: list[str] = Field(default_factory=list)  # "<repo>/<run_name>" that launched it
    rows: list[RowKey] = Field(default_factory=list)  # baseline rows that launched it
    # Where it ran relative to the rows' timed regions (KernelUse.timed): the ops and
    # rows where some launch was inside a timed region, and those where every launch
    # was outside (setup: input generation, the torch reference). An op or row in
    # neither list has no attribution (a baseline recorded before it): timed.
    timed_ops: list[str] = Field(default_factory=list)
    setup_ops: list[str] = Field(default_factory=list)
    timed_rows: list[RowKey] = Field(default_factory=list)
    setup_rows: list[RowKey] = Field(default_factory=list)
    # A screen decided against the base compiler (CodegenScreen.decided_by "base"): the
    # class of the PR's rebuild against the baseline's records, as context only (None:
    # the status above is that comparison, or the kernel was not compared with them)
    vs_baseline: CodegenClass | None = None
    # What the compiler under test built (the history store's per-kernel digest,
    # zlbench.codegen.diff.code_digest): 16 hex of its rebuild's stage digests, or of
    # its compile error; "" where nothing was rebuilt (or a screen written before it)
    code_digest: str = ""
    # The binary it built: its cubin's code digest (CompileResult.cubin_code_sha256, debug
    # and line info left out); the kernel-replay tier's builds must have it before a
    # sample counts. "" where no cubin was built (or a screen written before it).
    binary_digest: str = ""


class KernelNote(_Model):
    """The codegen explanation of one kernel a judged row launched (for the reports)."""

    kernel_id: str
    name: str
    config: str = ""
    status: CodegenClass
    first_stage: str | None = None
    deltas: dict[str, float] = Field(default_factory=dict)
    diff_file: str | None = None  # relative to the report's dir
    error: str | None = None
    code_digest: str = ""  # KernelScreen.code_digest: what the compiler under test built


class CodegenScreen(OnDisk):
    """``<out>/codegen.json``: the codegen screen of one baseline."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["codegen_screen"] = "codegen_screen"
    baseline_dir: str
    compiler: str | None = None  # version of the triton that rebuilt the kernels
    python: str | None = None  # interpreter that ran the rebuild workers
    generated: str = ""  # ISO 8601 UTC
    wall_s: float | None = None
    jobs: int = 1
    counts: dict[str, int] = Field(default_factory=dict)  # CodegenClass value -> kernels
    kernels: list[KernelScreen] = Field(default_factory=list)
    # Baseline ops with rows but no codegen records: their speed is unproven.
    ops_without_records: list[str] = Field(default_factory=list)
    # Baseline ops whose codegen index holds no record: their record pass launched no
    # Triton kernel (the recorder writes an index for every op it saw end, an empty one
    # for an op that compiled and launched nothing; docs/codegen.md), so no compiler
    # change reaches their rows.
    ops_without_kernels: list[str] = Field(default_factory=list)
    # Baseline ops whose record pass compiled or launched kernels it could not record
    # (CodegenIndex.unrecorded), with their number: their speed is unproven.
    ops_with_unrecorded: dict[str, int] = Field(default_factory=dict)
    # What each kernel's status compares the PR's rebuild with: "base" (the same requests
    # rebuilt by the base compiler, ``gate --base-compiler``), "baseline" (the records
    # the baseline's recording compiler wrote) or "" (a screen written before either)
    decided_by: Literal["", "base", "baseline"] = ""
    base_compiler: str = ""  # fingerprint of the base compiler (decided_by "base")
    base_rebuild: str = ""  # where the base side came from: "cached <dir>" / "rebuilt"
    # CodegenClass value -> kernels, of the PR's rebuild against the baseline's records
    # (decided_by "base": context, what a screen without a base would have found)
    vs_baseline_counts: dict[str, int] = Field(default_factory=dict)
    # An interrupted screen's partial output (``codegen.partial.json``, never
    # ``codegen.json``): the kernels classified before the stop, of ``total`` in all;
    # 0 for a whole screen. No plan is ever made from it.
    partial_of: int = 0

    def by_id(self) -> dict[str, KernelScreen]:
        return {k.kernel_id: k for k in self.kernels}

    def changed(self) -> list[KernelScreen]:
        return [k for k in self.kernels if k.status in CHANGED_CLASSES]

    def failed(self) -> list[KernelScreen]:
        return [k for k in self.kernels if k.status is CodegenClass.FAILED]

    def missing(self) -> list[KernelScreen]:
        return [k for k in self.kernels if k.status is CodegenClass.MISSING]


class TimingPlanFile(OnDisk):
    """``<gate out>/codegen/timing.json``: which baseline ops the gate timed and which
    it skipped on the codegen screen's proof (``gate --time changed``), so that
    ``zlbench report`` re-judges the artifact with the same op set."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["codegen_timing"] = "codegen_timing"
    time: Literal["all", "changed"] = "all"
    timed: dict[str, str] = Field(default_factory=dict)  # op key -> why it is timed
    skipped: dict[str, str] = Field(default_factory=dict)  # op key -> proof it is unchanged
    # op key -> why it was not timed: kernels of it the compiler under test cannot build
    # (its rows are FAILED with that line, docs/judging.md)
    failed: dict[str, str] = Field(default_factory=dict)
    # op key -> why a changed op was not timed: beyond the gate's GPU budget
    # (--time-budget); listed in every report, judged only where results hold its rows
    over_budget: dict[str, str] = Field(default_factory=dict)
    budget_s: float | None = Field(None, ge=0, allow_inf_nan=False)
    # Written by `gate --screen-only` (a CPU job, docs/codegen.md "The screen on a CPU
    # job"); a measuring gate given it with --screen checks these before it times `order`
    screen_only: bool = False
    baseline_sha256: str = ""  # sha256 of the baseline's manifest.yaml it screened
    # its BaselineManifest.records_sha256: a capture version of that baseline (the same
    # records, rows and seconds) takes the screen too ("" before it was stamped)
    baseline_records_sha256: str = ""
    compiler: str = ""  # fingerprint of the compiler under test (workflow.codegen)
    scope: list[str] = Field(default_factory=list)  # the op keys in scope, sorted
    order: list[str] = Field(default_factory=list)  # the timed ops, in priority order
    generated: str = ""  # ISO 8601 UTC
    # What the screen compared the PR's kernels with (CodegenScreen.decided_by) and the
    # base compiler's fingerprint when "base": a measuring gate given this plan checks
    # it against its own --base-compiler
    decided_by: Literal["", "base", "baseline"] = ""
    base_compiler: str = ""


class RebuiltShard(OnDisk):
    """``<out>/rebuilt.json`` of ``zlbench codegen --shard K/N``: one shard of a
    screen's rebuild, made on its own CPU job (zlbench.codegen.shards)."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["codegen_rebuilt_shard"] = "codegen_rebuilt_shard"
    baseline_sha256: str  # sha256 of the baseline's manifest.yaml
    compiler: str  # fingerprint of the compiler that rebuilt (workflow.codegen)
    shard: tuple[int, int]  # (K, N), K 1-based
    ids: list[str] = Field(default_factory=list)  # the kernel ids dealt to the shard
    generated: str = ""  # ISO 8601 UTC
    wall_s: float | None = None
    jobs: int = 1
