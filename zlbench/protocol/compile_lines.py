"""The compile workers' stdout lines: what a worker of the CPU compile pool
(:mod:`zlbench.codegen.pool`) prints and the pool reads.

Both workers of recorded kernels speak it: the batch's precompile
(``python -m zlbench.plugins.precompile``) and the codegen screen's rebuild
(``python -m zlbench.plugins.compiler.rebuild``). One line per item (a recorded compile
request, by its record id) as soon as it is done, flushed::

    ZLBENCH_COMPILED <id> ok
    ZLBENCH_COMPILED <id> failed <error, one line>

then one end line once the worker has done everything (its outputs written)::

    <END> kernels=N failed=F [<key>=<value> ...]

``END`` names the worker: ``ZLBENCH_PRECOMPILE`` or ``ZLBENCH_CODEGEN_REBUILD``. A
worker that printed no end line did not finish, whatever its exit code. Any other
stdout line is not the protocol's and is ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

ITEM = "ZLBENCH_COMPILED"
OK = "ok"
FAILED = "failed"
PRECOMPILE_END = "ZLBENCH_PRECOMPILE"
REBUILD_END = "ZLBENCH_CODEGEN_REBUILD"


def item_line(item_id: str, error: str | None = None) -> str:
    """``ZLBENCH_COMPILED <id> ok``, or ``... failed <error>`` (newlines folded)."""
    if error is None:
        return f"{ITEM} {item_id} {OK}"
    return f"{ITEM} {item_id} {FAILED} {' '.join(error.split())}"


def end_line(end: str, **fields: object) -> str:
    """``<end> k=v ...`` in the order given (``kernels`` and ``failed`` first, by
    convention)."""
    return " ".join([end, *(f"{k}={v}" for k, v in fields.items())])


def write_item(item_id: str, error: str | None = None, stream: TextIO | None = None) -> None:
    print(item_line(item_id, error), file=stream or sys.stdout, flush=True)


def write_end(end: str, stream: TextIO | None = None, **fields: object) -> None:
    print(end_line(end, **fields), file=stream or sys.stdout, flush=True)


@dataclass
class Report:
    """What one worker said: each item's error (None: done without one), in the order
    printed, and its end line's fields (None: it did not finish)."""

    items: dict[str, str | None] = field(default_factory=dict)
    end: dict[str, str] | None = None


def read_lines(lines: Iterable[str], end: str) -> Report:
    """The :class:`Report` of a worker's stdout whose end line is ``end``."""
    report = Report()
    for line in lines:
        line = line.rstrip("\r\n")
        head, _, rest = line.partition(" ")
        if head == ITEM:
            item_id, _, outcome = rest.partition(" ")
            status, _, error = outcome.partition(" ")
            if item_id and status in (OK, FAILED):
                report.items[item_id] = None if status == OK else error
        elif head == end:
            pairs = (token.partition("=") for token in rest.split())
            report.end = {k: v for k, _, v in pairs}
    return report
