"""Failures that many ops of a batch share: a broken compiler, not broken ops.

Why (measured on the H200, docs/measurements.md): under a compiler whose launcher
fails, every pointwise op failed at the same line; retrying each of them, then
rescuing it with another dtype, made a 110 s gate take 580 s, and the report never
said once what was broken. Here each failed attempt's error signature
(:mod:`zlbench.runner.execute.failsig`) is counted per op; once
:data:`SYSTEMIC_OPS` different ops share one, it is *systemic*: ops failing with it
are not retried (:func:`zlbench.runner.batch.retry.next_attempt`), and
``batch.json`` lists it (``systemic``) with one line the reports lead with.

Thread-safe: the batch's worker threads report into one tracker.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Iterable
from pathlib import Path

from zlbench.models import OpStatus, RunStatus
from zlbench.models.batch import SystemicFailure
from zlbench.protocol.boundary import runner_line
from zlbench.protocol.layout import RUN_LOG, op_key
from zlbench.runner.execute.failsig import signature
from zlbench.runner.execute.worker import NOT_MEASURED

SYSTEMIC_OPS = 3  # different ops failing with one signature make it systemic


class SystemicTracker:
    def __init__(self, threshold: int = SYSTEMIC_OPS):
        self.threshold = threshold
        self.lock = threading.Lock()
        self.ops: dict[str, set[str]] = {}  # signature -> op keys that failed with it

    def observe(self, key: str, sig: str) -> bool:
        """Count one failed attempt of op ``key``; True when ``sig`` is now systemic."""
        if not sig:
            return False
        with self.lock:
            self.ops.setdefault(sig, set()).add(key)
            return len(self.ops[sig]) >= self.threshold


def systemic_failures(
    statuses: Iterable[OpStatus], threshold: int = SYSTEMIC_OPS
) -> list[SystemicFailure]:
    """The signatures at least ``threshold`` ops ended with, most ops first (from the
    final ops_status rows, so a merge of shards counts across them)."""
    by_sig: dict[str, list[OpStatus]] = {}
    for st in statuses:
        if st.signature:
            by_sig.setdefault(st.signature, []).append(st)
    out = []
    for sig, sts in by_sig.items():
        if len(sts) < threshold:
            continue
        keys = sorted(op_key(s.repo, s.run_name) for s in sts)
        not_run = sum(s.note.startswith(NOT_MEASURED) for s in sts)
        out.append(
            SystemicFailure(
                signature=sig, ops=keys, not_run=not_run, line=_line(sig, keys, not_run)
            )
        )
    return sorted(out, key=lambda f: (-len(f.ops), f.signature))


def not_measured(statuses: Iterable[OpStatus]) -> list[str]:
    """Keys of the ops never run (a ``NOT MEASURED`` note: budget spent, systemic), sorted."""
    return sorted(op_key(s.repo, s.run_name) for s in statuses if s.note.startswith(NOT_MEASURED))


def _line(sig: str, keys: list[str], not_run: int) -> str:
    """``13 ops fail the same way: SystemError in triton/...:328 (5 of them not run)``."""
    tail = f" ({not_run} of them not run)" if not_run else ""
    return f"{len(keys)} ops fail the same way under the compiler under test: {sig}{tail}"


def run_signature(status: OpStatus, run_dir: Path) -> str:
    """The signature of a failed attempt from its note and run.log ("" if none)."""
    try:
        text = (Path(run_dir) / RUN_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return signature(status.status, status.rc, status.note, text) or ""


def internal_error_status(track, gpu: str, exc: BaseException) -> OpStatus:
    """ERROR of the op in hand when the runner itself failed (a bug): the traceback
    goes to its run.log, one line to the note; the batch goes on."""
    kind = type(exc).__name__
    run_dir = Path(track.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(runner_line("internal runner error") + "\n")
        log.write("".join(traceback.format_exception(exc)))
    return OpStatus(
        repo=track.sel.repo,
        op=track.sel.op,
        run_name=track.sel.run_name,
        status=RunStatus.ERROR,
        attempts=1,
        gpu=gpu,
        run_dir=str(run_dir),
        note=f"internal runner error: {kind}: {exc}"[:300],
        signature=f"internal runner error: {kind}",
    )
