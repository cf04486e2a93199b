"""Note and warning lines of the catalog (old names, old formats): one line each, to the
caller's ``warn`` when it gives one, else to stderr once per process, since a command
resolves its selection more than once (preflight, plan, run)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from zlbench.report.escape import log_escape

Warn = Callable[[str], None]
_said: set[str] = set()


def note(line: str, warn: Warn | None = None) -> None:
    """Say ``line``: to ``warn``, else to stderr unless this process already said it.
    One line: the names from input in it shown escaped (report.escape.log_escape)."""
    line = log_escape(line)
    if warn is not None:
        warn(line)
    elif line not in _said:
        _said.add(line)
        print(line, file=sys.stderr)
