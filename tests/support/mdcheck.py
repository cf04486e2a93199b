"""A small CommonMark/GFM reader for the report tests: fenced blocks, code spans,
tables, and what is left as live markdown once those are taken out; and the start tags
of an HTML report."""

from __future__ import annotations

import re
from html.parser import HTMLParser

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def fences(md: str) -> tuple[list[tuple[int, str, list[str]]], bool]:
    """(start line, info string, body lines) of every fenced block, and whether the
    last one was closed (CommonMark: a closing fence has the opening's character,
    at least its length and no info string)."""
    out, cur, closed = [], None, True
    for i, line in enumerate(md.splitlines()):
        m = FENCE.match(line)
        if cur is None:
            if m:
                cur = (i, m.group(2), m.group(3).strip(), [])
                closed = False
            continue
        if (
            m
            and m.group(2)[0] == cur[1][0]
            and len(m.group(2)) >= len(cur[1])
            and not m.group(3).strip()
        ):
            out.append((cur[0], cur[2], cur[3]))
            cur, closed = None, True
        else:
            cur[3].append(line)
    if cur is not None:
        out.append((cur[0], cur[2], cur[3]))
    return out, closed


def outside_fences(md: str) -> list[str]:
    """The lines that are not inside a fenced block (fence lines dropped)."""
    lines, inside, opener = [], False, ""
    for line in md.splitlines():
        m = FENCE.match(line)
        if not inside and m:
            inside, opener = True, m.group(2)
            continue
        if inside:
            if (
                m
                and m.group(2)[0] == opener[0]
                and len(m.group(2)) >= len(opener)
                and not m.group(3).strip()
            ):
                inside = False
            continue
        lines.append(line)
    return lines


def strip_code_spans(line: str) -> str:
    """``line`` without its inline code spans (matching backtick runs)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            out.append(line[i : i + 2])
            i += 2
            continue
        if line[i] == "`":
            n = len(line[i:]) - len(line[i:].lstrip("`"))
            run = "`" * n
            end = line.find(run, i + n)
            while end != -1 and (line[end + n : end + n + 1] == "`" or line[end - 1] == "`"):
                end = line.find(run, end + 1)
            if end != -1:
                i = end + n
                continue
            out.append(run)
            i += n
            continue
        out.append(line[i])
        i += 1
    return "".join(out)


def live_text(md: str) -> list[str]:
    """Lines as markdown would interpret them: outside fences, code spans removed,
    backslash escapes removed (an escaped character is plain text)."""
    return [re.sub(r"\\.", "", strip_code_spans(line)) for line in outside_fences(md)]


def tables(md: str) -> list[list[str]]:
    out, cur = [], []
    for line in outside_fences(md):
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line)) - 2


class StartTags(HTMLParser):
    """Every start tag of an HTML document fed to it, with its attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
