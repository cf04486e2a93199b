"""Pydantic models of everything zlbench writes to disk.

This package is the contract between the parts (docs/design.md §2, §3): plugins and
runner write these files, gate/report/cli read them. Every model written as a file
of its own is an ``OnDisk`` model with its own ``FORMAT_VERSION`` (its
``schema_version`` field); the loaders upgrade an older version step by step and
refuse a newer one with a clear error (docs/contributing.md "Changing an on-disk
format").

Import from ``zlbench.models`` itself; the split into modules is internal:
``base`` (base class, loaders, atomic writers), ``ranges`` (the numeric ranges of
options and budgets, shared with the CLI's checks), ``timing`` (how a run was
timed), ``options`` (a command's measuring options: never on disk), ``codegen``
(codegen records of compiled kernels), ``run`` (markers, rows,
environment, ``result.json``, worker plan), ``batch`` (``ops_status.csv``,
``batch.json``), ``autotune`` (autotune records, a sweep's ``trust.json``),
``baseline`` (baseline sets, thresholds), ``codegen_screen``
(the codegen screen's ``codegen.json``) and ``verdict``
(``verdict.json``). Each imports only the ones before it in that list;
``paths`` (paths read from artifacts, kept inside their root) imports none.

Imports nothing from zlbench but :mod:`zlbench.errors`.
"""

from __future__ import annotations

from zlbench.models.ab import (
    SIDES,
    AbCompiler,
    AbMode,
    AbSummary,
    PairedRow,
    PairedSamples,
    PairSample,
    PairsFile,
)
from zlbench.models.accept import AcceptedNote, AcceptEntry, AcceptList
from zlbench.models.autotune import (
    AutotuneRecords,
    Records,
    SweepChild,
    SweepTrust,
    records_json,
)
from zlbench.models.base import (
    FLAGGEMS_DIR_VARS,
    REPO_PACKAGES,
    REPOS,
    OnDisk,
    atomic_write_text,
    dump_json_model,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
    parse_yaml,
    read_text,
    upgrade,
    upgrade_from,
    upgrades,
    validate,
)
from zlbench.models.baseline import (
    MAX_NOISE,
    BaselineManifest,
    BaselineResult,
    BaselineRow,
    RowOverride,
    ThresholdDefaults,
    ThresholdsFile,
)
from zlbench.models.batch import (
    OP_STATUS_FIELDS,
    SUMMARY_FIELDS,
    BatchInfo,
    DismissedOp,
    OpStatus,
    read_ops_status,
)
from zlbench.models.codegen import (
    CODEGEN_BLOBS,
    CODEGEN_DIR,
    CODEGEN_INDEX,
    STAGES,
    TEXT_STAGES,
    AttrValue,
    CodegenIndex,
    CompileRecord,
    CompileRequest,
    CompileResult,
    CompilerIdentity,
    ConstValue,
    KernelConfig,
    KernelSource,
    KernelUse,
    StageDigest,
    Target,
    blob_digest,
    codegen_dir,
    load_codegen_index,
    read_blob,
    text_stored,
)
from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    UNPROVEN_CLASSES,
    CodegenClass,
    CodegenScreen,
    KernelNote,
    KernelScreen,
    Resources,
    TimingPlanFile,
)
from zlbench.models.gated import GATED_JSON, GateRecord
from zlbench.models.options import SPLIT_MODES, Measuring, Scheduling, Selection
from zlbench.models.paths import check_tree_inside, resolve_inside
from zlbench.models.run import (
    Environment,
    Marker,
    MarkerKind,
    PlanEntry,
    Row,
    RowKey,
    RunResult,
    RunStatus,
    WorkerPlan,
    assign_occurrences,
    count_markers,
    counts_of_kind,
    records_file_name,
)
from zlbench.models.steps import STEPS_JSON, GateSteps
from zlbench.models.timing import Timing, TimingMethod, parse_timing
from zlbench.models.verdict import (
    FAILING_VERDICTS,
    CodegenSummary,
    EnvFinding,
    GateVerdict,
    MachineSpeed,
    OpVerdict,
    RowVerdict,
    Verdict,
)

__all__ = [
    "SIDES",
    "AbCompiler",
    "AbMode",
    "AbSummary",
    "AcceptedNote",
    "AcceptEntry",
    "AcceptList",
    "PairedRow",
    "PairedSamples",
    "PairSample",
    "PairsFile",
    "CHANGED_CLASSES",
    "UNPROVEN_CLASSES",
    "CodegenClass",
    "CodegenScreen",
    "CodegenSummary",
    "KernelNote",
    "KernelScreen",
    "Resources",
    "TimingPlanFile",
    "CODEGEN_BLOBS",
    "CODEGEN_DIR",
    "CODEGEN_INDEX",
    "STAGES",
    "TEXT_STAGES",
    "AttrValue",
    "CodegenIndex",
    "CompilerIdentity",
    "CompileRecord",
    "CompileRequest",
    "CompileResult",
    "ConstValue",
    "KernelConfig",
    "KernelSource",
    "KernelUse",
    "StageDigest",
    "Target",
    "blob_digest",
    "codegen_dir",
    "load_codegen_index",
    "read_blob",
    "text_stored",
    "FLAGGEMS_DIR_VARS",
    "FAILING_VERDICTS",
    "MAX_NOISE",
    "OP_STATUS_FIELDS",
    "REPOS",
    "REPO_PACKAGES",
    "STEPS_JSON",
    "GATED_JSON",
    "GateRecord",
    "SUMMARY_FIELDS",
    "AutotuneRecords",
    "BaselineManifest",
    "BaselineResult",
    "BaselineRow",
    "BatchInfo",
    "DismissedOp",
    "EnvFinding",
    "Environment",
    "GateSteps",
    "GateVerdict",
    "MachineSpeed",
    "Marker",
    "MarkerKind",
    "Measuring",
    "SPLIT_MODES",
    "OpStatus",
    "OnDisk",
    "OpVerdict",
    "PlanEntry",
    "Row",
    "RowKey",
    "RowOverride",
    "RowVerdict",
    "RunResult",
    "Records",
    "RunStatus",
    "Scheduling",
    "Selection",
    "SweepChild",
    "SweepTrust",
    "ThresholdDefaults",
    "ThresholdsFile",
    "Timing",
    "TimingMethod",
    "Verdict",
    "WorkerPlan",
    "assign_occurrences",
    "atomic_write_text",
    "check_tree_inside",
    "count_markers",
    "counts_of_kind",
    "dump_json_model",
    "dump_yaml_model",
    "load_json_model",
    "load_yaml_model",
    "parse_timing",
    "parse_yaml",
    "read_text",
    "read_ops_status",
    "records_file_name",
    "records_json",
    "upgrade",
    "upgrade_from",
    "upgrades",
    "validate",
    "resolve_inside",
]
