"""Terminal output of a zlbench-run pytest process: colour control, quiet header, summary.

Why: the runner owns the process's stdout (it tees it to the terminal and
writes run.log without ANSI codes), so pytest's own idea of "is this a tty"
is wrong there: ``--zl-color yes`` keeps colour when the runner's terminal
is a tty, ``no`` keeps the stream plain. pytest's session header (platform,
rootdir, plugin list) repeats in every op's run.log and is dropped under a
plan unless ``--zl-verbose-header``. At the end, one line per plan entry
says what was measured.
"""

from __future__ import annotations

import pytest

from zlbench.models import count_markers
from zlbench.plugins import state
from zlbench.plugins.state import entry_status
from zlbench.protocol import options

_STATUS_MARKUP = {"PASS": {"green": True}, "FAIL": {"red": True}, "SKIP": {"yellow": True}}


def summary_lines(ops: list[state.OpState]) -> list[tuple[str, str]]:
    """(text, status) per finished entry; pure."""
    out = []
    for op in ops:
        status = entry_status(op.outcomes, len(op.rows), op.poisoned).value
        counts = count_markers(op.markers)
        markers = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "no markers"
        failing = f", failing shape {op.failing_shape}" if op.failing_shape else ""
        text = f"{op.entry.run_name:<24} {status:<5} {len(op.rows)} rows, {markers}{failing}"
        out.append((text, status))
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    color = options.get(config, "color")
    if color != "auto":
        config.option.color = color
    if options.get(config, "plan") and not options.get(config, "verbose-header"):
        config.option.no_header = True


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    session = state.session_of(config)
    if session is None or not session.finished:
        return
    terminalreporter.section("zlbench")
    for text, status in summary_lines(session.finished):
        terminalreporter.line(text, **_STATUS_MARKUP.get(status, {}))
