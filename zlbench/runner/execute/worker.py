"""Execute a WorkerPlan: one or several ops per pytest process, each op isolated.

Why: starting Python + torch + FlagGems costs ~14 s per process on an H200
host (docs/design.md §6), more than a replayed op takes to measure, so a GPU's ops
run in one pytest process; yet one crashing or hanging op must cost only
itself. The plugins print ``ZLBENCH_OP_BEGIN run_name=<n>`` and
``ZLBENCH_OP_END run_name=<n> status=<S>`` around each plan entry
(:mod:`zlbench.protocol.boundary`); this module
splits the output at those lines into ``<run_dir>/run.log`` (ANSI stripped,
written as it comes so a crash keeps it) and, when the process dies, marks the
op in flight (CRASH, or TIMEOUT when the per-op timeout killed the group) and
continues the remaining entries in a fresh process. No retries here: the batch
decides those.

Each process gets its own ``TRITON_CACHE_DIR`` and FlagGems tuning DB
(``FLAGGEMS_CACHE_DIR`` / ``FLAGGEMS_DB_URL``) in a temp dir removed after
(docs/design.md §5.14; a record run with ``--reuse-tuning-db`` keeps FlagGems' own
persistent DB instead, :data:`REUSE_TUNING_DB`), ``PYTHONHASHSEED=0``, ``PYTHONUNBUFFERED=1`` and
``<flaggems>/src`` on ``PYTHONPATH`` so an uninstalled checkout works.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    OpStatus,
    PlanEntry,
    RunResult,
    RunStatus,
    WorkerPlan,
    dump_json_model,
    load_json_model,
)
from zlbench.protocol import options
from zlbench.protocol.boundary import END, runner_line
from zlbench.protocol.layout import PLAN_JSON, RESULT_JSON, RUN_LOG
from zlbench.runner.execute import stop
from zlbench.runner.execute.failsig import signature
from zlbench.runner.execute.oplog import LoggedOp, OpLogSplitter
from zlbench.runner.execute.proc import GroupProcess, Sink

__all__ = [
    "OpDone",
    "build_pytest_argv",
    "execute_plan",
    "exit_code_for",
    "process_env",
    "pytest_config_args",
]

# on_op_done(entry, status, result.json or None), called as soon as each op is decided.
OpDone = Callable[[PlanEntry, OpStatus, "RunResult | None"], None]

PLUGIN = "zlbench.plugins.loader"
# After this many processes ended identically before any op began (same exit and
# first error line), the ops still waiting are not run: NOT MEASURED, that signature.
SYSTEMIC_AFTER = 3
NOT_MEASURED = "NOT MEASURED"


def exit_code_for(status: RunStatus) -> int:
    """pytest-like exit code of one op: 0 PASS/SKIP, 1 FAIL/TIMEOUT/CRASH, 2 ERROR."""
    if status in (RunStatus.PASS, RunStatus.SKIP):
        return 0
    return 2 if status is RunStatus.ERROR else 1


# Base-env variable naming a triton cache dir that every process of a batch shares
# (filled by zlbench.runner.batch.precompile); absent: each process gets a fresh one.
SHARED_TRITON_CACHE = "ZLBENCH_SHARED_TRITON_CACHE"
# Base-env variable set by the runner for a record run with --reuse-tuning-db: "1" keeps
# FLAGGEMS_CACHE_DIR / FLAGGEMS_DB_URL as the environment has them (unset: FlagGems'
# default, ~/.flaggems/config_cache/TunedConfig_<GPU or vendor>_triton_<major>_<minor>.db),
# so the configs that DB holds are recorded without tuning them again.
REUSE_TUNING_DB = "ZLBENCH_REUSE_TUNING_DB"


def check_reuse_tuning_db(reuse: bool, *, replay: str | None, sweep: str | None) -> None:
    """--reuse-tuning-db is for record runs without a sweep (one line, exit 2)."""
    if reuse and replay:
        raise ZlbenchError(
            f"--reuse-tuning-db is for record runs; {replay} pins the recorded configs"
        )
    if reuse and sweep:
        raise ZlbenchError(
            "--reuse-tuning-db cannot be combined with --sweep-gpus: a warm tuning DB "
            "answers the keys it holds, so the children would not sweep them"
        )


def process_env(
    base: dict[str, str], *, flaggems_dir: str | os.PathLike, tmp_dir: str | os.PathLike
) -> dict[str, str]:
    """The environment of one pytest process: ``base`` plus per-process isolation."""
    env = dict(base)
    tmp = Path(tmp_dir)
    # a shared cache filled before the batch (runner.batch.precompile), else a fresh one
    triton_cache = Path(base.get(SHARED_TRITON_CACHE) or tmp / "triton_cache")
    fg_cache = tmp / "flaggems_cache"
    triton_cache.mkdir(parents=True, exist_ok=True)
    env["TRITON_CACHE_DIR"] = str(triton_cache)
    if base.get(REUSE_TUNING_DB) != "1":
        fg_cache.mkdir(parents=True, exist_ok=True)
        # flag_gems.utils.code_cache reads FLAGGEMS_CACHE_DIR (code cache + default DB
        # dir); flag_gems.utils.libentry reads FLAGGEMS_DB_URL (LibTuner's tuning DB).
        env["FLAGGEMS_CACHE_DIR"] = str(fg_cache)
        env["FLAGGEMS_DB_URL"] = f"sqlite:///{fg_cache / 'TunedConfig.db'}"
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    src = Path(flaggems_dir) / "src"
    if src.is_dir():
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([str(src.resolve())] + ([old] if old else []))
    return env


def pytest_config_args(flaggems_dir: str | os.PathLike, tmp_dir: str | os.PathLike) -> list[str]:
    """Pin pytest's configuration to the FlagGems checkout: its own ``pytest.ini``
    when it has one, else an empty one, and ``--rootdir`` the checkout.

    Why: without ``-c`` pytest looks for a config upwards from the test paths, so a
    checkout without its own pytest.ini (only src/ and benchmark/ copied) placed
    under a project whose pyproject.toml sets ``filterwarnings = error`` inherits
    it, and every op dies importing conftest on a DeprecationWarning (seen on the
    H200)."""
    root = Path(flaggems_dir).resolve()
    ini = root / "pytest.ini"
    if not ini.is_file():
        ini = Path(tmp_dir) / "pytest.ini"  # a file named pytest.ini is a config, even empty
        ini.write_text("[pytest]\n", encoding="utf-8")
    return ["-c", str(ini), f"--rootdir={root}"]


def build_pytest_argv(
    plan_path: str | os.PathLike,
    plan: WorkerPlan,
    *,
    python: str | None = None,
    color: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """``python -m pytest -s -p zlbench.plugins.loader --zl-plan P --level L --mode M ...``.

    ``--dtypes`` is the first entry's when the entries ask for dtypes (the shapes plugin
    hands each entry its own, :func:`_chunks`). The node ids of all entries come last,
    each once.
    """
    argv = [python or sys.executable, "-m", "pytest", "-s", "-p", PLUGIN]
    argv += [*options.arg("plan", plan_path), "--level", plan.level, "--mode", plan.timing]
    # No .pytest_cache in the FlagGems checkout (it would make it look dirty);
    # one op's broken test file must not stop the other ops of the process.
    argv += ["-p", "no:cacheprovider", "--continue-on-collection-errors"]
    argv.append("--color=yes" if color else "--color=no")
    dtypes = plan.entries[0].dtypes if plan.entries else []
    for d in dtypes:
        argv += ["--dtypes", d]
    argv += list(extra)
    seen: set[str] = set()
    for entry in plan.entries:
        for nodeid in entry.nodeids:
            if nodeid not in seen:
                seen.add(nodeid)
                argv.append(nodeid)
    return argv


def _chunks(entries: list[PlanEntry], per_process: int | None) -> list[list[PlanEntry]]:
    """Entries grouped into those with their own dtypes and those with the ops'
    defaults (first-appearance order), then by ``per_process``. Entries with different
    dtypes share a process: the shapes plugin hands each its own before the benchmark
    reads them (a new process per dtype set cost ~9 s of start-up on the H200, at the
    end of a gate_core screen for ``embedding``); an entry on defaults must not see
    another's ``--dtypes``. Entries running the same test (two row parts of one op)
    never share a process: pytest runs a test once, for one of them."""
    if per_process is not None and per_process < 1:
        raise ZlbenchError(f"per-process op count must be >= 1, got {per_process}")
    groups: dict[bool, list[PlanEntry]] = {}
    for e in entries:
        groups.setdefault(bool(e.dtypes), []).append(e)
    out = []
    for group in groups.values():
        size = per_process or len(group)
        chunk: list[PlanEntry] = []
        tests: set[str] = set()
        for e in group:
            if len(chunk) == size or tests & set(e.nodeids):
                out.append(chunk)
                chunk, tests = [], set()
            chunk.append(e)
            tests |= set(e.nodeids)
        if chunk:
            out.append(chunk)
    return out


@dataclass
class _Ctx:
    plan: WorkerPlan
    flaggems_dir: Path
    op_timeout_s: float | None
    env: dict[str, str]
    sink: Sink | None
    on_op_done: OpDone | None
    python: str | None
    grace_s: float
    extra: Sequence[str]
    done: dict[str, OpStatus]
    deadline: float | None = None  # time.monotonic() after which nothing more is measured
    budget_s: float | None = None
    early: list[str] = field(default_factory=list)  # signatures of pre-op process deaths
    systemic: str | None = None  # the pre-op signature seen SYSTEMIC_AFTER times

    def stop_reason(self) -> str | None:
        """Why nothing more is run: a systemic pre-op failure, or the time budget spent."""
        if self.systemic is not None:
            n = self.early.count(self.systemic)
            return f"{self.systemic} (the same in {n} processes before this op; not run)"
        if self.deadline is not None and time.monotonic() > self.deadline:
            return f"the time budget of {self.budget_s:g} s was spent before this op"
        return None

    @property
    def color(self) -> bool:
        return bool(getattr(self.sink, "color", False))


def _read_result(run_dir: Path) -> tuple[RunResult | None, str]:
    path = run_dir / RESULT_JSON
    if not path.exists():
        return None, ""
    try:
        return load_json_model(path, RunResult), ""
    except ZlbenchError as e:
        return None, f"unreadable result.json: {e}"


def _decide(
    ctx: _Ctx,
    track: LoggedOp,
    status: RunStatus,
    note: str,
    rc: int | None,
    read: tuple[RunResult | None, str] | None = None,
    sig: str | None = None,
) -> None:
    """Record the final status of one op and tell the caller.

    ``read`` is what :func:`_read_result` already gave for this op, if called;
    ``sig`` its error signature when already known (else read from its run.log)."""
    entry = track.entry
    result, problem = read if read is not None else _read_result(track.run_dir)
    if problem:
        note = f"{note}; {problem}" if note else problem
    if sig is None:
        sig = signature(status, rc, note, _log_text(track.run_dir)) or ""
    dtypes = result.dtypes if result and result.dtypes else entry.dtypes
    op_status = OpStatus(
        repo=entry.repo,
        op=entry.op,
        run_name=entry.run_name,
        status=status,
        rc=rc,
        attempts=1,
        dtype_used=",".join(dtypes),
        rows=len(result.rows) if result else 0,
        seconds=track.seconds(),
        gpu=ctx.env.get("CUDA_VISIBLE_DEVICES", ""),
        run_dir=str(entry.run_dir),
        note=note,
        signature=sig,
    )
    if status is not RunStatus.PASS:
        track.write(runner_line(f"run_name={entry.run_name} status={status.value} {note}"))
    track.close()
    ctx.done[entry.run_name] = op_status
    if ctx.on_op_done is not None:
        ctx.on_op_done(entry, op_status, result)


def _log_text(run_dir: Path) -> str:
    try:
        return (run_dir / RUN_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _not_measured(ctx: _Ctx, entries: list[PlanEntry], why: str) -> None:
    """Decide ops that are not run at all: ERROR, ``NOT MEASURED: <why>``."""
    sig = ctx.systemic or ""
    for entry in entries:
        track = LoggedOp(entry)
        _decide(ctx, track, RunStatus.ERROR, f"{NOT_MEASURED}: {why}", None, sig=sig)


def _decide_ended(ctx: _Ctx, track: LoggedOp) -> bool:
    """An op whose END line came: status from result.json, else from END.

    Returns True when the op hit a device fault (the process must be replaced).
    """
    read = _read_result(track.run_dir)
    result = read[0]
    try:
        status = result.status if result else RunStatus(track.end_status or "")
        note = "" if result else "no result.json; status from the END line"
    except ValueError:
        status, note = RunStatus.FAIL, f"unknown END status {track.end_status!r}"
    if track.fault and status is not RunStatus.PASS:
        _decide(ctx, track, RunStatus.CRASH, f"device fault: {track.fault}", None, read)
        return True
    if status is RunStatus.ERROR and not note:
        note = (result.error or "") if result else ""
    _decide(ctx, track, status, note, exit_code_for(status), read)
    return False


def _describe_exit(rc: int) -> str:
    return f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"


def _stream(ctx: _Ctx, child: GroupProcess, split: OpLogSplitter) -> str | None:
    """Feed the child's lines to the sink and the splitter until EOF.

    Returns why the runner killed the process: "timeout", "fault" or None.
    """
    killed: str | None = None
    for line in child.lines():
        if line is not None:
            if ctx.sink is not None:
                ctx.sink(line)
            if killed is not None:  # a dying process: its op events mean nothing now
                split.feed_text(line)
                continue
            event = split.feed(line)
            if event and event[0] == "end" and _decide_ended(ctx, event[1]):
                killed = "fault"
                child.kill(ctx.grace_s)
        timeout = ctx.op_timeout_s
        if killed is None and timeout is not None:
            if time.monotonic() - split.last_event > timeout:
                killed = "timeout"
                child.kill(ctx.grace_s)
        if killed is None and ctx.deadline is not None and time.monotonic() > ctx.deadline:
            killed = "budget"
            child.kill(ctx.grace_s)
    return killed


def _settle(ctx: _Ctx, split: OpLogSplitter, rc: int, killed: str | None) -> list[PlanEntry]:
    """Decide the op in flight after the process ended; return the entries to re-run."""
    how = _describe_exit(rc)
    flight = split.in_flight()
    if flight is not None:
        if killed == "budget":
            why = f"{NOT_MEASURED}: the time budget of {ctx.budget_s:g} s ran out during the op"
            _decide(ctx, flight, RunStatus.ERROR, why, None, sig="")
        elif killed == "timeout":
            _decide(ctx, flight, RunStatus.TIMEOUT, f"timed out after {ctx.op_timeout_s:g} s", None)
        else:
            _decide(ctx, flight, RunStatus.CRASH, f"process {how} before {END}", rc)
    waiting = split.not_started()
    progressed = len(waiting) < len(split.ops)
    if killed == "timeout" and flight is None and waiting:
        first = waiting.pop(0)
        split.flush_pending(first)
        note = f"timed out after {ctx.op_timeout_s:g} s before the op began (startup/collection)"
        _decide(ctx, first, RunStatus.TIMEOUT, note, None)
        progressed = True
    if not waiting or killed == "budget":
        return [t.entry for t in waiting]  # the caller decides them: NOT MEASURED
    status = RunStatus.CRASH if rc < 0 else RunStatus.ERROR
    note = f"pytest {how} before the op began; see run.log"
    if not progressed:
        _early_death(ctx, signature(status, rc, note, "\n".join(split.pending)) or note)
    if progressed or len(waiting) > 1:
        return [t.entry for t in waiting]  # fresh process (one per op if no progress)
    only = waiting[0]
    split.flush_pending(only)
    _decide(ctx, only, status, note, rc)
    return []


def _early_death(ctx: _Ctx, sig: str) -> None:
    """A process ended before any op began: after SYSTEMIC_AFTER identical ones, stop."""
    ctx.early.append(sig)
    if ctx.early.count(sig) >= SYSTEMIC_AFTER and ctx.systemic is None:
        ctx.systemic = sig


def _run_process(ctx: _Ctx, entries: list[PlanEntry]) -> list[PlanEntry]:
    """One pytest process over ``entries``; returns the entries left to re-run."""
    tmp = Path(tempfile.mkdtemp(prefix="zlbench-proc-"))
    split = OpLogSplitter(entries)
    for entry in entries:  # a killed earlier process may have left a stale one
        (Path(entry.run_dir) / RESULT_JSON).unlink(missing_ok=True)
    try:
        sub = ctx.plan.model_copy(update={"entries": entries})
        plan_path = tmp / PLAN_JSON
        dump_json_model(plan_path, sub)
        extra = [*pytest_config_args(ctx.flaggems_dir, tmp), *ctx.extra]
        argv = build_pytest_argv(plan_path, sub, python=ctx.python, color=ctx.color, extra=extra)
        env = process_env(ctx.env, flaggems_dir=ctx.flaggems_dir, tmp_dir=tmp)
        child = GroupProcess(argv, cwd=ctx.flaggems_dir, env=env)
        try:
            killed = _stream(ctx, child, split)
        except BaseException:
            child.kill(ctx.grace_s)
            child.wait()
            raise
        rc = child.wait()
        if stop.requested():  # killed because zlbench stops: its op in flight is not
            raise KeyboardInterrupt  # a CRASH, and nothing more runs
        for track in split.ops.values():  # ended, but result.json came late
            if track.ended is not None and track.entry.run_name not in ctx.done:
                _decide_ended(ctx, track)
        split.finish()
        return _settle(ctx, split, rc, killed)
    finally:
        split.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _prepare_run_dirs(plan: WorkerPlan) -> None:
    names = [e.run_name for e in plan.entries]
    if len(set(names)) != len(names):
        raise ZlbenchError("a worker plan names the same run_name twice")
    for entry in plan.entries:
        run_dir = Path(entry.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in (RESULT_JSON, RUN_LOG):
            (run_dir / stale).unlink(missing_ok=True)
        dump_json_model(run_dir / PLAN_JSON, plan.model_copy(update={"entries": [entry]}))


def execute_plan(
    plan: WorkerPlan,
    *,
    flaggems_dir: str | os.PathLike,
    per_process: int | None = None,
    op_timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    sink: Sink | None = None,
    on_op_done: OpDone | None = None,
    python: str | None = None,
    grace_s: float = 5.0,
    extra_pytest_args: Sequence[str] = (),
    budget_s: float | None = None,
    started: float | None = None,
) -> list[OpStatus]:
    """Run every entry of ``plan``; return one OpStatus per entry, in plan order.

    per_process: None = all entries in one process; k = at most k entries per
        process (1 = one op per process). Entries on the ops' default dtypes never
        share a process with entries that ask for dtypes, nor two entries one test
        (:func:`_chunks`).
    op_timeout_s: per op, measured from that op's BEGIN line (before the first
        BEGIN / between ops: from process start / the last END): the group is
        killed, the op is TIMEOUT, the rest continue in a fresh process.
        None or 0: no limit.
    budget_s: seconds from ``started`` (a ``time.monotonic()``; default now) after
        which nothing more is measured: the process is killed and every op not
        decided yet is ERROR with a ``NOT MEASURED:`` note (None: no budget).
    env: the base environment, already built by the caller (e.g. with
        CUDA_VISIBLE_DEVICES); None = os.environ. Per-process variables are added.
    sink: receives every output line (ANSI kept); a truthy ``sink.color`` asks
        pytest for colour (``--color=yes``).
    on_op_done: called as soon as each op is decided (progress, ops_status.csv).

    Each entry's run_dir is created, its stale ``result.json`` and ``run.log``
    removed, and ``plan.json`` (a one-entry plan) written there. OpStatus:
    attempts=1; rc = 0 PASS/SKIP, 1 FAIL, the process exit code for CRASH and
    ERROR (negative = signal, None after a device fault), None for TIMEOUT;
    run_dir absolute; gpu = env's CUDA_VISIBLE_DEVICES; note says why when not
    PASS. A process that dies marks only the op in flight; one that ends before
    any op began is re-run one op per process, then the op is ERROR (CRASH when
    killed by a signal); after SYSTEMIC_AFTER processes ended identically before
    any op began, the ops still waiting are ERROR ``NOT MEASURED: <signature>``
    without being run. pytest's configuration is pinned to the checkout
    (:func:`pytest_config_args`).
    """
    base_env = dict(os.environ if env is None else env)
    if op_timeout_s is not None and op_timeout_s <= 0:
        op_timeout_s = None  # --op-timeout 0: no limit
    start = time.monotonic() if started is None else started
    ctx = _Ctx(
        plan=plan,
        flaggems_dir=Path(flaggems_dir),
        op_timeout_s=op_timeout_s,
        env=base_env,
        sink=sink,
        on_op_done=on_op_done,
        python=python,
        grace_s=grace_s,
        extra=extra_pytest_args,
        done={},
        deadline=None if budget_s is None else start + budget_s,
        budget_s=budget_s,
    )
    _prepare_run_dirs(plan)
    queue = deque(_chunks(list(plan.entries), per_process))
    while queue:
        if stop.requested():  # interrupted (SIGINT/SIGTERM): no next process
            raise KeyboardInterrupt
        entries = queue.popleft()
        why = ctx.stop_reason()
        if why is not None:
            _not_measured(ctx, entries, why)
            continue
        left = _run_process(ctx, entries)
        if left:
            started_none = len(left) == len(entries)
            queue.extendleft(reversed([[e] for e in left] if started_none else [left]))
    return [ctx.done[e.run_name] for e in plan.entries]
