"""zlbench's marker lines: the plugins print them, the runner and the parser read them.

A marker line is :meth:`zlbench.models.Marker.line` (the writer), e.g.
``AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=mm_kernel`` or
``BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=...``; this module reads
them back (:func:`markers_in_line`, :func:`parse_marker_line`). What each
marker means for a verdict: docs/design.md.
"""

from __future__ import annotations

import re

from zlbench.models import Marker, MarkerKind

_MARKER_TOKEN_RE = re.compile(
    r"(" + "|".join(re.escape(k.value) for k in MarkerKind) + r")(?=\s|$)"
)
_FALLBACK_FIELDS_RE = re.compile(r"\s+reason=(?P<reason>[\w.]+)(?:\s+kernel=(?P<kernel>\S+))?")
_NO_GRAPH_FIELDS_RE = re.compile(r"\s+phase=(?P<phase>\w+)\s+reason=(?P<reason>.*)", re.S)


def _fallback_marker(fields: str) -> Marker | None:
    m = _FALLBACK_FIELDS_RE.match(fields)
    if m is None:
        return None
    return Marker(kind=MarkerKind.REPLAY_FALLBACK, reason=m["reason"], kernel=m["kernel"])


def _no_graph_marker(fields: str) -> Marker | None:
    m = _NO_GRAPH_FIELDS_RE.match(fields)
    if m is None:
        return None
    return Marker(kind=MarkerKind.NO_CUDAGRAPH, phase=m["phase"], reason=m["reason"].strip())


_FIELD_PARSERS = {
    MarkerKind.REPLAY_FALLBACK: _fallback_marker,
    MarkerKind.NO_CUDAGRAPH: _no_graph_marker,
}


def markers_in_line(line: str) -> list[Marker]:
    """Every marker in one line of output, in order.

    A marker may start anywhere in the line, even glued to other text: pytest's
    ``.`` progress, a node id, or C-level output written into the middle of a
    Python-buffered line may precede it. ``AUTOTUNE_REPLAY_FALLBACK`` needs
    ``reason=<word>``; ``kernel=`` is one token and text after it is ignored.
    ``BENCHMARK_DIRECT_NO_CUDAGRAPH``'s reason runs to the end of the line (or to
    the next marker on it). Lines that only mention a token, e.g. the source line
    ``print(f"AUTOTUNE_REPLAY_FALLBACK reason={r}")`` in a traceback, are not markers.
    """
    found = list(_MARKER_TOKEN_RE.finditer(line))
    out = []
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(line)
        marker = _FIELD_PARSERS[MarkerKind(m[1])](line[m.end() : end])
        if marker is not None:
            out.append(marker)
    return out


def parse_marker_line(line: str) -> Marker | None:
    """The first marker in ``line`` (see :func:`markers_in_line`), or None.

    Round trip: ``parse_marker_line(m.line()) == m`` for a marker without
    dtype/shape_detail whose kernel id is one token and whose reason is one line
    without surrounding whitespace (use :func:`one_line`).
    """
    found = markers_in_line(line.rstrip("\r\n"))
    return found[0] if found else None
