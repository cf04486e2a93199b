"""What the CLI prints can never be a GitHub workflow command.

The judge job prints op names, error text and paths that come from artifacts a
PR's compiler wrote. The runner reads every line of a step's stdout and stderr
(a line ends at ``\\n``, ``\\r`` or ``\\r\\n``) and obeys one that starts, after
leading whitespace, with ``::`` (``::add-mask::``, ``::warning::``,
``::stop-commands::``), and the old ``##[command]`` form. :func:`log_safe` breaks
both with an invisible word joiner (the text reads the same); :func:`safe_streams`
puts every write to ``sys.stdout`` / ``sys.stderr`` through it while a command
runs, so no print anywhere below the CLI can forget it (docs/ci.md "What the
judge trusts"). zlbench itself never prints a workflow command (ci/gha.py does,
outside the CLI).
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

from zlbench.report.escape import WJ

_BREAK = re.compile(r"(\r\n|\r|\n)")
_START = re.compile(r"^(\s*):(?=:)")  # Python's \s holds every char .NET's TrimStart drops


def log_safe(text: str, line_so_far: str = "") -> str:
    """``text`` as it may be printed after ``line_so_far`` (what its line already
    holds): no line of the result reads as a workflow command."""
    parts = _BREAK.split(text)
    for i in range(0, len(parts), 2):
        before = line_so_far if i == 0 else ""
        parts[i] = _segment(before, parts[i])
    return "".join(parts).replace("##[", "#" + WJ + "#[")


def _segment(before: str, seg: str) -> str:
    head = before.lstrip()
    if not head:
        return _START.sub(r"\1:" + WJ, seg)
    if head == ":" and seg.startswith(":"):
        return WJ + seg
    return seg


class LogSafeStream:
    """A text stream that writes through :func:`log_safe`, keeping track of the
    line it is in (a command split over two writes is caught too)."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._line = ""  # the tail of the current line (a few characters suffice)
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._stream.write(log_safe(text, self._line))
            tail = _BREAK.split(self._line + text)[-1]
            self._line = tail if not tail.strip() else tail.lstrip()[:2]
        return len(text)

    def __getattr__(self, name: str):  # flush, isatty, fileno, encoding, ...
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` written through :func:`log_safe` inside."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = LogSafeStream(saved[0]), LogSafeStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
