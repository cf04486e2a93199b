"""The autotune files: an op's records (``autotune_records/<op>.json``) and a
multi-GPU sweep's ``sweep/trust.json`` (docs/autotune.md).

Records: ``{schema_version, kind, kernels: {kernel: {key: config}}}``, a config
being ``{"kwargs": {...}, "num_warps": 4, ...}`` (``plugins/_tuners.py``). Version 0
is the bare ``{kernel: {key: config}}`` mapping without a version, written before
records were versioned (the shipped baselines hold such files); it is read through
its upgrade to version 1. ``trust.json`` has carried ``schema_version: 1`` since the
sweep wrote it.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from zlbench.models.base import OnDisk, _Model, upgrade_from

# {kernel: {key text: config}}
Records = dict[str, dict[str, Any]]


class AutotuneRecords(OnDisk):
    """One op's autotune decisions: per kernel, per autotune key, the chosen config."""

    FORMAT_VERSION: ClassVar[int] = 1
    UNVERSIONED: ClassVar[int] = 0  # the bare mapping written before the version field
    schema_version: int = FORMAT_VERSION
    kind: Literal["autotune_record_set"] = "autotune_record_set"
    kernels: dict[str, dict[str, Any]] = {}


@upgrade_from(AutotuneRecords, 0)
def _records_from_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 is the bare ``{kernel: {key: config}}`` mapping."""
    kernels = {k: v for k, v in data.items() if k != "schema_version"}
    return {"kind": "autotune_record_set", "kernels": kernels}


def records_json(kernels: Records) -> str:
    """The text of an op's records file (keys sorted: the same records, the same bytes)."""
    data = AutotuneRecords(kernels=kernels).model_dump(mode="json")
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


class SweepChild(_Model):
    """One sweep child as ``trust.json`` names it."""

    shard: str  # "k/N"
    gpu: str
    rc: int | None = None
    seconds: float = 0.0
    sweep_out: str
    log: str


class SweepTrust(OnDisk):
    """``sweep/trust.json``: how far a multi-GPU sweep's children agreed, and how the
    op was then measured (docs/design.md §5.16)."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["sweep_trust"] = "sweep_trust"
    repo: str
    run_name: str
    gpus: list[str]
    keys: int
    differing: int
    close: int
    close_rel: float
    children: list[SweepChild] = []
    measured: dict[str, Any] = {}
