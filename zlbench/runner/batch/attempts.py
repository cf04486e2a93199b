"""One op across its attempts (:class:`OpAttempts`) and the files a batch writes
from them: the archived attempt dirs, the op's final ops_status.csv row,
summary.csv and batch.json."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.models import (
    BatchInfo,
    MarkerKind,
    OpStatus,
    PlanEntry,
    RunResult,
    RunStatus,
    counts_of_kind,
    read_ops_status,
)
from zlbench.protocol.layout import (
    ATTEMPTS_DIR,
    RESULT_JSON,
    RUN_LOG,
    op_dir,
    op_key,
    records_dir,
)
from zlbench.runner.batch import progress
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.retry import UNSUPPORTED_DTYPE_TEXT, Attempt, NextAttempt, describe
from zlbench.runner.batch.status import (
    COMPLETE,
    OPS_STATUS,
    load_run,
    summary_records,
    write_summary,
)
from zlbench.runner.catalog.select import SelectedOp


@dataclass
class OpAttempts:
    """One op across its attempts."""

    sel: SelectedOp
    run_dir: Path
    gpu: str
    dtypes: tuple[str, ...]
    kind: str = "first"
    expected_rows: int | None = None  # the replayed baseline's rows (None: unknown)
    attempts: list[Attempt] = field(default_factory=list)
    seconds: float = 0.0
    next: NextAttempt | None = None

    def entry(self, config: BatchConfig) -> PlanEntry:
        replay = config.replay_root
        whole = self.sel.whole_run_name  # a row part replays its op's records
        records = records_dir(op_dir(replay, self.sel.repo, whole)) if replay else None
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
            part=list(self.sel.part) if self.sel.part else None,
            rows=[tuple(p) for p in self.sel.rows] if self.sel.rows else None,
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
    log = run_dir / RUN_LOG
    try:
        return UNSUPPORTED_DTYPE_TEXT in log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def measured_dtypes(result: RunResult | None, asked: tuple[str, ...]) -> str:
    if result is not None and result.rows:
        return ",".join(dict.fromkeys(r.dtype for r in result.rows))
    return ",".join(asked)


def baseline_rows(replay_root: Path | None, repo: str, run_name: str) -> list | None:
    """The rows the replayed baseline (or batch) holds for an op, as its result.json
    has them; None when unknown (no replay root, no readable list of rows)."""
    if replay_root is None:
        return None
    path = op_dir(replay_root, repo, run_name) / RESULT_JSON
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("rows")
    except (OSError, ValueError, AttributeError):
        return None
    return rows if isinstance(rows, list) else None


def row_dtypes(rows: list | None) -> tuple[str, ...]:
    """The dtypes of :func:`baseline_rows`, in row order; () when unknown."""
    try:
        return tuple(dict.fromkeys(str(r["dtype"]) for r in rows or ()))
    except (KeyError, TypeError):
        return ()


# The dtypes FlagGems' ``--dtypes`` accepts (benchmark/conftest.py, ed2508bcb5a0: its
# FLOAT_DTYPES, INT_DTYPES, BOOL_DTYPES and cfloat); a benchmark with rows of another
# (scaled_mm's float8_e4m3fn) picks its own dtypes, and pytest refuses such a --dtypes
CLI_DTYPES = frozenset({"float16", "float32", "bfloat16", "int16", "int32", "bool", "complex64"})


def nameable(dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """``dtypes`` when FlagGems' ``--dtypes`` can name every one of them, else () (the
    op's own dtypes: its rows decide): v7's scaled_mm, whose rows are float8_e4m3fn,
    ended ERROR on its first attempt and its retry (an H100, 2026-12-06)."""
    return dtypes if set(dtypes) <= CLI_DTYPES else ()


def first_dtypes(asked: tuple[str, ...], baseline: tuple[str, ...]) -> tuple[str, ...]:
    """The dtypes of an op's first attempt. In replay the baseline's rows fix them:
    an op whose baseline rows share no dtype with ``--dtypes`` (embedding rejects
    bfloat16; its baseline rows are its own float32/float16) starts with the
    baseline's, instead of failing once and falling back every gate (2-6 s per op
    on the H200). Otherwise (record mode, defaults asked, a dtype in common) the
    asked ones."""
    if not asked or not baseline or set(asked) & set(baseline):
        return asked
    return nameable(baseline)


def empty_success(status: RunStatus, rows: int, expected: int | None) -> str:
    """Why a PASS is not one: no row measured, or fewer rows than the baseline holds
    (the seed's ``partial_skip=N``); "" when it is one."""
    if status is not RunStatus.PASS:
        return ""
    if rows == 0:
        return "test passed but measured no row" + (
            f" (partial_skip={expected})" if expected else ""
        )
    if expected is not None and rows < expected:
        return f"partial_skip={expected - rows}: {rows} of the baseline's {expected} rows measured"
    return ""


def partial_skip(status: RunStatus, result: RunResult | None) -> str:
    """The seed's ``partial_skip=N`` note of a PASS some of whose N tests pytest skipped
    (an unsupported dtype or shape: the op measured less than it has); "" otherwise."""
    n = result.skipped_tests if result is not None else 0
    if status is not RunStatus.PASS or n <= 0:
        return ""
    return f"partial_skip={n}: {n} test(s) skipped"


def op_file(sel: SelectedOp) -> str:
    """The op's benchmark test file(s), e.g. ``test_reduction_perf.py``."""
    files = (n.split("::", 1)[0].rsplit("/", 1)[-1] for n in sel.nodeids)
    return ",".join(dict.fromkeys(files))


def final_status(
    track: OpAttempts,
    last: OpStatus,
    result: RunResult | None,
    out: Path,
    expected_rows: int | None = None,
) -> OpStatus:
    """The op's ops_status.csv row after its last attempt. A PASS without rows, or
    with fewer than the ``expected_rows`` of the baseline, is a FAIL."""
    rows = len(result.rows) if result is not None else last.rows
    note = last.note if len(track.attempts) == 1 else describe(track.attempts)
    if len(track.attempts) > 1 and last.note:
        note = f"{note}; {last.note}"
    status, rc = last.status, last.rc
    if empty := empty_success(status, rows, expected_rows):
        status, rc = RunStatus.FAIL, 1
        note = f"{note}; {empty}" if note else empty
    elif skips := partial_skip(status, result):
        note = f"{note}; {skips}" if note else skips
    counts = result.marker_counts if result is not None else {}
    return OpStatus(
        repo=track.sel.repo,
        op=track.sel.op,
        run_name=track.sel.run_name,
        status=status,
        rc=rc,
        attempts=len(track.attempts),
        dtype_used=measured_dtypes(result, track.dtypes),
        rows=rows,
        seconds=round(track.seconds, 3),
        gpu=track.gpu,
        run_dir=os.path.relpath(track.run_dir, out),
        note=note,
        op_file=op_file(track.sel),
        success_rows=sum(r.status == "SUCCESS" for r in result.rows) if result else 0,
        replay_fallbacks=sum(counts_of_kind(counts, MarkerKind.REPLAY_FALLBACK).values()),
        no_cudagraph=sum(counts_of_kind(counts, MarkerKind.NO_CUDAGRAPH).values()),
        signature=last.signature if status is not RunStatus.PASS else "",
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
    return {op_key(s.repo, s.run_name): s for s in read_ops_status(path)}


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
