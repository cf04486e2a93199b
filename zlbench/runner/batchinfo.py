"""``<batch>/batch.json``: what a batch was asked to do, and on what it ran.

Written at the start of a batch and rewritten at its end (counts, environment).
``zlbench merge`` uses it to refuse mixing shards measured differently.
(Kept here until models.py adopts it; same conventions: schema_version, extra=forbid.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zlbench.models import SCHEMA_VERSION, Environment, dump_json_model, load_json_model

BATCH_JSON = "batch.json"


class DismissedOp(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str  # <repo>/<run_name>
    date: str
    reason: str


class BatchInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

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


def write_batch_info(batch_dir: Path, info: BatchInfo) -> None:
    dump_json_model(Path(batch_dir) / BATCH_JSON, info)


def read_batch_info(batch_dir: Path) -> BatchInfo | None:
    path = Path(batch_dir) / BATCH_JSON
    return load_json_model(path, BatchInfo) if path.is_file() else None
