"""One CPU compile pool: recorded compile requests compiled by worker processes,
``jobs`` at a time.

Both CPU compiles of recorded kernels run through it: the batch's precompile
(:mod:`zlbench.runner.batch.precompile`; workers ``python -m zlbench.plugins.precompile``
fill the batch's shared triton cache) and the codegen screen's rebuild
(:mod:`zlbench.codegen.worker_pool`; workers ``python -m zlbench.plugins.compiler.rebuild``
write each kernel's stages for the diff). The two keep their own worker entry points:
their inputs are the same (a ``CodegenIndex`` of the job's records) but their outputs
are not (kernels in a triton cache dir; an ``index.json`` with blobs), and the screen
must never depend on a cache. They share this pool and one line protocol
(:mod:`zlbench.protocol.compile_lines`). The pool owns:

* the processes: a job (item ids, a dir) is one ``<python> -m <module> ARGS`` (ARGS from
  the client's ``prepare``, which writes the job's input into its dir), in its own
  process group (``start_new_session``); stdout (the protocol's lines) goes to
  ``<dir>/stdout``, stderr to ``<dir>/worker.log``;
* their environment (:func:`worker_env`): ``env``, ``PYTHONHASHSEED=0``, ``pythonpath``
  first on ``PYTHONPATH``, FlagGems' code cache in the job's dir (never the user's,
  never shared by two workers);
* each item's result: the item lines the worker printed, or what the client's
  ``collect`` reads from the worker's files (the rebuild's index);
* retries (``retry_lost``): the items of a worker that died without a result run again
  one per process, so one kernel that kills the compiler under test is told apart from
  the rest; and ``probe``: when every worker died with nothing done, one more runs with
  no item; if that dies too the worker cannot run here (interpreter, triton import), a
  :class:`~zlbench.errors.ZlbenchError`, not failed kernels;
* progress: ``on_done`` after each first-round job (retries are silent: their items
  were counted with their job);
* time: ``timeout_s`` per worker from its start; ``stop`` (an Event, e.g. the batch
  ended first) ends every worker; so does an interrupt or any error: SIGTERM to the
  worker's group, :data:`GRACE_S`, then SIGKILL.

Not through this pool: the fast record pass (:mod:`zlbench.plugins.aot`) compiles an
autotune sweep's configs on threads inside the benchmark process, on purpose: those
requests exist only there, at the moment of the sweep, and a worker process would
import FlagGems again (~14 s on the H200 host) (docs/autotune.md, "Fast record pass").

Never imports triton, torch or the runner: the workers do the compiling, and the
runner's precompile imports this module (the codegen layer may not import the runner).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.protocol.compile_lines import Report, read_lines

GRACE_S = 2.0  # SIGTERM to SIGKILL
POLL_S = 0.02
STDOUT = "stdout"
LOG = "worker.log"
TIMED_OUT = "timeout"
STOPPED = "stopped"


@dataclass
class PoolSpec:
    """How to run the workers: ``<python> -m <module>``, the environment they start from
    (``env``: complete, e.g. ``os.environ``), ``jobs`` at a time."""

    python: str
    module: str
    end: str  # the workers' end line (protocol.compile_lines)
    env: Mapping[str, str] = field(default_factory=dict)
    pythonpath: Sequence[str] = ()
    jobs: int = 1
    timeout_s: float | None = None
    stop: threading.Event | None = None


@dataclass
class Job:
    ids: list[str]
    dir: Path
    proc: subprocess.Popen | None = None
    deadline: float | None = None


@dataclass
class Ended:
    """How one worker ended: ``rc`` None when it never started (``start_error``);
    ``killed`` ``timeout`` or ``stopped`` when the pool ended it."""

    ids: list[str]
    dir: Path
    rc: int | None = None
    start_error: str | None = None
    killed: str | None = None
    report: Report = field(default_factory=Report)

    @property
    def finished(self) -> bool:
        """It ran to its end line and exited 0."""
        ok = self.start_error is None and self.killed is None
        return ok and self.rc == 0 and self.report.end is not None

    def tail(self, n: int) -> list[str] | None:
        """The last ``n`` lines of its stderr (stripped as a whole); None: no log."""
        try:
            text = (self.dir / LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return text.strip().splitlines()[-n:]


Collect = Callable[[Ended], Mapping[str, Any]]
OnDone = Callable[[int, Ended, Mapping[str, Any]], None]


@dataclass
class PoolOutcome:
    results: dict[str, Any]  # item id -> the client's result
    died: list[Ended]  # the first round's workers that did not finish
    lost: dict[str, Ended]  # item id without a result -> the (last) worker it died in


def item_results(ended: Ended) -> dict[str, str | None]:
    """The default ``collect``: each item's error from its line (None: done)."""
    return dict(ended.report.items)


def run_pool(
    spec: PoolSpec,
    chunks: Sequence[Sequence[str]],
    work: Path,
    prepare: Callable[[Job], list[str]],
    collect: Collect = item_results,
    on_done: OnDone | None = None,
    retry_lost: bool = False,
    probe: str | None = None,
) -> PoolOutcome:
    """Run one worker per chunk of item ids (``work/chunk-<i>``), then the retries
    (``work/solo-<n>``) and the probe (``work/probe``; ``probe`` names the worker in
    its error) as asked (module docstring)."""
    jobs = [Job(list(ids), work / f"chunk-{i}") for i, ids in enumerate(chunks)]
    results, ended = run_jobs(spec, jobs, prepare, collect, on_done)
    died = [e for e in ended if not e.finished]
    if probe is not None and jobs and len(died) == len(jobs) and not results:
        _probe(spec, work / "probe", prepare, probe)
    lost = {i: e for e in died for i in e.ids if i not in results}
    if retry_lost and lost:
        solo = [Job([i], work / f"solo-{n}") for n, i in enumerate(lost)]
        more, again = run_jobs(spec, solo, prepare, collect, None)
        results |= more
        lost = {e.ids[0]: e for e in again if e.ids[0] not in results}
    return PoolOutcome(results, died, lost)


def _probe(spec: PoolSpec, where: Path, prepare, name: str) -> None:
    (ended,) = run_jobs(spec, [Job([], where)], prepare, item_results, None)[1]
    if not ended.finished:
        raise ZlbenchError(f"the {name} worker cannot run: {why(ended, name)}")


def why(ended: Ended, name: str, tail: int = 3) -> str:
    """``<name> worker exited with signal SIGSEGV: <its last stderr lines>`` (or why it
    did not start, or was ended)."""
    if ended.start_error is not None:
        return f"{name} worker failed to start: {ended.start_error}"
    if ended.killed is not None:
        return f"{name} worker {ended.killed}"
    lines = ended.tail(tail)
    text = "(no log)" if lines is None else " | ".join(s.strip() for s in lines) or "(no output)"
    return f"{name} worker exited with {rc_text(ended.rc)}: {text}"


def rc_text(rc: int | None) -> str:
    if rc is None:
        return "no exit code"
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


def run_jobs(
    spec: PoolSpec,
    jobs: list[Job],
    prepare: Callable[[Job], list[str]],
    collect: Collect,
    on_done: OnDone | None,
) -> tuple[dict[str, Any], list[Ended]]:
    """Every job, ``spec.jobs`` at a time: (item id -> result, how each ended)."""
    results: dict[str, Any] = {}
    ended: list[Ended] = []
    queue, running = list(jobs), []

    def done(job: Job, end: Ended) -> None:
        end.report = _report(job, spec.end)
        got = {i: r for i, r in collect(end).items() if i in set(job.ids)}
        results.update(got)
        ended.append(end)
        if on_done is not None:
            on_done(len(jobs), end, got)

    try:
        while queue or running:
            if spec.stop is not None and spec.stop.is_set():
                for job in running + queue:
                    # a worker that ended on its own before the stop says how it ended
                    exited = job.proc is not None and job.proc.poll() is not None
                    if not exited:
                        _end(job)
                    done(job, Ended(job.ids, job.dir, _rc(job), killed=None if exited else STOPPED))
                running, queue = [], []
                break
            while queue and len(running) < max(1, spec.jobs):
                job = queue.pop(0)
                error = _start(spec, job, prepare)
                if error is None:
                    running.append(job)
                else:
                    done(job, Ended(job.ids, job.dir, start_error=error))
            now = time.monotonic()
            for job in list(running):
                if job.proc.poll() is not None:
                    running.remove(job)
                    done(job, Ended(job.ids, job.dir, job.proc.returncode))
                elif job.deadline is not None and now > job.deadline:
                    running.remove(job)
                    _end(job)
                    done(job, Ended(job.ids, job.dir, _rc(job), killed=TIMED_OUT))
            time.sleep(POLL_S)
    finally:  # interrupted or failed: no worker outlives the pool
        for job in running:
            _end(job)
    return results, ended


def worker_env(spec: PoolSpec, where: Path) -> dict[str, str]:
    """A worker's environment: ``spec.env``, ``PYTHONHASHSEED=0``, ``spec.pythonpath``
    first on ``PYTHONPATH``, FlagGems' code cache in the job's dir ``where``."""
    env = {**spec.env, "PYTHONHASHSEED": "0"}
    env["FLAGGEMS_CACHE_DIR"] = str(where / "flaggems_cache")
    paths = [*spec.pythonpath, env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _start(spec: PoolSpec, job: Job, prepare) -> str | None:
    """Start ``job``'s worker; the error when it could not start."""
    job.dir.mkdir(parents=True, exist_ok=True)
    args = prepare(job)
    try:
        with open(job.dir / STDOUT, "wb") as out, open(job.dir / LOG, "wb") as log:
            job.proc = subprocess.Popen(
                [spec.python, "-m", spec.module, *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=log,
                env=worker_env(spec, job.dir),
                start_new_session=True,
            )
    except OSError as e:
        return str(e)
    if spec.timeout_s is not None:
        job.deadline = time.monotonic() + spec.timeout_s
    return None


def _report(job: Job, end: str) -> Report:
    try:
        text = (job.dir / STDOUT).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return Report()
    return read_lines(text.splitlines(), end)


def _rc(job: Job) -> int | None:
    return job.proc.returncode if job.proc is not None else None


def _end(job: Job) -> None:
    """SIGTERM to the worker's group, :data:`GRACE_S`, then SIGKILL; reaped."""
    proc = job.proc
    if proc is None or proc.poll() is not None:
        return
    _signal(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        _signal(proc.pid, signal.SIGKILL)
        proc.wait()


def _signal(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
