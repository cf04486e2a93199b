"""Every compile record of a baseline (or batch) dir, deduplicated by request id.

Reads ``<dir>/<repo>/<run_name>/codegen/index.json`` (``models.codegen``); writes
nothing and never imports triton. A kernel used by several ops is one entry whose
uses are merged; a record's blobs are read from the codegen dir it came from.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models.codegen import (
    CODEGEN_DIR,
    CODEGEN_INDEX,
    CompileRecord,
    load_codegen_index,
)
from zlbench.models.codegen_screen import UNNAMED_SHAPE
from zlbench.models.run import RowKey
from zlbench.protocol.layout import RESULT_JSON, op_key, split_op_key


@dataclass
class BaselineKernels:
    root: Path
    records: dict[str, CompileRecord] = field(default_factory=dict)  # id -> first record
    blob_dirs: dict[str, Path] = field(default_factory=dict)  # id -> its codegen dir
    ops: dict[str, set[str]] = field(default_factory=dict)  # id -> "<repo>/<run_name>"
    rows: dict[str, set[RowKey]] = field(default_factory=dict)  # id -> rows that launched it
    # id -> op key / row -> the KernelUse.timed values of its uses there (True: inside
    # the row's timed region, False: outside, None: not recorded)
    op_timed: dict[str, dict[str, set[bool | None]]] = field(default_factory=dict)
    row_timed: dict[str, dict[RowKey, set[bool | None]]] = field(default_factory=dict)
    op_kernels: dict[str, set[str]] = field(default_factory=dict)  # op key -> ids
    ops_without_records: list[str] = field(default_factory=list)  # ops with result.json only
    # op key -> kernels its record pass compiled or launched without a record
    # (CodegenIndex.unrecorded > 0): nothing of it is proven
    unrecorded: dict[str, int] = field(default_factory=dict)
    # id -> ops whose record of it has other stage outputs than the first one read
    # (the baseline's own compiles were not deterministic).
    conflicts: dict[str, set[str]] = field(default_factory=dict)

    @property
    def ops_without_kernels(self) -> list[str]:
        """The ops whose codegen index holds no record (their record pass launched no
        Triton kernel), sorted."""
        return sorted(
            key for key, ids in self.op_kernels.items() if not ids and key not in self.unrecorded
        )


def run_dirs(root: Path) -> list[Path]:
    """The ``<repo>/<run_name>`` dirs under ``root`` holding a result or a codegen index."""
    found = {p.parent for p in root.glob(f"*/*/{RESULT_JSON}")}
    found |= {p.parent.parent for p in root.glob(f"*/*/{CODEGEN_DIR}/{CODEGEN_INDEX}")}
    return sorted(found)


def has_codegen_records(root: str | Path) -> bool:
    """Whether ``root`` holds any codegen index (a v1 baseline has none): the gate
    screens only then, and otherwise times every op with a note."""
    return any(Path(root).glob(f"*/*/{CODEGEN_DIR}/{CODEGEN_INDEX}"))


def collect(root: str | Path, ops: Collection[str] | None = None) -> BaselineKernels:
    """All records under ``root``. No record at all is a ZlbenchError (exit 2).
    ``ops``: only those op keys' records (``<repo>/<run_name>``; none of them recorded:
    nothing, no error): the kernel replay's builds need a few ops' records, and all of
    v7's (6,922 kernels) take 5-6 s to read (docs/measurements.md, thirty-sixth
    session)."""
    root = Path(root)
    if not root.is_dir():
        raise ZlbenchError(f"{root}: baseline dir not found")
    out = BaselineKernels(root)
    dirs = run_dirs(root) if ops is None else [root.joinpath(*split_op_key(k)) for k in sorted(ops)]
    for run_dir in dirs:
        if ops is not None and not run_dir.is_dir():
            continue
        key = op_key(run_dir.parent.name, run_dir.name)
        index = load_codegen_index(run_dir)
        if index is None:
            out.ops_without_records.append(key)
            continue
        out.op_kernels[key] = set()
        if index.unrecorded:
            out.unrecorded[key] = index.unrecorded
        for rec in index.records:
            _add(out, key, run_dir / CODEGEN_DIR, rec)
    if not out.records and ops is None:
        raise ZlbenchError(
            f"{root}: no codegen records (<repo>/<run_name>/{CODEGEN_DIR}/{CODEGEN_INDEX}); "
            "a baseline recorded before codegen recording cannot be screened: refresh it"
        )
    return out


def _outputs(rec: CompileRecord) -> dict[str, str] | None:
    return {n: d.sha256 for n, d in rec.result.stages.items()} if rec.result else None


def _add(out: BaselineKernels, key: str, cg_dir: Path, rec: CompileRecord) -> None:
    if rec.id != rec.request.key():
        raise ZlbenchError(
            f"{cg_dir / CODEGEN_INDEX}: record {rec.id} does not match its request "
            f"(key {rec.request.key()}): corrupted"
        )
    if rec.id not in out.records:
        out.records[rec.id] = rec
        out.blob_dirs[rec.id] = cg_dir
    elif _outputs(rec) != _outputs(out.records[rec.id]):
        out.conflicts.setdefault(rec.id, set()).add(key)
    out.ops.setdefault(rec.id, set()).add(key)
    out.op_kernels[key].add(rec.id)
    repo, _ = split_op_key(key)
    rows = out.rows.setdefault(rec.id, set())
    op_timed = out.op_timed.setdefault(rec.id, {}).setdefault(key, set())
    row_timed = out.row_timed.setdefault(rec.id, {})
    for use in rec.used_by or [None]:
        op_timed.add(use.timed if use is not None else None)
        if use is not None and use.dtype is not None:
            row = RowKey(
                repo=repo,
                run_name=use.run_name,
                op=use.op,
                dtype=use.dtype,
                shape=UNNAMED_SHAPE if use.shape is None else use.shape,
                occurrence=use.occurrence,
            )
            rows.add(row)
            row_timed.setdefault(row, set()).add(use.timed)
