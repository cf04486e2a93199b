"""A reader that stops early (``zlbench … | head``) ends the command quietly: no
``error: Broken pipe`` line, no traceback, the shell's status for a stopped pipe (141)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.trees import shipped

REPO = Path(__file__).resolve().parent.parent


def show_v3() -> list[str]:
    """`zlbench baseline show baselines/v3 --table`: a long output."""
    v3 = str(shipped("baselines/v3"))
    return [sys.executable, "-m", "zlbench", "baseline", "show", v3, "--table"]


def test_a_closed_stdout_is_a_quiet_stop():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line: every write raises EPIPE
    proc = subprocess.run(
        show_v3(),
        stdout=w,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        check=False,
    )
    os.close(w)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_an_open_stdout_still_gets_the_whole_table():
    proc = subprocess.run(
        show_v3(),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) > 50
