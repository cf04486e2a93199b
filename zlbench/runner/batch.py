"""Batch screening: many ops, several GPUs, several ops per pytest process.

`run_batch(BatchConfig) -> BatchOutcome` is the Python API behind `zlbench batch`;
the gate and the baseline refresh call it without argv.

Flow: select (:mod:`.select`) -> shard (:mod:`.shard`) -> deal ops over GPUs by
stable hash -> one worker thread per GPU hands its ops to ``execute_plan`` (one
pytest process for many ops, a fresh one after a crash or timeout) -> each
finished attempt goes through the retry rules (:mod:`.retry`); ops needing
another attempt run in the next pass of the same worker, their previous run dir
moved to ``<batch>/.attempts/<repo>/<run_name>/<n>/``. ``ops_status.csv`` is
rewritten atomically each time an op is final, ``<run_dir>/.complete`` marks
PASS/SKIP only, and ``--resume`` keeps complete ops and reruns the rest.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from zlbench.errors import ZlbenchError
from zlbench.models import (
    FLAGGEMS_DIR_VARS,
    BatchInfo,
    OpStatus,
    PlanEntry,
    RunResult,
    RunStatus,
    read_ops_status,
)
from zlbench.runner import progress
from zlbench.runner.retry import UNSUPPORTED_DTYPE_TEXT, Attempt, NextAttempt, describe
from zlbench.runner.run import claim_dir as _claim_new_dir
from zlbench.runner.select import OpSelection, SelectedOp, select_ops
from zlbench.runner.shard import assign_gpus, shard
from zlbench.runner.status import (
    COMPLETE,
    OPS_STATUS,
    load_run,
    summary_records,
    write_summary,
)

ATTEMPTS_DIR = ".attempts"
# execute_plan's signature (zlbench.runner.worker); injectable for tests.
Executor = Callable[..., list[OpStatus]]


@dataclass
class BatchConfig:
    """What a batch is asked to do. Plain values only: the CLI resolves env vars.

    Selection (see :mod:`zlbench.runner.select`): exactly one of ``all_ops``,
    ``ops`` or ``ops_file``. A SPEC is ``op``, ``repo:op`` or ``op@test_file.py``.
    ``repos`` defaults to ``["main"]``. ``restrict_to``: ``"<repo>/<run_name>"``
    keys (e.g. the baseline's op set) the selection is intersected with.

    Measuring: ``replay_root`` None means record mode; otherwise replay, records at
    ``<replay_root>/<repo>/<run_name>/autotune_records/`` (a batch or baseline dir).
    ``gpus``: values for CUDA_VISIBLE_DEVICES, one worker each; ``""`` leaves the
    variable alone (the CLI defaults the list from CUDA_VISIBLE_DEVICES or all
    visible GPUs). ``shard``: ``(K, N)``, K 1-based. ``per_process``: max ops per
    pytest process (None = no limit, 1 = one op per process). ``out_dir`` is
    claimed as is when absent or empty, else ``-2``, ``-3``... (unless ``resume``,
    which continues the batch in ``out_dir``). ``env``: base environment of the
    workers (None = this process's). ``sweep_gpus``: record mode only (ignored when
    replaying, so a refresh's replay passes spread over ``gpus`` as usual): each op's
    autotune sweep is split over these GPUs, ops one after the other, each measured
    on the first of them (:mod:`zlbench.runner.sweep_run`); ``gpus`` is then unused.
    """

    out_dir: Path
    flaggems_dirs: dict[str, Path]  # repo label -> FlagGems checkout
    ops_dir: Path  # holds inventory_<repo>.csv and dismiss.txt
    all_ops: bool = False
    ops: list[str] = field(default_factory=list)
    ops_file: Path | None = None
    repos: list[str] = field(default_factory=list)
    restrict_to: set[str] | None = None
    dismiss_file: Path | None = None  # default <ops_dir>/dismiss.txt
    gpus: list[str] = field(default_factory=lambda: [""])
    shard: tuple[int, int] | None = None
    replay_root: Path | None = None
    resume: bool = False
    op_timeout_s: float | None = 900.0
    per_process: int | None = None
    timing: Literal["cudagraph", "kernel"] = "cudagraph"
    dtypes: list[str] = field(default_factory=list)  # [] = the op's defaults
    shape_file: Path | None = None
    ttgir: bool = True
    max_retries: int = 2  # extra attempts after rc 1 / CRASH (DESIGN §5.17)
    env: dict[str, str] | None = None
    progress: TextIO | None = None  # progress lines (None: silent)
    sink: Callable[[str], None] | None = None  # raw pytest output lines (None: dropped)
    extra_pytest_args: list[str] = field(default_factory=list)  # appended to each pytest argv
    argv: list[str] = field(default_factory=list)  # recorded in batch.json
    executor: Executor | None = None  # default: zlbench.runner.worker.execute_plan
    sweep_gpus: list[str] = field(default_factory=list)  # multi-GPU sweep (record mode)


@dataclass
class BatchOutcome:
    """What a batch did. ``exit_code``: 0 all PASS/SKIP, 1 any FAIL/TIMEOUT/CRASH/ERROR,
    2 nothing measured. ``statuses`` is also ``<out_dir>/ops_status.csv``."""

    out_dir: Path
    statuses: list[OpStatus]
    counts: dict[str, int]  # RunStatus value -> ops
    summary_rows: int  # rows written to summary.csv
    exit_code: int


def run_batch(config: BatchConfig) -> BatchOutcome:
    """Select, shard, run every op (retry, dtype fallback, rescue), write
    ops_status.csv as ops finish, summary.csv and batch.json at the end.

    Raises ZlbenchError for bad input (unknown/ambiguous op, missing inventory,
    empty selection, bad shard, missing FlagGems dir)."""
    selection = plan_selection(config)
    for repo in {op.repo for op in selection.ops}:
        d = config.flaggems_dirs.get(repo)
        if d is None or not Path(d).is_dir():
            var = FLAGGEMS_DIR_VARS.get(repo, FLAGGEMS_DIR_VARS["main"])
            hint = f"{d} is not a directory" if d else f"not given (--flaggems-dir or ${var})"
            raise ZlbenchError(f"no FlagGems checkout for repo {repo!r}: {hint}")
    if config.shape_file is not None and not Path(config.shape_file).is_file():
        raise ZlbenchError(f"shape file not found: {config.shape_file}")
    if config.replay_root is not None and not Path(config.replay_root).is_dir():
        raise ZlbenchError(f"replay root not found: {config.replay_root}")
    if not config.gpus:
        raise ZlbenchError("no GPU to run on (empty GPU list)")
    if config.sweep_gpus and config.replay_root is None:
        from zlbench.runner.sweep_run import sweep_batch_config

        config = sweep_batch_config(config)
    out_dir = claim_dir(Path(config.out_dir), config.resume)
    from zlbench.runner.batchrun import BatchRun  # the stateful part

    return BatchRun(config, selection, out_dir).run()


class EmptyShardError(ZlbenchError):
    """``--shard K/N`` left this shard no op at all (fewer runnable ops than shards)."""


def plan_selection(config: BatchConfig) -> OpSelection:
    """The selection of this batch, already cut down to its shard.

    Runnable ops are sharded on their own (stable hash, every op in exactly one
    shard), so every shard K <= min(N, runnable ops) measures at least one op.
    Dismissed and unconditionally skipped ops are dealt separately, over those
    shards only: each lands in exactly one of them (a SKIP row there), never in a
    shard with nothing to measure. A shard K greater than the number of runnable
    ops is empty: :class:`EmptyShardError`."""
    sel = select_ops(
        Path(config.ops_dir),
        all_ops=config.all_ops,
        specs=config.ops,
        ops_file=config.ops_file,
        repos=config.repos,
        restrict_to=config.restrict_to,
        dismiss_file=config.dismiss_file,
    )
    if config.shard is None:
        return sel
    k, n = config.shard
    mine = set(shard([o.key for o in sel.ops], k, n))
    if not mine:
        raise EmptyShardError(
            f"empty selection: shard {k}/{n} has no op to run "
            f"({len(sel.ops)} runnable op(s) for {n} shards)"
        )
    busy = min(n, len(sel.ops))  # shards 1..busy each have a runnable op
    left_out = [o.key for o, _ in sel.dismissed] + [o.key for o in sel.skipped]
    mine |= set(shard(left_out, k, busy))
    sel.ops = [o for o in sel.ops if o.key in mine]
    sel.dismissed = [(o, e) for o, e in sel.dismissed if o.key in mine]
    sel.skipped = [o for o in sel.skipped if o.key in mine]
    return sel


def claim_dir(path: Path, resume: bool) -> Path:
    """The batch dir: ``path`` itself when absent, empty or resumed; else ``path-2``...

    Claimed by :func:`zlbench.runner.run.claim_dir` (a bare mkdir), so two
    batches never share a dir (DESIGN.md §5.15)."""
    path = Path(path)
    if path.is_dir() and (resume or not any(path.iterdir())):
        return path
    return _claim_new_dir(path)


@dataclass
class OpTrack:
    """One op across its attempts."""

    sel: SelectedOp
    run_dir: Path
    gpu: str
    dtypes: tuple[str, ...]
    kind: str = "first"
    attempts: list[Attempt] = field(default_factory=list)
    seconds: float = 0.0
    next: NextAttempt | None = None

    def entry(self, config: BatchConfig) -> PlanEntry:
        replay = config.replay_root
        records = (
            replay / self.sel.repo / self.sel.run_name / "autotune_records" if replay else None
        )
        return PlanEntry(
            repo=self.sel.repo,
            op=self.sel.op,
            run_name=self.sel.run_name,
            run_dir=str(self.run_dir.resolve()),
            nodeids=list(self.sel.nodeids),
            mode="replay" if replay else "record",
            replay_records=str(Path(records).resolve()) if records else None,
            shape_file=str(Path(config.shape_file).resolve()) if config.shape_file else None,
            dtypes=list(self.dtypes),
        )


def archive_run_dir(out_dir: Path, run_dir: Path, repo: str, run_name: str, label: str) -> None:
    """Move a run dir aside to ``<batch>/.attempts/<repo>/<run_name>/<label>[-i]``."""
    if not run_dir.exists():
        return
    base = out_dir / ATTEMPTS_DIR / repo / run_name
    base.mkdir(parents=True, exist_ok=True)
    dest, i = base / label, 2
    while dest.exists():
        dest, i = base / f"{label}-{i}", i + 1
    shutil.move(str(run_dir), str(dest))


def said_unsupported(run_dir: Path, result: RunResult | None) -> bool:
    """The op's log or error says the asked dtype "can't be supported by this op"."""
    if result is not None and result.error and UNSUPPORTED_DTYPE_TEXT in result.error:
        return True
    log = run_dir / "run.log"
    try:
        return UNSUPPORTED_DTYPE_TEXT in log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def measured_dtypes(result: RunResult | None, asked: tuple[str, ...]) -> str:
    if result is not None and result.rows:
        return ",".join(dict.fromkeys(r.dtype for r in result.rows))
    return ",".join(asked)


def final_status(track: OpTrack, last: OpStatus, result: RunResult | None, out: Path) -> OpStatus:
    """The op's ops_status.csv row after its last attempt."""
    rows = len(result.rows) if result is not None else last.rows
    note = last.note if len(track.attempts) == 1 else describe(track.attempts)
    if len(track.attempts) > 1 and last.note:
        note = f"{note}; {last.note}"
    return OpStatus(
        repo=track.sel.repo,
        op=track.sel.op,
        run_name=track.sel.run_name,
        status=last.status,
        rc=last.rc,
        attempts=len(track.attempts),
        dtype_used=measured_dtypes(result, track.dtypes),
        rows=rows,
        seconds=round(track.seconds, 3),
        gpu=track.gpu,
        run_dir=os.path.relpath(track.run_dir, out),
        note=note,
    )


def exit_code(statuses: list[OpStatus], rows: int) -> int:
    if rows == 0:
        return 2
    bad = {RunStatus.FAIL, RunStatus.TIMEOUT, RunStatus.CRASH, RunStatus.ERROR}
    return 1 if any(s.status in bad for s in statuses) else 0


def load_previous(out_dir: Path) -> dict[str, OpStatus]:
    """ops_status.csv of a batch being resumed, by key (empty when there is none)."""
    path = out_dir / OPS_STATUS
    if not path.is_file():
        return {}
    return {f"{s.repo}/{s.run_name}": s for s in read_ops_status(path)}


def is_complete(run_dir: Path) -> bool:
    return (run_dir / COMPLETE).is_file()


def write_final_files(
    out_dir: Path, statuses: list[OpStatus], info: BatchInfo
) -> tuple[int, BatchInfo]:
    """summary.csv from the run dirs of ``statuses``; batch.json with counts."""
    records: list[dict] = []
    for st in sorted(statuses, key=lambda s: (s.repo, s.run_name)):
        if not st.run_dir:
            continue
        result = load_run(out_dir / st.run_dir)
        if result is None:
            continue
        records += summary_records(st.repo, st.run_name, result.rows)
        env = result.environment
        if st.repo not in info.environments and env.model_dump(exclude_none=True):
            info.environments[st.repo] = env
    n = write_summary(out_dir, records)
    info.rows = n
    info.counts = progress.count_statuses(statuses)
    info.finished = _now()
    return n, info


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def default_executor() -> Executor:
    from zlbench.runner.worker import execute_plan

    return execute_plan


def deal(selection: OpSelection, gpus: list[str]) -> dict[str, list[SelectedOp]]:
    by_key = {o.key: o for o in selection.ops}
    dealt = assign_gpus(by_key, gpus)
    return {gpu: [by_key[k] for k in keys] for gpu, keys in dealt.items()}


__all__ = [
    "BatchConfig",
    "BatchOutcome",
    "EmptyShardError",
    "OpTrack",
    "claim_dir",
    "plan_selection",
    "run_batch",
]
