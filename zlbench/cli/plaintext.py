"""A renderer's markdown as plain text for a terminal (``compare`` on a TTY): tables as
aligned columns, code spans and bold as their text, backslash escapes undone. The
renderers return markdown (``zlbench.report``); this is only how the CLI shows it to a
person at a terminal. The text was escaped for markdown and for logs already
(:mod:`zlbench.report.escape`): undoing the markdown escapes brings back no control or
bidi character (those were removed or shown as escapes before).
"""

from __future__ import annotations

import re

from zlbench.report.escape import WJ  # the renderers' word joiner (breaks @-mentions, URLs)

_SEPARATOR = re.compile(r"^:?-{3,}:?$")


def inline(text: str) -> str:
    """One markdown line's text: ``\\|`` -> ``|``, a code span -> its content,
    ``**bold**`` -> ``bold``."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and not text[i + 1].isalnum() and not text[i + 1].isspace():
            out.append(text[i + 1])
            i += 2
        elif c == "`":
            j = i
            while j < n and text[j] == "`":
                j += 1
            fence = text[i:j]
            end = text.find(fence, j)
            if end < 0:
                out.append(fence)
                i = j
                continue
            body = text[j:end].replace("\\|", "|")
            if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
                body = body[1:-1]
            out.append(body)
            i = end + len(fence)
        elif text.startswith("**", i):
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out).replace(WJ, "")


def _cells(line: str) -> list[str]:
    """A GFM table line's cells, split at the ``|`` that are not escaped."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells, cur, i = [], [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cur.append(body[i : i + 2])
            i += 2
            continue
        if body[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(body[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _table(lines: list[str]) -> list[str]:
    rows = [_cells(line) for line in lines]
    right: list[bool] = []
    if len(rows) > 1 and all(_SEPARATOR.match(c) for c in rows[1]):
        right = [c.endswith(":") for c in rows[1]]
        rows = [rows[0], *rows[2:]]
    rows = [[inline(c) for c in r] for r in rows]
    width = max(len(r) for r in rows)
    widths = [max((len(r[k]) for r in rows if k < len(r)), default=0) for k in range(width)]
    out = []
    for r in rows:
        cells = [
            (c.rjust(widths[k]) if k < len(right) and right[k] else c.ljust(widths[k]))
            for k, c in enumerate(r)
        ]
        out.append("  ".join(cells).rstrip())
    return out


def md_to_text(markdown: str) -> str:
    """``markdown`` (a renderer's output) as plain text."""
    lines, out, block = markdown.split("\n"), [], []
    for line in lines:
        if line.lstrip().startswith("|"):
            block.append(line)
            continue
        if block:
            out += _table(block)
            block = []
        out.append(inline(line))
    if block:
        out += _table(block)
    return "\n".join(out)
