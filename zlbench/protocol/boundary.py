"""The lines that frame each op in a pytest process's output, and the runner's notes.

The plugins print ``ZLBENCH_OP_BEGIN run_name=<n>`` before an op's first test
and ``ZLBENCH_OP_END run_name=<n> status=<S>`` after its last
(:func:`begin_line`, :func:`end_line`); the runner finds them
(:func:`find_begin`, :func:`find_end`) to split the stream into per-op run.log
files and to know which op was in flight when a process died. The lines may
appear mid-line (with ``-s`` pytest prints test output right after the file
name), so they are searched, not matched. The runner writes its own verdicts
into run.log as ``ZLBENCH_RUNNER ...`` lines (:func:`runner_line`).

When a test of an op fails, the plugins print ``ZLBENCH_OP_ERROR run_name=<n>
signature=<s>`` inside the op's segment, before its END (:func:`error_line`,
:func:`find_error`): pytest prints the traceback itself only in its end-of-session
summary, after the END, so without this line the op's run.log names no cause and
the runner cannot tell a broken compiler from broken ops
(:mod:`zlbench.protocol.signature`).
"""

from __future__ import annotations

import re

BEGIN = "ZLBENCH_OP_BEGIN"
END = "ZLBENCH_OP_END"
RUNNER = "ZLBENCH_RUNNER"
ERROR = "ZLBENCH_OP_ERROR"
# an op-end hook still running after a while: where an op that printed all of its rows
# and its pass mark spends its time (two TIMEOUTs on the H200, 2026-12-02)
SLOW_HOOK = "ZLBENCH_OP_HOOK_SLOW"

_BEGIN_RE = re.compile(BEGIN + r" run_name=(\S+)")
_END_RE = re.compile(END + r" run_name=(\S+) status=(\w+)")
_ERROR_RE = re.compile(ERROR + r" run_name=(\S+) signature=(.*\S)")


def begin_line(run_name: str) -> str:
    return f"{BEGIN} run_name={run_name}"


def end_line(run_name: str, status: str) -> str:
    return f"{END} run_name={run_name} status={status}"


def find_begin(line: str) -> str | None:
    """The run name of the BEGIN line in ``line`` (ANSI already stripped), or None."""
    m = _BEGIN_RE.search(line)
    return m.group(1) if m else None


def find_end(line: str) -> tuple[str, str] | None:
    """``(run_name, status)`` of the END line in ``line``, or None."""
    m = _END_RE.search(line)
    return (m.group(1), m.group(2)) if m else None


def error_line(run_name: str, signature: str) -> str:
    """The line naming why a test of op ``run_name`` failed (one line, whitespace
    runs folded)."""
    return f"{ERROR} run_name={run_name} signature={' '.join(signature.split())}"


def find_error(line: str) -> tuple[str, str] | None:
    """``(run_name, signature)`` of the ERROR line in ``line``, or None."""
    m = _ERROR_RE.search(line)
    return (m.group(1), m.group(2)) if m else None


def slow_hook_line(run_name: str, hook: str, after_s: float) -> str:
    return f"{SLOW_HOOK} run_name={run_name} hook={hook} after={after_s:g}s"


def runner_line(text: str) -> str:
    """A line the runner itself writes into a run.log."""
    return f"{RUNNER} {text}"
