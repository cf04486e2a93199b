"""The stateful half of a batch: worker threads, attempts, ops_status.csv, progress.

:func:`zlbench.runner.batch.run.run_batch` validates and plans; :class:`BatchRun`
executes. One thread per GPU (per process slot of a GPU with ``gpu_share`` > 1, each
slot's processes taking the GPU's turn around their timing: :mod:`zlbench.protocol.turn`);
everything shared (final statuses, the CSV, the
progress stream) is behind one lock, and ops_status.csv is rewritten atomically
each time an op becomes final, so a killed batch leaves a complete, valid file.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from zlbench import __version__
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import sha256_file
from zlbench.models import BatchInfo, DismissedOp, OpStatus, RunResult, RunStatus, WorkerPlan
from zlbench.protocol.layout import COMPLETE, GPU_TURNS_CSV
from zlbench.protocol.pairs import pair_environ
from zlbench.protocol.turn import GPU_SHARE_VAR, GPU_TURN_LOG_VAR, GPU_TURN_VAR, TURN_LOG_HEADER
from zlbench.runner.batch import progress
from zlbench.runner.batch.attempts import (
    OpAttempts,
    archive_run_dir,
    baseline_rows,
    exit_code,
    final_status,
    first_dtypes,
    is_complete,
    load_previous,
    row_dtypes,
    said_unsupported,
    write_final_files,
)
from zlbench.runner.batch.budget import budget_seconds
from zlbench.runner.batch.config import (
    DEFAULT_FLAGTUNE,
    FLAGTUNE_VAR,
    BatchConfig,
    BatchOutcome,
    default_executor,
)
from zlbench.runner.batch.costs import OpCosts
from zlbench.runner.batch.info import read_batch_info, write_batch_info
from zlbench.runner.batch.parts import (
    PARTS_DIR,
    merge_part_dirs,
    merge_results,
    merge_statuses,
    part_dir,
    part_rows,
    surplus_rows,
    whole_op,
    worst_status,
)
from zlbench.runner.batch.plan import deal
from zlbench.runner.batch.retry import Attempt, next_attempt
from zlbench.runner.batch.status import load_run, write_ops_status
from zlbench.runner.batch.systemic import (
    SystemicTracker,
    internal_error_status,
    not_measured,
    run_signature,
    systemic_failures,
)
from zlbench.runner.batch.turns import parse_turns, summarize_turns, turns_lines
from zlbench.runner.catalog.select import OpSelection, SelectedOp
from zlbench.runner.execute.worker import REUSE_TUNING_DB


class BatchRun:
    def __init__(self, config: BatchConfig, selection: OpSelection, out_dir: Path, costs: OpCosts):
        self.config = config
        self.selection = selection
        self.out = out_dir
        self.executor = config.executor or default_executor()
        self.lock = threading.Lock()
        self.final: dict[str, OpStatus] = {}
        self.done = 0
        self.total = 0
        self.t0 = time.monotonic()
        self.errors: list[BaseException] = []
        self.running: set[str] = set()  # names of worker threads not yet returned
        self.systemic = SystemicTracker()
        self.budget_s = config.budget_s  # or derived from the durations in _resume
        self.costs = costs  # the selection's expected seconds (plan.selection_costs)
        self.slot_gpu = slot_gpus(config.gpus, config.gpu_share)  # worker slot -> its GPU
        self.turn_dir: str | None = None  # the GPUs' turn files (gpu_share > 1)

    # ------------------------------------------------------------------ setup

    def run(self) -> BatchOutcome:
        info = self._info()
        if self.config.resume:
            check_resumable(read_batch_info(self.out), info, self.out)
        write_batch_info(self.out, info)
        previous = load_previous(self.out) if self.config.resume else {}
        self._add_left_out()
        todo = self._resume(previous)
        self.total = sum(len(v) for v in todo.values())
        self._say(f"batch: {self.total} op(s) to run on {len(todo)} worker(s) -> {self.out}")
        if self.budget_s is not None:
            self._say(f"batch: time budget {progress.fmt_seconds(self.budget_s)}")
        with self.lock:
            write_ops_status(self.out, self.final.values())
        with self._turns():
            self._run_workers(todo)
        self._merge_parts()
        statuses = sorted(self.final.values(), key=lambda s: (s.repo, s.run_name))
        rows, info = write_final_files(self.out, statuses, info)
        info.systemic = systemic_failures(statuses)
        info.budget_s = self.budget_s
        info.not_measured = not_measured(statuses)
        write_batch_info(self.out, info)
        wall = time.monotonic() - self.t0
        self._say(progress.count_table(statuses, rows, wall))
        for line in self._turn_lines(wall):
            self._say(line)
        for line in progress.ending_lines(statuses, info.systemic):
            self._say(line)
        code = exit_code(statuses, rows)
        return BatchOutcome(self.out, statuses, info.counts, rows, code)

    def _info(self) -> BatchInfo:
        c = self.config
        sel = self.selection
        return BatchInfo(
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            argv=list(c.argv),
            selection={
                "all": c.all_ops,
                "ops": list(c.ops),
                "ops_file": str(c.ops_file) if c.ops_file else None,
                "repos": list(c.repos),
                "restricted": c.restrict_to is not None,
            },
            mode="replay" if c.replay_root else "record",
            replay_root=str(c.replay_root) if c.replay_root else None,
            timing=c.timing,
            dtypes=list(c.dtypes),
            shape_file=str(c.shape_file) if c.shape_file else None,
            shape_file_sha256=_sha256(c.shape_file),
            shard=f"{c.shard[0]}/{c.shard[1]}" if c.shard else None,
            gpus=list(c.gpus),
            per_process=c.per_process,
            gpu_share=c.gpu_share,
            op_timeout_s=c.op_timeout(),
            max_retries=c.max_retries,
            reuse_tuning_db=c.reuse_tuning_db and c.replay_root is None,
            budget_s=c.budget_s,
            resume=c.resume,
            flaggems_dirs={k: str(v) for k, v in c.flaggems_dirs.items()},
            hostname=socket.gethostname(),
            zlbench_version=__version__,
            ops=list(dict.fromkeys(o.whole_key for o in sel.ops)),
            dismissed=[
                DismissedOp(key=o.key, date=e.when, reason=e.reason) for o, e in sel.dismissed
            ],
            skipped=[o.key for o in sel.skipped],
        )

    def _add_left_out(self) -> None:
        """Dismissed and unconditionally skipped ops: SKIP rows that never ran."""
        for op, entry in self.selection.dismissed:
            note = f"dismissed {entry.when}: {entry.reason}"
            self.final[op.key] = self._skip_row(op, note)
        for op in self.selection.skipped:
            self.final[op.key] = self._skip_row(op, f"unconditional skip: {op.skip}")

    @staticmethod
    def _skip_row(op: SelectedOp, note: str) -> OpStatus:
        return OpStatus(
            repo=op.repo, op=op.op, run_name=op.run_name, status=RunStatus.SKIP, note=note
        )

    def _resume(self, previous: dict[str, OpStatus]) -> dict[str, list[OpAttempts]]:
        """Tracks per GPU; with --resume, complete ops are kept and not run again."""
        todo: dict[str, list[OpAttempts]] = {}
        dealt = deal(self.selection, list(self.slot_gpu), self.costs)
        if self.budget_s is None and self.config.budget_factor:
            # from one process per GPU: the recorded durations were measured so, and
            # a shared GPU is never slower than that (an upper bound)
            per_gpu = deal(self.selection, self.config.gpus, self.costs)
            bins = [[o.key for o in ops] for ops in per_gpu.values()]
            factor, per = self.config.budget_factor, self.config.per_process
            self.budget_s = budget_seconds(self.costs, bins, factor, per)
        # the rows of the parts merged by an earlier run (ops_status.csv has the op's)
        parts_before = load_previous(self.out / PARTS_DIR) if self.config.resume else {}
        for slot, ops in dealt.items():
            tracks = []
            for op in ops:
                whole_dir = self.out / op.repo / op.whole_run_name
                merged = previous.get(op.whole_key)
                if op.part and (
                    self._kept_failed(merged) or self.config.resume and is_complete(whole_dir)
                ):
                    # merged by an earlier run (complete, or failed and --keep-failed):
                    # no part runs again
                    if op.whole_key not in self.final:
                        self.final[op.whole_key] = merged or self._from_result(
                            whole_op(op), whole_dir
                        )
                    continue
                run_dir = part_dir(self.out, op.repo, op.run_name) if op.part else whole_dir
                before = previous.get(op.key) or parts_before.get(op.key)
                if self._kept_failed(before):
                    self.final[op.key] = before
                    continue
                if self.config.resume and is_complete(run_dir):
                    self.final[op.key] = before or self._from_result(op, run_dir)
                    continue
                archive_run_dir(self.out, run_dir, op.repo, op.run_name, "previous")
                base = baseline_rows(self.config.replay_root, op.repo, op.whole_run_name)
                if op.part:
                    base = part_rows(base, op.part)
                dtypes = first_dtypes(tuple(self.config.dtypes), row_dtypes(base))
                expected = len(base) if base is not None else None
                gpu = self.slot_gpu[slot]
                tracks.append(OpAttempts(op, run_dir, gpu, dtypes, expected_rows=expected))
            if tracks:
                todo[slot] = tracks
        if self.config.resume and self.final:
            self._say(f"resume: {len(self.final)} op(s) already complete or left out")
        return todo

    def _from_result(self, op: SelectedOp, run_dir: Path) -> OpStatus:
        result = load_run(run_dir)
        status = result.status if result is not None else RunStatus.PASS
        rows = len(result.rows) if result is not None else 0
        return OpStatus(
            repo=op.repo,
            op=op.op,
            run_name=op.run_name,
            status=status,
            rows=rows,
            run_dir=os.path.relpath(run_dir, self.out),
            note="resumed (complete)",
        )

    def _kept_failed(self, before: OpStatus | None) -> bool:
        """--resume --keep-failed: an op that ended FAIL, TIMEOUT or CRASH stays so."""
        c = self.config
        return c.resume and c.keep_failed and before is not None and before.status in KEPT_FAILED

    def _merge_parts(self) -> None:
        """Each op measured in row parts becomes one op again: its run dir and its
        ops_status.csv row from its parts' (:mod:`.parts`). An op merged by an earlier
        run (resumed) is kept; one whose parts are not all final is left as parts."""
        groups: dict[str, list[SelectedOp]] = {}
        for op in self.selection.ops:
            if op.part:
                groups.setdefault(op.whole_key, []).append(op)
        # the parts' rows, for a --resume that reruns some of them (read once)
        kept = load_previous(self.out / PARTS_DIR) if groups else {}
        for key, parts in groups.items():
            if key in self.final or any(p.key not in self.final for p in parts):
                continue
            try:
                final = self._merge_op(parts)
            except (OSError, ValueError, ZlbenchError) as e:  # unreadable: left as parts
                self._say(f"        cannot merge the row parts of {key}: {e}")
                continue
            with self.lock:
                kept |= {p.key: self.final.pop(p.key) for p in parts}
                write_ops_status(self.out / PARTS_DIR, kept.values())
                self.final[key] = final
                write_ops_status(self.out, self.final.values())
            self._say(progress.merged_line(final, len(parts)))

    def _merge_op(self, parts: list[SelectedOp]) -> OpStatus:
        """Merge one op's parts into its run dir; its ops_status.csv row. A PASS with
        more rows of a (benchmark op, dtype) than the baseline holds is a FAIL: the parts
        did not split the rows (a benchmark the plugins' row filter does not reach
        measures every row in every part)."""
        whole = whole_op(parts[0])
        dirs = [part_dir(self.out, p.repo, p.run_name) for p in parts]
        loaded = [(p.part, load_run(d)) for p, d in zip(parts, dirs, strict=True)]
        results = [(part, r) for part, r in loaded if r is not None]
        final = merge_statuses([(p, self.final[p.key]) for p in parts], whole)
        base = baseline_rows(self.config.replay_root, whole.repo, whole.run_name)
        extra = surplus_rows([r for _, res in results for r in res.rows], base)
        if final.status is RunStatus.PASS and extra:
            why = (
                f"row parts measured more rows than the baseline holds ({extra}); "
                "measure this op with --split-rows off"
            )
            final = final.model_copy(update={"status": RunStatus.FAIL, "rc": 1,
                                             "note": f"{final.note}; {why}"})  # fmt: skip
        merged = merge_results(results, whole.run_name) if results else None
        if merged is not None:  # a part without result.json (crash) counts too
            merged = merged.model_copy(
                update={"status": worst_status([merged.status, final.status])}
            )
        dest = self.out / whole.repo / whole.run_name
        archive_run_dir(self.out, dest, whole.repo, whole.run_name, "previous")
        merge_part_dirs(dirs, merged, dest)
        if final.status in (RunStatus.PASS, RunStatus.SKIP):
            (dest / COMPLETE).write_text(final.status.value + "\n", encoding="utf-8")
        return final

    # ------------------------------------------------------------------ workers

    def _run_workers(self, todo: dict[str, list[OpAttempts]]) -> None:
        items = list(todo.items())
        if len(items) == 1:  # in this thread: Ctrl-C reaches the worker directly
            self._worker(*items[0])
            return
        threads = [
            threading.Thread(target=self._guarded, args=item, name=f"gpu-{item[0]}", daemon=True)
            for item in items
        ]
        self.running = {t.name for t in threads}
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            _interrupt(threads, self.running)  # each worker kills its pytest process group
            raise
        if self.errors:
            raise self.errors[0]

    def _guarded(self, slot: str, tracks: list[OpAttempts]) -> None:
        try:
            self._worker(slot, tracks)
        except BaseException as e:  # re-raised by the main thread
            self.errors.append(e)
        finally:
            self.running.discard(threading.current_thread().name)

    def _worker(self, slot: str, tracks: list[OpAttempts]) -> None:
        pending = tracks
        while pending:
            for repo in dict.fromkeys(t.sel.repo for t in pending):
                self._run_pass(slot, [t for t in pending if t.sel.repo == repo])
            pending = [t for t in pending if t.next is not None]
            for t in pending:
                label = f"{len(t.attempts)}"
                archive_run_dir(self.out, t.run_dir, t.sel.repo, t.sel.run_name, label)
                t.dtypes, t.kind, t.next = t.next.dtypes, t.next.kind, None

    def _run_pass(self, slot: str, tracks: list[OpAttempts]) -> None:
        c = self.config
        gpu = self.slot_gpu[slot]
        by_name = {t.sel.run_name: t for t in tracks}
        seen: set[str] = set()

        def on_done(entry, status: OpStatus, result: RunResult | None) -> None:
            seen.add(entry.run_name)
            self._attempt_done(by_name[entry.run_name], status, result)

        plan = WorkerPlan(timing=c.timing, ttgir=c.ttgir, entries=[t.entry(c) for t in tracks])
        env = dict(c.env if c.env is not None else _environ())
        if gpu:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        env[GPU_SHARE_VAR] = str(c.gpu_share)  # recorded in each result's environment
        if self.turn_dir is not None:  # this GPU's turn, shared by its slots
            env[GPU_TURN_VAR] = str(Path(self.turn_dir) / f"gpu-{gpu or 'default'}.lock")
            env[GPU_TURN_LOG_VAR] = str(self.out / GPU_TURNS_CSV)
        if c.pair_dir is not None:  # an A/B side: the GPU's turn shared with the other side
            env |= pair_environ(c.pair_dir, c.pair_side or "", c.pair_rule, gpu)
        # FlagGems' tuning space, explicit and recorded (Environment.use_flagtune)
        env[FLAGTUNE_VAR] = c.use_flagtune or env.get(FLAGTUNE_VAR) or DEFAULT_FLAGTUNE
        env.pop(REUSE_TUNING_DB, None)  # only this batch's own setting decides
        if c.reuse_tuning_db and c.replay_root is None:
            env[REUSE_TUNING_DB] = "1"  # FlagGems' persistent DB (execute.worker)
        extra = {"extra_pytest_args": list(c.extra_pytest_args)} if c.extra_pytest_args else {}
        if self.budget_s is not None:
            extra |= {"budget_s": self.budget_s, "started": self.t0}
        try:
            statuses = self.executor(
                plan,
                flaggems_dir=c.flaggems_dirs[tracks[0].sel.repo],
                per_process=c.per_process,
                op_timeout_s=c.op_timeout(),  # None: no limit
                env=env,
                sink=c.sink,
                on_op_done=on_done,
                **extra,
            )
        except Exception as e:  # a runner bug: one op fails with it, the batch goes on
            self._internal_error(slot, [t for t in tracks if t.sel.run_name not in seen], e)
            return
        for entry, status in zip(plan.entries, statuses, strict=False):
            if entry.run_name not in seen:  # the executor did not call back
                track = by_name[entry.run_name]
                self._attempt_done(track, status, load_run(track.run_dir))

    def _internal_error(self, slot: str, undecided: list[OpAttempts], exc: Exception) -> None:
        """The first op not decided when the runner failed is ERROR; the rest run on."""
        if not undecided:
            return
        first, rest = undecided[0], undecided[1:]
        self._attempt_done(first, internal_error_status(first, self.slot_gpu[slot], exc), None)
        if rest:
            self._run_pass(slot, rest)

    def _attempt_done(self, track: OpAttempts, status: OpStatus, result: RunResult | None) -> None:
        unsupported = status.status in (RunStatus.FAIL, RunStatus.CRASH) and said_unsupported(
            track.run_dir, result
        )
        track.attempts.append(
            Attempt(status.status, status.rc, track.dtypes, unsupported, track.kind)
        )
        track.seconds += status.seconds
        sig = status.signature or run_signature(status, track.run_dir)
        status = status.model_copy(update={"signature": sig})
        c = self.config
        track.next = next_attempt(
            track.attempts,
            c.max_retries,
            rescue=c.replay_root is None,  # replay: the baseline's rows fix the dtypes
            systemic=self.systemic.observe(track.sel.whole_key, sig) or self._spent(),
        )
        if track.next is not None:
            what = f"{track.next.kind} [{','.join(track.next.dtypes) or 'defaults'}]"
            line = progress.retry_line(
                track.sel.repo, track.sel.run_name, status, what, track.next.why
            )
            self._say(line)
            return
        final = final_status(track, status, result, self.out, track.expected_rows)
        if final.status in (RunStatus.PASS, RunStatus.SKIP):
            track.run_dir.mkdir(parents=True, exist_ok=True)
            (track.run_dir / COMPLETE).write_text(final.status.value + "\n", encoding="utf-8")
        with self.lock:
            self.final[track.sel.key] = final
            self.done += 1
            write_ops_status(self.out, self.final.values())
            elapsed = time.monotonic() - self.t0
            self._say_locked(progress.done_line(final, self.done, self.total, elapsed))

    @contextlib.contextmanager
    def _turns(self) -> Iterator[None]:
        """With ``gpu_share`` > 1: the GPUs' turn files (a temp dir, ``turn_dir``) and
        the turn log's header, for as long as the workers run; else nothing."""
        share = self.config.gpu_share
        if share <= 1:
            yield
            return
        log = self.out / GPU_TURNS_CSV
        if not log.is_file():
            log.write_text(TURN_LOG_HEADER + "\n", encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="zl-gpu-turn-") as turns:
            self.turn_dir = turns
            self._say(f"batch: {share} processes per GPU, timing in turns")
            try:
                yield
            finally:
                self.turn_dir = None

    def _turn_lines(self, wall: float) -> list[str]:
        """Per GPU of a shared batch: how much of the wall some process was timing."""
        path = self.out / GPU_TURNS_CSV
        if self.config.gpu_share <= 1 or not path.is_file():
            return []
        since = time.time() - wall  # this run's turns (--resume appends to the file)
        turns = [t for t in parse_turns(path.read_text("utf-8")) if t.start >= since]
        return turns_lines(summarize_turns(turns), wall)

    def _spent(self) -> bool:
        """The time budget is spent: no more retries."""
        budget = self.budget_s
        return budget is not None and time.monotonic() - self.t0 > budget

    # ------------------------------------------------------------------ output

    def _say(self, line: str) -> None:
        with self.lock:
            self._say_locked(line)

    def _say_locked(self, line: str) -> None:
        progress.say(self.config.progress, line)


KEPT_FAILED = (RunStatus.FAIL, RunStatus.TIMEOUT, RunStatus.CRASH)
RESUME_SAME = ("mode", "replay_root", "timing", "dtypes", "shape_file_sha256", "gpu_share")


def check_resumable(old: BatchInfo | None, new: BatchInfo, out: Path) -> None:
    """--resume must measure the way the batch being resumed did."""
    if old is None:
        return
    for name in RESUME_SAME:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            raise ZlbenchError(
                f"cannot resume {out}: it was run with {name}={a!r}, this run asks {b!r}"
            )


def slot_gpus(gpus: list[str], share: int) -> dict[str, str]:
    """Worker slots and their GPU: the GPUs themselves, or ``share`` slots per GPU
    (``"0/1"``, ``"0/2"``, ...; ``"/1"`` for the unnamed GPU ``""``). A GPU listed
    twice is refused (a dict would silently fold it into one worker)."""
    if len(set(gpus)) != len(gpus):
        raise ZlbenchError(f"GPU list has duplicates: {','.join(gpus)}")
    if share <= 1:
        return {g: g for g in gpus}
    return {f"{g}/{i}": g for g in gpus for i in range(1, share + 1)}


def _interrupt(threads: list[threading.Thread], running: set[str], wait_s: float = 15.0) -> None:
    """Raise KeyboardInterrupt inside the worker threads still running (Ctrl-C only
    reaches the main thread) so execute_plan kills its child's process group; wait.

    ``running`` (names of workers not yet returned) is kept by the workers
    themselves: after an interrupted ``join`` Python 3.11 may report a live
    thread as stopped."""
    for t in threads:
        if t.name in running and t.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(t.ident), ctypes.py_object(KeyboardInterrupt)
            )
    deadline = time.monotonic() + wait_s
    while running and time.monotonic() < deadline:
        time.sleep(0.05)


def _environ() -> dict[str, str]:
    return dict(os.environ)


def _sha256(path) -> str | None:
    if not path:
        return None
    try:
        return sha256_file(Path(path))
    except OSError:
        return None


__all__ = ["BatchRun"]
