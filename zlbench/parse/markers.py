"""Every marker line in a whole output (the line grammar: :mod:`zlbench.protocol.markers`)."""

from __future__ import annotations

from zlbench.models import Marker
from zlbench.parse.text import split_lines, strip_ansi
from zlbench.protocol.markers import markers_in_line


def find_markers(text: str) -> list[Marker]:
    """Every marker in ``text`` (ANSI codes are ignored), in order."""
    out: list[Marker] = []
    for line in split_lines(strip_ansi(text)):
        out.extend(markers_in_line(line))
    return out
