"""Pydantic models of everything zlbench writes to disk.

This package is the contract between the parts (docs/design.md §2, §3): plugins and
runner write these files, gate/report/cli read them. Every top-level file model
carries ``schema_version``; reading an unknown version is a clear error.

Import from ``zlbench.models`` itself; the split into modules is internal:
``base`` (base class, loaders, atomic writers), ``codegen``
(codegen records of compiled kernels), ``run`` (markers, rows,
environment, ``result.json``, worker plan), ``batch`` (``ops_status.csv``,
``batch.json``), ``baseline`` (baseline sets, thresholds) and ``verdict``
(``verdict.json``). Each imports only the ones before it in that list;
``paths`` (paths read from artifacts, kept inside their root) imports none.

Imports nothing from zlbench but :mod:`zlbench.errors`.
"""

from __future__ import annotations

from zlbench.models.ab import SIDES, AbCompiler, AbMode, AbSummary, PairedRow
from zlbench.models.accept import AcceptedNote, AcceptEntry, AcceptList
from zlbench.models.base import (
    FLAGGEMS_DIR_VARS,
    REPO_PACKAGES,
    REPOS,
    SCHEMA_VERSION,
    atomic_write_text,
    dump_json_model,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
    parse_yaml,
    read_text,
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
)
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
from zlbench.models.verdict import (
    FAILING_VERDICTS,
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
    "FLAGGEMS_DIR_VARS",
    "FAILING_VERDICTS",
    "MAX_NOISE",
    "OP_STATUS_FIELDS",
    "REPOS",
    "REPO_PACKAGES",
    "SCHEMA_VERSION",
    "SUMMARY_FIELDS",
    "BaselineManifest",
    "BaselineResult",
    "BaselineRow",
    "BatchInfo",
    "DismissedOp",
    "EnvFinding",
    "Environment",
    "GateVerdict",
    "MachineSpeed",
    "Marker",
    "MarkerKind",
    "OpStatus",
    "OpVerdict",
    "PlanEntry",
    "Row",
    "RowKey",
    "RowOverride",
    "RowVerdict",
    "RunResult",
    "RunStatus",
    "ThresholdDefaults",
    "ThresholdsFile",
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
    "parse_yaml",
    "read_text",
    "read_ops_status",
    "records_file_name",
    "resolve_inside",
]
