"""``zlbench_cli(*argv)``: ``python -m zlbench ARGV`` in a child process, its output
captured as text (a ``proc`` test's way to see the exit code and the one-line errors)."""

from __future__ import annotations

import subprocess
import sys


def zlbench_cli(*argv: str, **kw) -> subprocess.CompletedProcess:
    """The finished child; ``kw`` goes to :func:`subprocess.run` (env, timeout, cwd)."""
    return subprocess.run(
        [sys.executable, "-m", "zlbench", *argv], capture_output=True, text=True, **kw
    )
