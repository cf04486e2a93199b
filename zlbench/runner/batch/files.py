"""The batch dir's own files and its progress stream, behind one lock.

:class:`BatchFiles` holds the ops' final statuses and writes what follows from them:
``ops_status.csv`` (rewritten atomically each time an op becomes final, so a killed
batch leaves a complete, valid file), the row parts' ``.parts/ops_status.csv``, the run
dirs' ``.complete`` markers, ``batch.json``, ``gpu_turns.csv`` and, after a run of it was
interrupted (SIGINT, SIGTERM), ``INTERRUPTED`` (its ops_status.csv is partial). The
progress lines go through the same lock: an op's done line and its CSV rewrite are one
step, and lines of different worker threads never interleave.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from zlbench import __version__
from zlbench.gate.baselines import sha256_file
from zlbench.models import BatchInfo, DismissedOp, OpStatus, RunStatus
from zlbench.protocol.layout import (
    COMPLETE,
    GPU_TURNS_CSV,
    INTERRUPTED,
)
from zlbench.protocol.turn import TURN_LOG_HEADER
from zlbench.runner.batch import progress
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import read_batch_info, write_batch_info
from zlbench.runner.batch.parts import PARTS_DIR
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.batch.turns import parse_turns, summarize_turns, turns_lines
from zlbench.runner.catalog.select import OpSelection


class BatchFiles:
    """The final statuses of a batch in ``out`` and the files written from them."""

    def __init__(self, out: Path, stream: TextIO | None, t0: float):
        self.out = out
        self.stream = stream  # the progress lines (None: silent)
        self.t0 = t0  # the batch's start (time.monotonic), for the done lines
        self.lock = threading.Lock()
        self.final: dict[str, OpStatus] = {}
        self.done = 0  # ops made final by this run's attempts
        self.total = 0  # ops this run measures
        # the ops' expected seconds, for an ETA corrected by the ops done (coordinator)
        self.expected: progress.Expected | None = None

    # ------------------------------------------------------------------ progress

    def say(self, line: str) -> None:
        with self.lock:
            progress.say(self.stream, line)

    # ------------------------------------------------------------------ statuses

    def write_status(self) -> None:
        """ops_status.csv from the final statuses as they stand."""
        with self.lock:
            write_ops_status(self.out, self.final.values())

    def op_final(self, key: str, status: OpStatus, run_dir: Path) -> None:
        """An op measured by this run is final: its ``.complete`` (PASS, SKIP), its row
        in ops_status.csv and its done line."""
        mark_complete(run_dir, status)
        with self.lock:
            self.final[key] = status
            self.done += 1
            write_ops_status(self.out, self.final.values())
            elapsed = time.monotonic() - self.t0
            if self.expected is not None:
                self.expected.op_done(key, status.seconds)
            line = progress.done_line(status, self.done, self.total, elapsed, self.expected)
            progress.say(self.stream, line)

    def parts_merged(
        self, key: str, part_keys: list[str], status: OpStatus, kept: dict[str, OpStatus]
    ) -> None:
        """The row parts ``part_keys`` became the op ``key``: their rows move to
        ``.parts/ops_status.csv`` (``kept``: the parts' rows there, updated), the op's
        row takes their place in ops_status.csv."""
        with self.lock:
            kept |= {k: self.final.pop(k) for k in part_keys}
            write_ops_status(self.out / PARTS_DIR, kept.values())
            self.final[key] = status
            write_ops_status(self.out, self.final.values())

    def sorted_statuses(self) -> list[OpStatus]:
        return sorted(self.final.values(), key=lambda s: (s.repo, s.run_name))

    # ------------------------------------------------------------------ interrupted

    def mark_interrupted(self) -> None:
        """``INTERRUPTED``: this run stopped early; best effort (the batch is unwinding)."""
        with self.lock:
            decided, total = self.done, self.total
        text = (
            "interrupted: partial\n"
            f"{decided} of {total} op(s) of this run decided before the stop; "
            "ops_status.csv lists only the decided ones, the others were not measured\n"
        )
        with contextlib.suppress(OSError):
            (self.out / INTERRUPTED).write_text(text, encoding="utf-8")

    def clear_interrupted(self) -> None:
        with contextlib.suppress(OSError):
            (self.out / INTERRUPTED).unlink(missing_ok=True)

    # ------------------------------------------------------------------ batch.json

    def read_info(self) -> BatchInfo | None:
        return read_batch_info(self.out)

    def write_info(self, info: BatchInfo) -> None:
        write_batch_info(self.out, info)

    # ------------------------------------------------------------------ gpu_turns.csv

    @contextlib.contextmanager
    def turns(self, share: int) -> Iterator[str | None]:
        """With ``share`` > 1: the GPUs' turn files (a temp dir, yielded) and the turn
        log's header, for as long as the workers run; else None."""
        if share <= 1:
            yield None
            return
        log = self.out / GPU_TURNS_CSV
        if not log.is_file():
            log.write_text(TURN_LOG_HEADER + "\n", encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="zl-gpu-turn-") as turn_dir:
            self.say(f"batch: {share} processes per GPU, timing in turns")
            yield turn_dir

    def turn_lines(self, share: int, wall: float) -> list[str]:
        """Per GPU of a shared batch: how much of the wall some process was timing."""
        path = self.out / GPU_TURNS_CSV
        if share <= 1 or not path.is_file():
            return []
        since = time.time() - wall  # this run's turns (--resume appends to the file)
        turns = [t for t in parse_turns(path.read_text("utf-8")) if t.start >= since]
        return turns_lines(summarize_turns(turns), wall)


def mark_complete(run_dir: Path, status: OpStatus) -> None:
    """``<run_dir>/.complete`` for an op that ended PASS or SKIP (what --resume keeps)."""
    if status.status in (RunStatus.PASS, RunStatus.SKIP):
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / COMPLETE).write_text(status.status.value + "\n", encoding="utf-8")


def batch_info(config: BatchConfig, selection: OpSelection) -> BatchInfo:
    """batch.json as the batch starts: how it measures and what it selected (the
    config's option models, :meth:`BatchInfo.from_options`)."""
    c = config
    return BatchInfo.from_options(
        *c.options(),
        replay_root=str(c.replay_root) if c.replay_root else None,
        restricted=c.restrict_to is not None,
        op_timeout_s=c.op_timeout(),
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        argv=list(c.argv),
        shape_file_sha256=_sha256(c.shape_file),
        shard=f"{c.shard[0]}/{c.shard[1]}" if c.shard else None,
        budget_s=c.budget_s,
        resume=c.resume,
        flaggems_dirs={k: str(v) for k, v in c.flaggems_dirs.items()},
        hostname=socket.gethostname(),
        zlbench_version=__version__,
        ops=list(dict.fromkeys(o.whole_key for o in selection.ops)),
        dismissed=[
            DismissedOp(key=o.key, date=e.when, reason=e.reason) for o, e in selection.dismissed
        ],
        skipped=[o.key for o in selection.skipped],
    )


def _sha256(path) -> str | None:
    if not path:
        return None
    try:
        return sha256_file(Path(path))
    except OSError:
        return None
