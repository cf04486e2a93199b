"""Split one pytest process's output into per-op ``run.log`` files.

The plugins print ``ZLBENCH_OP_BEGIN run_name=<n>`` before an op's first test
and ``ZLBENCH_OP_END run_name=<n> status=<S>`` after its last
(:mod:`zlbench.protocol.boundary`). Lines from a
BEGIN to its END go to that op's ``run.log``; lines before the first BEGIN or
between ops (collection, the pytest header, module teardown) go to the next op
that begins; lines after the last END go to the op that ended last. Each line
is written (ANSI stripped) and flushed as it comes, so a crash keeps it.

Pure bookkeeping: no processes here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from zlbench.models import PlanEntry
from zlbench.protocol.boundary import END, find_begin, find_end, runner_line
from zlbench.protocol.faults import STICKY_FAULT_RE
from zlbench.protocol.layout import RUN_LOG
from zlbench.runner.execute.proc import strip_ansi


@dataclass
class LoggedOp:
    """One plan entry within one process."""

    entry: PlanEntry
    began: float | None = None
    ended: float | None = None
    end_status: str | None = None
    fault: str | None = None  # first device-fault line seen while it was in flight
    log: TextIO | None = field(default=None, repr=False)

    @property
    def run_dir(self) -> Path:
        return Path(self.entry.run_dir)

    def write(self, text: str) -> None:
        if self.log is None:
            self.log = open(self.run_dir / RUN_LOG, "a", encoding="utf-8")  # noqa: SIM115
        self.log.write(text + "\n")
        self.log.flush()

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def seconds(self, now: float | None = None) -> float:
        if self.began is None:
            return 0.0
        end = self.ended if self.ended is not None else (now or time.monotonic())
        return round(end - self.began, 3)


class OpLogSplitter:
    """Routes the lines of one process to the run.log of the op they belong to."""

    def __init__(self, entries: list[PlanEntry]):
        self.ops = {e.run_name: LoggedOp(e) for e in entries}
        self.current: LoggedOp | None = None
        self.last_ended: LoggedOp | None = None
        self.pending: list[str] = []  # text not yet owned by an op
        self.last_event = time.monotonic()  # process start, last BEGIN or last END

    def feed(self, line: str) -> tuple[str, LoggedOp] | None:
        """Take one raw line; return ("begin"|"end", op) when it was a marker line."""
        clean = strip_ansi(line)
        begin = find_begin(clean)
        if begin in self.ops:
            return "begin", self._begin(self.ops[begin], clean)
        end = find_end(clean)
        if end and end[0] in self.ops:
            return "end", self._end(self.ops[end[0]], end[1], clean)
        self._text(clean)
        return None

    def feed_text(self, line: str) -> None:
        """Take one raw line as plain text (marker lines are not interpreted)."""
        self._text(strip_ansi(line))

    def _text(self, clean: str) -> None:
        if self.current is not None:
            self.current.write(clean)
            if self.current.fault is None and STICKY_FAULT_RE.search(clean):
                self.current.fault = clean.strip()[:300]
        else:
            self.pending.append(clean)

    def _begin(self, op: LoggedOp, clean: str) -> LoggedOp:
        if self.current is not None and self.current is not op:
            # BEGIN without the previous END: the previous op's text stops here.
            self.current.write(runner_line(f"no {END} before the next op began"))
        self.flush_pending(op)
        op.began = self.last_event = time.monotonic()
        op.write(clean)
        self.current = op
        return op

    def _end(self, op: LoggedOp, status: str, clean: str) -> LoggedOp:
        op.write(clean)
        op.end_status = status
        op.ended = self.last_event = time.monotonic()
        if op.began is None:
            op.began = op.ended
        if self.current is op:
            self.current = None
        self.last_ended = op
        return op

    def flush_pending(self, op: LoggedOp) -> None:
        for text in self.pending:
            op.write(text)
        self.pending.clear()

    def in_flight(self) -> LoggedOp | None:
        return self.current

    def not_started(self) -> list[LoggedOp]:
        return [t for t in self.ops.values() if t.began is None]

    def finish(self) -> None:
        """At process end: trailing text goes to the last op that ended."""
        owner = self.current or self.last_ended
        if owner is not None:
            self.flush_pending(owner)

    def close(self) -> None:
        for t in self.ops.values():
            t.close()
