"""Normalise compiler output text so that the same compiler gives the same bytes on
any machine (docs/codegen.md, "Normalisation").

Removed: MLIR source locations (``loc(...)`` suffixes and ``#locN = loc(...)``
definitions) from TTIR/TTGIR; debug metadata (``!dbg`` attachments, ``!DI*``
nodes, the debug-info module flag) from LLIR; ``.file`` / ``.loc`` directives
and ``.debug_*`` sections from PTX; in every stage, any occurrence of the given
machine roots (site-packages, the FlagGems checkout, the cache dir...) becomes
``<root>``. Everything else, comments included, is kept as the compiler wrote it.

Pure: no triton import; used by the recording plugin and the rebuild worker alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LOC_DEF = re.compile(r"^#loc\d*\s*=\s*loc\(")
_DBG_ATTACH = re.compile(r",?\s*!dbg !\d+")
_LLVM_DEBUG_LINE = re.compile(
    r"^(!\d+ = (distinct )?!DI|!llvm\.dbg\.cu = "
    r'|!\d+ = !\{i32 \d+, !"(Debug Info Version|Dwarf Version)")'
)
_PTX_DROP = re.compile(r"^\s*\.(file|loc)\s")
_PTX_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug_")
_SASS_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(\S.*?)\s*;")


def _skip_parens(text: str, i: int) -> int:
    """Index just past the ``)`` matching the ``(`` at ``text[i]`` (quotes respected)."""
    depth, quoted = 0, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def strip_mlir_locs(line: str) -> str:
    """One MLIR line without its `` loc(...)`` parts."""
    out, start = [], 0
    while True:
        j = line.find("loc(", start)
        if j < 0:
            break
        if j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_.#"):
            out.append(line[start : j + 4])  # e.g. "alloc(": not a location
            start = j + 4
            continue
        cut = j
        while cut > start and line[cut - 1] == " ":
            cut -= 1
        out.append(line[start:cut])
        start = _skip_parens(line, j + 3)
    out.append(line[start:])
    return "".join(out)


def normalise_mlir(text: str) -> str:
    lines = [strip_mlir_locs(ln) for ln in text.splitlines() if not _LOC_DEF.match(ln)]
    return "\n".join(lines) + "\n"


def normalise_llir(text: str) -> str:
    lines = [_DBG_ATTACH.sub("", ln) for ln in text.splitlines() if not _LLVM_DEBUG_LINE.match(ln)]
    return "\n".join(lines) + "\n"


def normalise_ptx(text: str) -> str:
    out: list[str] = []
    depth, in_debug = 0, False
    for ln in text.splitlines():
        if not in_debug and _PTX_DEBUG_SECTION.match(ln):
            in_debug, depth = True, 0
        if in_debug:
            depth += ln.count("{") - ln.count("}")
            if depth <= 0 and "}" in ln:
                in_debug = False
            continue
        if not _PTX_DROP.match(ln):
            out.append(ln)
    return "\n".join(out) + "\n"


def normalise_sass(text: str) -> str:
    """cuobjdump -sass output without blank lines and trailing blanks."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines) + "\n"


def sass_instruction_count(sass: str) -> int:
    """Instructions in a SASS listing, NOPs (alignment padding) excluded."""
    n = 0
    for ln in sass.splitlines():
        m = _SASS_INSTR.match(ln)
        if m and m.group(1).split()[0] != "NOP":
            n += 1
    return n


_BY_STAGE = {
    "ttir": normalise_mlir,
    "ttgir": normalise_mlir,
    "llir": normalise_llir,
    "ptx": normalise_ptx,
    "sass": normalise_sass,
}


def scrub_roots(text: str, roots: Iterable[str]) -> str:
    """Replace each machine root (longest first) by ``<root>``."""
    for root in sorted({r.rstrip("/") for r in roots if r and len(r) > 1}, key=len, reverse=True):
        text = text.replace(root, "<root>")
    return text


def normalise(stage: str, text: str, roots: Iterable[str] = ()) -> str:
    """The normalised text of one stage's output (see the module doc)."""
    return scrub_roots(_BY_STAGE[stage](text), roots)
