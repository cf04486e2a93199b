"""Run the rebuild worker over chunks of compile requests, ``jobs`` at a time.

Each chunk is one subprocess (its own process group, killed on interrupt):
``<python> -m zlbench.plugins.compiler.rebuild IN.json <chunk>/out/codegen``, which
reads a CodegenIndex of requests and writes ``index.json`` and ``blobs/`` there
(``models.codegen``); with ``opts.cache_out`` it also puts the kernels it compiled
into that triton cache dir (a third argument); with ``opts.exec_generated`` (a
verified baseline) it may execute generated kernels' recorded source. A chunk whose
worker dies leaves its kernels without a rebuild: they are retried one per process,
so one kernel that crashes the compiler under test is told apart from the rest; a
kernel whose own process still dies is a failed compile. When every worker died, one
more runs with no kernel at all: if that dies too (a broken interpreter, a triton that
does not import), it is a ZlbenchError, the screen could not do its job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models.base import dump_json_model
from zlbench.models.codegen import (
    CODEGEN_DIR,
    CODEGEN_INDEX,
    CodegenIndex,
    CompileRecord,
    load_codegen_index,
)

WORKER_MODULE = "zlbench.plugins.compiler.rebuild"
LOG_TAIL = 3  # stderr lines kept in a crashed worker's error

OnChunk = Callable[[int, list[str], dict[str, CompileRecord]], None]


@dataclass
class _Job:
    ids: list[str]
    dir: Path
    proc: subprocess.Popen | None = None


def rebuild_all(base, chunks: list[list[str]], opts, work: Path, on_chunk: OnChunk):
    """(id -> rebuilt record, id -> codegen dir of its blobs) for every id rebuilt.

    ``on_chunk(n_chunks, ids, rebuilt)`` is called as each chunk finishes."""
    jobs = [_Job(ids, work / f"chunk-{i}") for i, ids in enumerate(chunks)]
    rebuilt, dirs, crashed = _run_jobs(base, jobs, opts, on_chunk)
    if crashed and len(crashed) == len(jobs) and not rebuilt:
        _probe(base, opts, work / "probe")
    lost = [i for job, _ in crashed for i in job.ids if i not in rebuilt]
    if lost:
        solo = [_Job([i], work / f"solo-{n}") for n, i in enumerate(lost)]
        more, more_dirs, died = _run_jobs(base, solo, opts, None)
        rebuilt |= more
        dirs |= more_dirs
        for job, why in died:
            rebuilt[job.ids[0]] = _crashed(base.records[job.ids[0]], why)
    return rebuilt, dirs


def _probe(base, opts, where: Path) -> None:
    """Every worker died: run one with no kernel. If that dies too, the worker cannot
    start here (interpreter, triton import): a ZlbenchError, not failed kernels."""
    job = _Job([], where)
    _start(base, job, opts)
    job.proc.wait()
    _, why = _finish(job)
    if why is not None:
        raise ZlbenchError(f"the rebuild worker cannot run: {why}")


def _crashed(rec: CompileRecord, why: str) -> CompileRecord:
    return CompileRecord(id=rec.id, request=rec.request, error=f"compile crashed: {why}")


def _run_jobs(base, jobs: list[_Job], opts, on_chunk: OnChunk | None):
    rebuilt: dict[str, CompileRecord] = {}
    dirs: dict[str, Path] = {}
    crashed: list[tuple[_Job, str]] = []
    queue, running = list(jobs), []
    try:
        while queue or running:
            while queue and len(running) < max(1, opts.jobs):
                job = queue.pop(0)
                _start(base, job, opts)
                running.append(job)
            for job in [j for j in running if j.proc.poll() is not None]:
                running.remove(job)
                got, why = _finish(job)
                for rec in got:
                    rebuilt[rec.id], dirs[rec.id] = rec, job.dir / "out" / CODEGEN_DIR
                if why is not None:
                    crashed.append((job, why))
                if on_chunk is not None:
                    on_chunk(len(jobs), job.ids, {r.id: r for r in got})
            time.sleep(0.02)
    finally:
        for job in running:
            _kill(job.proc)
    return rebuilt, dirs, crashed


def _start(base, job: _Job, opts) -> None:
    job.dir.mkdir(parents=True)
    requests = [
        CompileRecord(id=i, request=base.records[i].request, used_by=base.records[i].used_by)
        for i in job.ids
    ]
    dump_json_model(job.dir / "in.json", CodegenIndex(records=requests))
    out = job.dir / "out" / CODEGEN_DIR
    cmd = [opts.python, "-m", opts.worker_module, str(job.dir / "in.json"), str(out)]
    if opts.cache_out is not None:
        cmd.append(str(opts.cache_out))
    if opts.exec_generated:  # else the worker never executes recorded generated source
        cmd.append("--exec-generated")
    with open(job.dir / "worker.log", "wb") as log:
        job.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_env(opts, job.dir),
            start_new_session=True,
        )


def _env(opts, where: Path) -> dict[str, str]:
    """The worker's environment: ours, ``opts.env``, ``opts.pythonpath`` first on
    PYTHONPATH, and FlagGems' code cache in the chunk's dir (never the user's)."""
    env = {**os.environ, **opts.env, "PYTHONHASHSEED": "0"}
    env["FLAGGEMS_CACHE_DIR"] = str(where / "flaggems_cache")
    paths = [*opts.pythonpath, env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _finish(job: _Job) -> tuple[list[CompileRecord], str | None]:
    """The chunk's rebuilt records (only those of its ids) and why it failed, if it did."""
    rc = job.proc.returncode
    index = None
    if (job.dir / "out" / CODEGEN_DIR / CODEGEN_INDEX).is_file():
        index = load_codegen_index(job.dir / "out")
    got = [r for r in (index.records if index else []) if r.id in set(job.ids)]
    if rc == 0 and index is not None:
        return got, None
    return got, f"rebuild worker exited with {_rc_text(rc)}: {_log_tail(job.dir / 'worker.log')}"


def _rc_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in lines[-LOG_TAIL:]) or "(no output)"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def compiler_version(rebuilt: dict[str, CompileRecord]) -> str | None:
    """``<distribution> <version>`` of the compiler that rebuilt the kernels."""
    for rec in rebuilt.values():
        if rec.result is not None:
            c = rec.result.compiler
            return f"{c.distribution} {c.version}" + (f" ({c.commit})" if c.commit else "")
    return None
