"""Models of a batch dir: ``ops_status.csv`` (and its one reader), the summary
columns and ``batch.json``.

Written by the runner and ``zlbench merge``, read by the gate; built on
:mod:`zlbench.models.run`.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from zlbench.errors import ZlbenchError
from zlbench.models.base import OnDisk, _Model, read_text
from zlbench.models.options import Measuring, Scheduling, Selection
from zlbench.models.paths import resolve_inside
from zlbench.models.run import Environment, RunStatus


class OpStatus(_Model):
    """One row of ``ops_status.csv``."""

    repo: str
    op: str
    run_name: str
    status: RunStatus
    rc: int | None = None
    attempts: int = 0
    dtype_used: str = ""
    rows: int = 0
    seconds: float = 0.0
    gpu: str = ""
    run_dir: str = ""  # relative to the batch dir
    note: str = ""
    # The seed's columns users read (older files lack them: their defaults apply).
    op_file: str = ""  # the op's benchmark test file(s), e.g. test_reduction_perf.py
    success_rows: int = 0  # rows with status SUCCESS
    replay_fallbacks: int = 0  # AUTOTUNE_REPLAY_FALLBACK markers
    no_cudagraph: int = 0  # BENCHMARK_DIRECT_NO_CUDAGRAPH markers
    # Error signature of a failed op (zlbench.runner.execute.failsig), e.g.
    # "SystemError in triton/backends/nvidia/driver.py:328"; "" when it did not fail.
    signature: str = ""


OP_STATUS_FIELDS = list(OpStatus.model_fields)

SUMMARY_FIELDS = [
    "repo",
    "run_name",
    "op",
    "dtype",
    "shape",
    "occurrence",
    "status",
    "latency_base_ms",
    "latency_ms",
    "speedup",
    "no_cudagraph",
    "tflops",
    "gbps",
    "error",
]

# Columns an ops_status.csv must have; the others may be absent (their defaults apply).
_OP_STATUS_REQUIRED = {name for name, f in OpStatus.model_fields.items() if f.is_required()}


def read_ops_status(path: str | os.PathLike) -> list[OpStatus]:
    """Read and validate ``ops_status.csv``.

    Empty cells take the field's default and unknown columns are ignored. A missing
    or unreadable file, a header without the required columns, a bad row, an op
    listed twice or a ``run_dir`` that leads out of the file's dir (absolute, ``..``,
    a symlink out: :func:`~zlbench.models.paths.resolve_inside`) is one ZlbenchError
    line: ``<file>:<line>: <field>: <problem>``."""
    path = Path(path)
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames
        if header is None or not _OP_STATUS_REQUIRED <= set(header):
            raise ZlbenchError(f"{path}: not an ops_status.csv (columns {header})")
        out: list[OpStatus] = []
        lines: dict[tuple[str, str], int] = {}
        for rec in reader:
            st = _op_status(path, reader.line_num, rec)
            _check_once(path, reader.line_num, st, lines)
            if st.run_dir:
                resolve_inside(path.parent, st.run_dir, f"{path}:{reader.line_num}: run_dir")
            out.append(st)
        return out
    except csv.Error as e:
        raise ZlbenchError(f"{path}:{reader.line_num}: not valid CSV: {e}") from None


def _check_once(path: Path, line: int, st: OpStatus, lines: dict[tuple[str, str], int]) -> None:
    """One row per op: a second one, agreeing or not, is an error (never last-wins)."""
    key = (st.repo, st.run_name)
    if key in lines:
        raise ZlbenchError(
            f"{path}:{line}: op {st.repo}/{st.run_name} is listed twice (also on line "
            f"{lines[key]}); which record to judge is not known"
        )
    lines[key] = line


def _op_status(path: Path, line: int, rec: dict[str | None, Any]) -> OpStatus:
    data = {k: v for k, v in rec.items() if k in OpStatus.model_fields and v not in ("", None)}
    try:
        return OpStatus.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "(row)"
        raise ZlbenchError(f"{path}:{line}: {field}: {err.get('msg')}") from None


class DismissedOp(_Model):
    """An op left out of a batch by the dismiss list (``batch.json``)."""

    key: str  # <repo>/<run_name>
    date: str
    reason: str


class SystemicFailure(_Model):
    """Several ops of a batch failed the same way (``batch.json``): a broken compiler
    or environment rather than broken ops. The reports lead with ``line``."""

    signature: str  # zlbench.runner.execute.failsig, e.g. "signal 11 (SIGSEGV)"
    ops: list[str] = Field(default_factory=list)  # keys <repo>/<run_name>
    not_run: int = 0  # of ``ops``: not run at all once the failure was known
    line: str = ""  # "13 ops fail the same way: SystemError in triton/...:328"


class BatchInfo(OnDisk):
    """``<batch>/batch.json``: what a batch was asked to do, and on what it ran.

    Written at the start of a batch and rewritten at its end (counts, environment);
    ``zlbench merge`` uses it to refuse mixing shards measured differently."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
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
    gpu_share: int = 1  # benchmark processes per GPU, timing in turns (--gpu-share)
    op_timeout_s: float | None = None
    max_retries: int = 2
    # A record batch that kept FlagGems' persistent tuning DB (--reuse-tuning-db): its
    # configs are what that DB held, not tuned fresh by this batch's compiler.
    reuse_tuning_db: bool = False
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
    systemic: list[SystemicFailure] = Field(default_factory=list)  # worst first
    budget_s: float | None = None  # time budget of the batch (gate); None: none
    not_measured: list[str] = Field(default_factory=list)  # keys never measured (budget, systemic)

    @classmethod
    def from_options(
        cls,
        selection: Selection,
        measuring: Measuring,
        scheduling: Scheduling,
        *,
        replay_root: str | None,
        restricted: bool,
        op_timeout_s: float | None,
        **rest: Any,
    ) -> BatchInfo:
        """batch.json of the three option models (:mod:`zlbench.models.options`): the one
        place their fields become this file's flat ones, whose names and layout stay
        the file's own (format version 1). ``replay_root``: None for a record batch;
        ``restricted``: the selection was intersected with a given op set (the gate's
        baseline); ``op_timeout_s``: the scheduling's timeout resolved by mode
        (``BatchConfig.op_timeout``); ``rest``: the other fields. What batch.json does
        not record (``ops_dir``, ``recheck_left_out``, the budgets, which every result's
        ``Environment.timing`` holds, ``ttgir``, ``sweep_gpus``...) is left out."""
        return cls(
            selection={
                "all": selection.all_ops,
                "ops": list(selection.ops),
                "ops_file": str(selection.ops_file) if selection.ops_file else None,
                "repos": list(selection.repos),
                "restricted": restricted,
            },
            mode="replay" if replay_root else "record",
            replay_root=replay_root,
            timing=measuring.mode,
            dtypes=list(selection.dtypes),
            shape_file=str(selection.shape_file) if selection.shape_file else None,
            gpus=list(scheduling.gpus),
            per_process=scheduling.per_process,
            gpu_share=scheduling.gpu_share,
            op_timeout_s=op_timeout_s,
            max_retries=scheduling.max_retries,
            # a replay tunes nothing: what a tuning DB holds is never used
            reuse_tuning_db=measuring.reuse_tuning_db and not replay_root,
            **rest,
        )
