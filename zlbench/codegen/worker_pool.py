"""The codegen screen's rebuild on the CPU compile pool (:mod:`zlbench.codegen.pool`).

Each chunk of kernels is one worker: ``<python> -m zlbench.plugins.compiler.rebuild
IN.json <chunk>/out/codegen``, which reads a CodegenIndex of requests and writes
``index.json`` and ``blobs/`` there (``models.codegen``); with ``opts.cache_out`` it also
puts the kernels it compiled into that triton cache dir (a third argument); with
``opts.exec_generated`` (a verified baseline) it may execute generated kernels' recorded
source. A kernel's result is its record in the chunk's index. The pool retries the
kernels of a chunk whose worker died one per process, so one kernel that crashes the
compiler under test is told apart from the rest; a kernel whose own process still dies
is a failed compile. When every worker died, the pool's probe (one worker with no
kernel) tells a worker that cannot run here (a broken interpreter, a triton that does
not import) from kernels that kill it: a ZlbenchError, the screen could not do its job.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from zlbench.codegen import pool
from zlbench.models.base import dump_json_model
from zlbench.models.codegen import (
    CODEGEN_DIR,
    CODEGEN_INDEX,
    CodegenIndex,
    CompileRecord,
    load_codegen_index,
)
from zlbench.protocol.compile_lines import REBUILD_END

WORKER_MODULE = "zlbench.plugins.compiler.rebuild"
NAME = "rebuild"  # the worker, in its errors
LOG_TAIL = 3  # stderr lines kept in a crashed worker's error

OnChunk = Callable[[int, list[str], dict[str, CompileRecord]], None]


def rebuild_all(base, chunks: list[list[str]], opts, work: Path, on_chunk: OnChunk):
    """(id -> rebuilt record, id -> codegen dir of its blobs) for every id rebuilt.

    ``on_chunk(n_chunks, ids, rebuilt)`` is called as each chunk finishes."""
    spec = pool.PoolSpec(
        python=opts.python,
        module=opts.worker_module,
        end=REBUILD_END,
        env={**os.environ, **opts.env},
        pythonpath=opts.pythonpath,
        jobs=opts.jobs,
    )

    def prepare(job: pool.Job) -> list[str]:
        return _prepare(base, opts, job)

    def done(n: int, ended: pool.Ended, got) -> None:
        if on_chunk is not None:
            on_chunk(n, ended.ids, {i: rec for i, (rec, _) in got.items()})

    out = pool.run_pool(spec, chunks, work, prepare, _collect, done, retry_lost=True, probe=NAME)
    rebuilt = {i: rec for i, (rec, _) in out.results.items()}
    dirs = {i: d for i, (_, d) in out.results.items()}
    for i, ended in out.lost.items():
        rebuilt[i] = _crashed(base.records[i], pool.why(ended, NAME, LOG_TAIL))
    return rebuilt, dirs


def _prepare(base, opts, job: pool.Job) -> list[str]:
    """Write the job's requests to ``in.json`` (each with the baseline's result: the
    worker disassembles SASS only where the earlier stages' digests are the same); the
    worker's arguments."""
    requests = [
        CompileRecord(
            id=i,
            request=base.records[i].request,
            used_by=base.records[i].used_by,
            result=base.records[i].result,
        )
        for i in job.ids
    ]
    dump_json_model(job.dir / "in.json", CodegenIndex(records=requests))
    args = [str(job.dir / "in.json"), str(job.dir / "out" / CODEGEN_DIR)]
    if opts.cache_out is not None:
        args.append(str(opts.cache_out))
    if opts.exec_generated:  # else the worker never executes recorded generated source
        args.append("--exec-generated")
    return args


def _collect(ended: pool.Ended) -> dict[str, tuple[CompileRecord, Path]]:
    """The chunk's rebuilt records (from its index, even when the worker died after
    writing it), each with the codegen dir of its blobs."""
    out = ended.dir / "out"
    if not (out / CODEGEN_DIR / CODEGEN_INDEX).is_file():
        return {}
    index = load_codegen_index(out)
    return {r.id: (r, out / CODEGEN_DIR) for r in (index.records if index else [])}


def _crashed(rec: CompileRecord, why: str) -> CompileRecord:
    return CompileRecord(id=rec.id, request=rec.request, error=f"compile crashed: {why}")


def compiler_version(rebuilt: dict[str, CompileRecord]) -> str | None:
    """``<distribution> <version>`` of the compiler that rebuilt the kernels."""
    for rec in rebuilt.values():
        if rec.result is not None:
            c = rec.result.compiler
            return f"{c.distribution} {c.version}" + (f" ({c.commit})" if c.commit else "")
    return None
