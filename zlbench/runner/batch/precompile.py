"""Precompile a replay screen's kernels on the CPU cores before the GPU times anything
(docs/screening.md, "Precompile").

The replay root's codegen records (``<root>/<repo>/<run_name>/codegen/index.json``,
docs/codegen.md) list every kernel each op compiled: its compile request (function,
signature, constexprs, specialisation, pinned config options, target). They are
deduplicated by request id, dealt over ``jobs`` processes of
:mod:`zlbench.plugins.precompile` longest recorded compile time first
(:func:`zlbench.runner.batch.balance.lpt_bins`), which compile them into one triton
cache dir without a GPU; the processes are the CPU compile pool's
(:mod:`zlbench.codegen.pool`, shared with the codegen screen's rebuild). The batch's
benchmark processes then use that dir as their ``TRITON_CACHE_DIR`` and find every
recorded kernel there: the GPU loads kernels instead of waiting for them to compile.
A kernel that fails to precompile (or one the records lack: a new shape, a changed op)
is compiled by the benchmark process as without precompile, so precompile changes only
when compiling happens, never what is measured.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.codegen import pool
from zlbench.models import CodegenIndex, CompileRecord, load_codegen_index
from zlbench.protocol.compile_lines import PRECOMPILE_END
from zlbench.runner.batch.balance import lpt_bins

WORKER_MODULE = "zlbench.plugins.precompile"


@dataclass
class PrecompileOutcome:
    kernels: int = 0  # distinct compile requests sent to the workers
    failed: dict[str, str] = field(default_factory=dict)  # record id -> error
    ops_without_records: list[str] = field(default_factory=list)  # keys
    seconds: float = 0.0
    processes: int = 0
    worker_errors: list[str] = field(default_factory=list)  # a worker that did not finish

    def line(self) -> str:
        """``precompile: 212 kernels in 14.2 s on 8 process(es), 0 failed, ...``."""
        return (
            f"precompile: {self.kernels} kernels in {self.seconds:.1f} s on "
            f"{self.processes} process(es), {len(self.failed)} failed, "
            f"{len(self.ops_without_records)} op(s) without records"
        )


def collect_records(root: Path, keys: Iterable[str]) -> tuple[list[CompileRecord], list[str]]:
    """The distinct compile records of ``keys`` under ``root``, and the keys that have none."""
    seen: dict[str, CompileRecord] = {}
    missing = []
    for key in sorted(set(keys)):
        index = load_codegen_index(Path(root) / key)
        if index is None or not index.records:
            missing.append(key)
            continue
        for rec in index.records:
            seen.setdefault(rec.id, rec)
    return [seen[k] for k in sorted(seen)], missing


def compile_seconds(rec: CompileRecord) -> float:
    """Recorded compile time of one kernel (1 s when unknown or served from a cache)."""
    if rec.result is None or rec.result.cache_hit or not rec.result.times:
        return 1.0
    return max(sum(rec.result.times.values()), 0.001)


def deal_records(records: list[CompileRecord], jobs: int) -> list[list[CompileRecord]]:
    """At most ``jobs`` non-empty lists of about equal recorded compile time."""
    by_id = {r.id: r for r in records}
    bins = lpt_bins({r.id: compile_seconds(r) for r in records}, max(1, jobs), "precompile:")
    return [[by_id[i] for i in b] for b in bins if b]


def precompile(
    records: list[CompileRecord],
    cache_dir: Path,
    jobs: int,
    env: Mapping[str, str],
    python: str | None = None,
    timeout_s: float = 1800.0,
    stop: threading.Event | None = None,
    exec_generated: bool = False,
) -> PrecompileOutcome:
    """Compile ``records`` into ``cache_dir`` with ``jobs`` worker processes in parallel
    (the CPU compile pool, :mod:`zlbench.codegen.pool`: no retries, a worker's failed
    kernels are left to the benchmark processes). ``stop`` set (the batch ended or
    failed first): the workers still running are killed."""
    out = PrecompileOutcome(kernels=len(records))
    chunks = deal_records(records, jobs)
    out.processes = len(chunks)
    by_id = {r.id: r for r in records}
    t0 = time.monotonic()
    spec = pool.PoolSpec(
        python=python or sys.executable,
        module=WORKER_MODULE,
        end=PRECOMPILE_END,
        env=env,
        jobs=max(1, len(chunks)),
        timeout_s=timeout_s,
        stop=stop,
    )

    def prepare(job: pool.Job) -> list[str]:
        path = job.dir / "in.json"
        index = CodegenIndex(records=[by_id[i] for i in job.ids])
        path.write_text(index.model_dump_json(), encoding="utf-8")
        return ["--exec-generated"] * exec_generated + [str(path), str(cache_dir)]

    with tempfile.TemporaryDirectory(prefix="zl-precompile-") as tmp:
        ids = [[r.id for r in chunk] for chunk in chunks]
        done = pool.run_pool(spec, ids, Path(tmp), prepare)
    out.failed = {i: error for i, error in done.results.items() if error is not None}
    out.worker_errors = [_worker_error(ended, timeout_s) for ended in done.died]
    out.seconds = time.monotonic() - t0
    return out


def _worker_error(ended: pool.Ended, timeout_s: float) -> str:
    """One progress line for a worker that did not finish."""
    if ended.start_error is not None:
        return f"precompile worker failed: {ended.start_error}"
    if ended.killed == pool.STOPPED:
        return "precompile worker stopped: the batch ended first"
    if ended.killed == pool.TIMED_OUT:
        return f"precompile worker timed out after {timeout_s:.0f} s"
    last = (ended.tail(1) or [f"exit code {ended.rc}"])[-1]
    return f"precompile worker failed: {last}"
