"""Reading and writing ``<batch>/batch.json``; the model is :class:`zlbench.models.BatchInfo`."""

from __future__ import annotations

from pathlib import Path

from zlbench.models import BatchInfo, dump_json_model, load_json_model
from zlbench.protocol.layout import BATCH_JSON


def write_batch_info(batch_dir: Path, info: BatchInfo) -> None:
    dump_json_model(Path(batch_dir) / BATCH_JSON, info)


def read_batch_info(batch_dir: Path) -> BatchInfo | None:
    path = Path(batch_dir) / BATCH_JSON
    return load_json_model(path, BatchInfo) if path.is_file() else None


def batch_ops(batch_dir: Path) -> set[str] | None:
    """The ops a batch was dealt, as its ``batch.json`` lists them: those it ran, and
    those it dismissed or skipped (a shard's share of its selection); None without one."""
    info = read_batch_info(batch_dir)
    if info is None:
        return None
    return {*info.ops, *info.skipped, *(d.key for d in info.dismissed)}
