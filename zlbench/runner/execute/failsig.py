"""The error signature of a failed op: what makes two failures "the same failure".

Why: when the compiler under test is broken, most ops fail identically (the same
exception raised at the same line of triton's launcher, the same signal, or the
same pytest error before any op began). Retrying such a failure op after op
costs minutes and tells nothing new; a signature lets the batch stop retrying it
and lets the report say once what is broken (docs/architecture.md, "Systemic
failures"). Pure: text in, one short string out.

Signatures:

* ``SystemError in triton/backends/nvidia/driver.py:328``: exception type and the
  innermost frame of the exception a test raised, as the plugin printed it into
  the op's segment (``ZLBENCH_OP_ERROR``, :mod:`zlbench.protocol.boundary`; pytest
  prints the traceback only after the op's END); else the innermost location of
  the last traceback in the op's log (pytest's ``path:line: ExcType`` lines, else
  Python's ``File "path", line N``).
* ``signal 11 (SIGSEGV)``: a process killed by a signal, no traceback.
* ``pytest exit code 4 before the op began: ImportError while loading conftest``:
  the process ended before the op began; its first error line.
"""

from __future__ import annotations

import re
import signal

from zlbench.models import RunStatus
from zlbench.protocol.boundary import find_error
from zlbench.protocol.signature import OUTCOMES, location

# pytest long traceback: "/abs/path/driver.py:328: SystemError"
_PYTEST_LOC = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+): (?P<exc>[A-Za-z_][\w.]*)\s*$")
# Python traceback: '  File "/abs/path/driver.py", line 328, in launch'
_PY_FILE = re.compile(r'^\s*File "(?P<path>[^"]+\.py)", line (?P<line>\d+)')
# Python exception line after a traceback: "SystemError: <built-in ...> returned NULL"
_PY_EXC = re.compile(r"^(?:E\s+)?(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b")
_BEFORE = re.compile(r"pytest (?P<how>exit code -?\d+|killed by signal \d+) before the op began")
_FIRST_ERROR = re.compile(r"(^E\s+\S)|(\w+(Error|Exception)\b)|(^ERROR\b)|(\berror:)")
MAX_LINE = 160


def plugin_signature(text: str) -> str | None:
    """The signature of the last ``ZLBENCH_OP_ERROR`` line in ``text``; None without."""
    for line in reversed(text.splitlines()):
        found = find_error(line)
        if found:
            return found[1]
    return None


def traceback_location(text: str) -> str | None:
    """``ExcType in path:line`` of the last traceback in ``text``; None without one."""
    lines = text.splitlines()
    for line in reversed(lines):
        m = _PYTEST_LOC.match(line.strip())
        exc = m["exc"].rsplit(".", 1)[-1] if m else ""
        if m and exc not in OUTCOMES:
            return location(exc, m["path"], m["line"])
    where = None
    for i, line in enumerate(lines):
        m = _PY_FILE.match(line)
        if m:
            where = (m["path"], m["line"], i)
    if where is None:
        return None
    for line in lines[where[2] + 1 :]:
        e = _PY_EXC.match(line.strip())
        if e:
            return location(e["exc"], where[0], where[1])
    return None


def first_error_line(text: str) -> str:
    """The first line of ``text`` that reads like an error (pytest's ``E`` lines, an
    ``...Error``), trimmed; else ``""``."""
    for line in text.splitlines():
        s = line.strip()
        if s and _FIRST_ERROR.search(s):
            s = re.sub(r"^E\s+", "", s)
            s = re.sub(r"'[^']*/([^'/]+)'", r"'\1'", s)  # paths differ between ops' dirs
            return s[:MAX_LINE]
    return ""


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def signature(status: RunStatus, rc: int | None, note: str, log_text: str) -> str | None:
    """The signature of one failed attempt; None for PASS/SKIP/TIMEOUT (a timeout is
    never retried and names no cause)."""
    if status not in (RunStatus.FAIL, RunStatus.CRASH, RunStatus.ERROR):
        return None
    before = _BEFORE.search(note or "")
    if before:
        first = first_error_line(log_text)
        return f"pytest {before['how']} before the op began" + (f": {first}" if first else "")
    where = plugin_signature(log_text) or traceback_location(log_text)
    if where:
        return where
    if rc is not None and rc < 0:
        return f"signal {-rc} ({_signal_name(-rc)})"
    if "killed by signal" in (note or ""):
        n = re.search(r"killed by signal (\d+)", note)
        return f"signal {n[1]} ({_signal_name(int(n[1]))})" if n else None
    return None
