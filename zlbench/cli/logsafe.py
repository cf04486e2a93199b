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

The same streams show every invisible character a name from input may carry (bidi
overrides such as U+202E, which make a log line read other than it is; C0/C1 controls
but tab, newline, carriage return and the escape of terminal colours) as its escape
(``\\u202e``): :func:`shown`. A newline inside a name cannot be told from a line
break here: the one-line messages (the error line, warnings, ``baseline verify``'s
file names) pass their names through :func:`zlbench.report.escape.log_escape`.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

from zlbench.report.escape import WJ, log_escape

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


# what :func:`shown` escapes: controls but \t \n \r and ESC, C1, bidi and invisible marks
_HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\u061c\u200e\u200f"
    "\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff\ud800-\udfff]"
)


def shown(text: str) -> str:
    """``text`` with each bidi control, invisible mark or stray control character as
    its escape (``\\u202e``); line breaks, tabs and terminal colours kept."""
    return _HIDDEN.sub(lambda m: log_escape(m.group()), text)


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
            self._stream.write(log_safe(shown(text), self._line))
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
