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

import importlib

# name -> the module that defines it. Loaded on first use (PEP 562 ``__getattr__``):
# importing zlbench.models builds no model, so a command's --help, which only needs a
# few names (REPOS, the option models), never builds the verdict's or the A/B's models
# (issue 50 item 7: `zlbench gate --help` took 2 s on a loaded machine). Add a new
# module's public names here.
_MODULES: dict[str, tuple[str, ...]] = {
    "ab": (
        "SIDES",
        "AbCompiler",
        "AbMode",
        "AbSummary",
        "PairedRow",
        "PairedSamples",
        "PairSample",
        "PairsFile",
    ),
    "accept": (
        "AcceptedNote",
        "AcceptEntry",
        "AcceptList",
    ),
    "autotune": (
        "AutotuneRecords",
        "Records",
        "SweepChild",
        "SweepTrust",
        "records_json",
    ),
    "base": (
        "FLAGGEMS_DIR_VARS",
        "REPO_PACKAGES",
        "REPOS",
        "OnDisk",
        "atomic_write_text",
        "dump_json_model",
        "dump_yaml_model",
        "load_json_model",
        "load_yaml_model",
        "parse_yaml",
        "read_text",
        "upgrade",
        "upgrade_from",
        "upgrades",
        "validate",
    ),
    "baseline": (
        "MAX_NOISE",
        "BaselineManifest",
        "BaselineResult",
        "BaselineRow",
        "RowOverride",
        "ThresholdDefaults",
        "ThresholdsFile",
    ),
    "batch": (
        "OP_STATUS_FIELDS",
        "SUMMARY_FIELDS",
        "BatchInfo",
        "DismissedOp",
        "OpStatus",
        "read_ops_status",
    ),
    "codegen": (
        "CODEGEN_BLOBS",
        "CODEGEN_DIR",
        "CODEGEN_INDEX",
        "STAGES",
        "TEXT_STAGES",
        "AttrValue",
        "CodegenIndex",
        "CompileRecord",
        "CompileRequest",
        "CompileResult",
        "CompilerIdentity",
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
    ),
    "codegen_screen": (
        "CHANGED_CLASSES",
        "UNPROVEN_CLASSES",
        "CodegenClass",
        "CodegenScreen",
        "KernelNote",
        "KernelScreen",
        "Resources",
        "TimingPlanFile",
    ),
    "gated": (
        "GATED_JSON",
        "GateRecord",
    ),
    "options": (
        "SPLIT_MODES",
        "Measuring",
        "Scheduling",
        "Selection",
    ),
    "paths": (
        "check_tree_inside",
        "resolve_inside",
    ),
    "replay": (
        "EXACT_INT_MAX",
        "EXACT_MAX",
        "LAUNCHES_JSON",
        "REPLAY_DIR",
        "REPLAY_JSON",
        "REPLAY_PAIRS",
        "REPLAY_PLAN",
        "ArgSpec",
        "BinaryRef",
        "DeferredRow",
        "LaunchCapture",
        "LaunchSpec",
        "PlannedRow",
        "ReplayedRow",
        "ReplayPlanFile",
        "ReplayRun",
        "RowLaunches",
        "SideBuildTime",
        "TensorStats",
    ),
    "run": (
        "Environment",
        "Marker",
        "MarkerKind",
        "PlanEntry",
        "Row",
        "RowKey",
        "RunResult",
        "RunStatus",
        "WorkerPlan",
        "assign_occurrences",
        "count_markers",
        "counts_of_kind",
        "records_file_name",
    ),
    "steps": (
        "STEPS_JSON",
        "GateSteps",
    ),
    "timing": (
        "Timing",
        "TimingMethod",
        "parse_timing",
    ),
    "verdict": (
        "FAILING_VERDICTS",
        "CodegenSummary",
        "EnvFinding",
        "GateVerdict",
        "MachineSpeed",
        "OpVerdict",
        "RowVerdict",
        "Verdict",
    ),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = list(_WHERE)


def __getattr__(name: str):
    """``zlbench.models.<name>``: the name from its module, imported on first use
    (and a submodule by its name, as ``import zlbench.models.verdict`` gives it)."""
    module = _WHERE.get(name)
    if module is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next look-up is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
