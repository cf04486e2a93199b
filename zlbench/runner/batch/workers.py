"""A batch's worker slots: one thread per GPU (per process slot of a GPU with
``gpu_share`` > 1, each slot's processes taking the GPU's turn around their timing:
:mod:`zlbench.protocol.turn`), each running the queue of ops dealt to it.

:func:`slot_gpus` names the slots; :class:`SlotWorkers` runs them. A slot hands its ops
to the executor (``execute_plan``: one pytest process for many ops) one repo at a time,
in passes: the ops the retry rules give another attempt run in the next pass, their
run dir moved to ``<batch>/.attempts/``. Each finished attempt goes to the ``on_attempt``
callback (:class:`.outcomes.AttemptOutcomes`), from the slot's thread.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import OpStatus, RunResult, WorkerPlan
from zlbench.protocol.layout import GPU_TURNS_CSV
from zlbench.protocol.pairs import pair_environ
from zlbench.protocol.turn import GPU_SHARE_VAR, GPU_TURN_LOG_VAR, GPU_TURN_VAR
from zlbench.runner.batch.attempts import OpAttempts, archive_run_dir
from zlbench.runner.batch.config import (
    DEFAULT_FLAGTUNE,
    FLAGTUNE_VAR,
    BatchConfig,
    default_executor,
)
from zlbench.runner.batch.status import load_run
from zlbench.runner.batch.systemic import internal_error_status
from zlbench.runner.execute.worker import REUSE_TUNING_DB

OnAttempt = Callable[[OpAttempts, OpStatus, RunResult | None], None]


class SlotWorkers:
    """The worker slots of a batch into ``out``: ``slot_gpu`` (slot -> its GPU), each
    finished attempt to ``on_attempt``; ``budget_s`` seconds from ``t0`` (None: no
    budget) passed on to the executor."""

    def __init__(
        self,
        config: BatchConfig,
        out: Path,
        slot_gpu: dict[str, str],
        on_attempt: OnAttempt,
        budget_s: float | None,
        t0: float,
    ):
        self.config = config
        self.out = out
        self.slot_gpu = slot_gpu
        self.on_attempt = on_attempt
        self.budget_s = budget_s
        self.t0 = t0
        self.executor = config.executor or default_executor()
        self.errors: list[BaseException] = []
        self.running: set[str] = set()  # names of worker threads not yet returned
        self.turn_dir: str | None = None  # the GPUs' turn files (gpu_share > 1)

    def run(self, todo: dict[str, list[OpAttempts]], turn_dir: str | None = None) -> None:
        """Run every slot's tracks of ``todo`` to their end (``turn_dir``: the GPUs'
        turn files of a shared batch); re-raise a worker's exception."""
        self.turn_dir = turn_dir
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
        by_name = {t.sel.run_name: t for t in tracks}
        seen: set[str] = set()

        def on_done(entry, status: OpStatus, result: RunResult | None) -> None:
            seen.add(entry.run_name)
            self.on_attempt(by_name[entry.run_name], status, result)

        plan = WorkerPlan(timing=c.timing, ttgir=c.ttgir, entries=[t.entry(c) for t in tracks])
        env = pass_env(c, self.slot_gpu[slot], self.turn_dir, self.out)
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
                self.on_attempt(track, status, load_run(track.run_dir))

    def _internal_error(self, slot: str, undecided: list[OpAttempts], exc: Exception) -> None:
        """The first op not decided when the runner failed is ERROR; the rest run on."""
        if not undecided:
            return
        first, rest = undecided[0], undecided[1:]
        self.on_attempt(first, internal_error_status(first, self.slot_gpu[slot], exc), None)
        if rest:
            self._run_pass(slot, rest)


def pass_env(config: BatchConfig, gpu: str, turn_dir: str | None, out: Path) -> dict[str, str]:
    """The environment of a slot's processes on ``gpu``: its GPU, its share and turn
    (``turn_dir``: a shared batch's turn files), an A/B side's pairing, FlagGems' tuning
    space and tuning DB."""
    c = config
    env = dict(c.env if c.env is not None else _environ())
    if gpu:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    env[GPU_SHARE_VAR] = str(c.gpu_share)  # recorded in each result's environment
    if turn_dir is not None:  # this GPU's turn, shared by its slots
        env[GPU_TURN_VAR] = str(Path(turn_dir) / f"gpu-{gpu or 'default'}.lock")
        # absolute: the benchmark processes run in the FlagGems checkout, where a
        # relative --out names another file (2026-12-02: a batch run with --out
        # runs/full-screen lost its turn log, silently)
        env[GPU_TURN_LOG_VAR] = str((out / GPU_TURNS_CSV).absolute())
    if c.pair_dir is not None:  # an A/B side: the GPU's turn shared with the other side
        env |= pair_environ(c.pair_dir, c.pair_side or "", c.pair_rule, gpu)
    # FlagGems' tuning space, explicit and recorded (Environment.use_flagtune)
    env[FLAGTUNE_VAR] = c.use_flagtune or env.get(FLAGTUNE_VAR) or DEFAULT_FLAGTUNE
    env.pop(REUSE_TUNING_DB, None)  # only this batch's own setting decides
    if c.reuse_tuning_db and c.replay_root is None:
        env[REUSE_TUNING_DB] = "1"  # FlagGems' persistent DB (execute.worker)
    return env


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


__all__ = ["SlotWorkers", "slot_gpus"]
