"""Escaping for every medium a report reaches: markdown, HTML, JUnit XML, workflow logs.

Every string that comes from an artifact (op names, shapes, error text, log
lines, environment values) is untrusted: a PR's compiler and benchmark code
wrote it. It passes through one of these functions before it is rendered:

* :func:`md_text` for prose in markdown: one line, markdown punctuation
  backslash-escaped (no raw HTML, links, images, emphasis or headings),
  @-mentions, bare URLs and issue references (``#4242``, ``org/repo#4242``,
  ``GH-4242``) broken with an invisible word joiner (:func:`neutralize`: GitHub
  autolinks the text a backslash escape leaves);
* :func:`md_code` for identifiers in markdown: an inline code span whose
  fence is longer than any run of backticks inside;
* :func:`md_fence` for multi-line text (log tails): a fenced block whose fence
  is longer than any backtick run it holds, lines that cannot start a
  ``::workflow-command::``;
* :func:`xml_text` for JUnit attributes and bodies: characters XML cannot hold
  removed, mentions, URLs and workflow commands neutralised (test-report
  actions copy them into annotations and check-run markdown);
* :func:`log_line` for anything printed to a CI log; :func:`log_escape` for a name
  from input inside a one-line message (an error, a warning, a file named by
  ``baseline verify``): every control, bidi or non-character shown as its escape
  (``\\n``, ``\\u202e``), so the message stays one line and reads as it is;
* :func:`mermaid_label` for chart labels; HTML goes through jinja2's autoescape
  and :func:`script_json`.
"""

from __future__ import annotations

import json
import re

WJ = "\u2060"  # word joiner: invisible, breaks a mention, a URL or a command prefix
# C0/C1 controls except tab and newline, DEL, bidi overrides, XML non-characters
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff\ud800-\udfff]"
)
_MENTION = re.compile(r"@(?=[\w-])")
_URL = re.compile(r"(?i)(?<=[a-z0-9])(:)(//)|(www)(\.)")
_COMMAND = re.compile(r"(?m)^(\s*):(:)")
# an issue or pull-request reference GitHub links (and cross-references): #N, GH-N,
# owner/repo#N; the joiner goes between the prefix and the number
_ISSUE_REF = re.compile(r"(?i)(#|(?<![\w-])gh-)(?=\d)")
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()<>#|~&!$])")
_MD_LEAD = re.compile(r"^(\s*)([-+=])")
_MD_ORDERED = re.compile(r"^(\s*\d+)([.)])")
_BACKTICKS = re.compile(r"`+")
CELL_MAX = 120


def clean(text: object) -> str:
    """``text`` as a string without control, bidi-override or non-XML characters
    (tab and newline kept; carriage returns become newlines)."""
    s = "" if text is None else str(text)
    return _CONTROL.sub("", s.replace("\r\n", "\n").replace("\r", "\n"))


def shorten(s: str, limit: int | None) -> str:
    return s if limit is None or len(s) <= limit else s[: limit - 1] + "…"


def neutralize(text: str) -> str:
    """Break @-mentions, URLs (``scheme://``, ``www.``), issue references (``#4242``,
    ``org/repo#4242``, ``GH-4242``) and ``::`` command prefixes at a line start with an
    invisible word joiner; the text reads the same. Every escaping of free text
    below goes through it."""
    s = _MENTION.sub("@" + WJ, text)
    s = _URL.sub(lambda m: WJ.join(g for g in m.groups() if g), s)
    s = _ISSUE_REF.sub(lambda m: m.group(1) + WJ, s)
    return _COMMAND.sub(r"\1:" + WJ + r"\2", s)


def one_line(text: object, limit: int | None = None) -> str:
    s = clean(text).replace("\n", " ").replace("\t", " ")
    return shorten(s, limit)


def md_text(text: object, limit: int | None = CELL_MAX) -> str:
    """Untrusted prose for a markdown line or table cell: rendered as the plain text."""
    s = neutralize(one_line(text, limit))
    s = _MD_PUNCT.sub(r"\\\1", s)
    s = _MD_LEAD.sub(r"\1\\\2", s)
    return _MD_ORDERED.sub(r"\1\\\2", s)


def _fence_for(s: str, minimum: int) -> str:
    runs = [len(m) for m in _BACKTICKS.findall(s)]
    return "`" * max(minimum, max(runs, default=0) + 1)


def md_code(text: object, limit: int | None = CELL_MAX, table: bool = True) -> str:
    """Untrusted identifier as an inline code span (``table``: ``|`` escaped for GFM
    tables, which split cells before they parse code spans)."""
    s = one_line(text, limit)
    if not s:
        return ""
    fence = _fence_for(s, 1)
    if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")):
        s = f" {s} "
    if table:
        s = s.replace("|", "\\|")
    return f"{fence}{s}{fence}"


def md_fence(lines: list[str], lang: str = "text") -> str:
    """A fenced block of untrusted lines, always closed by its own fence."""
    body = "\n".join(neutralize(one_line(line)) for line in lines)
    fence = _fence_for(body, 3)
    return f"{fence}{lang}\n{body}\n{fence}"


def xml_text(text: object) -> str:
    """Untrusted text for a JUnit attribute or body (XML-escaping is the writer's)."""
    return neutralize(clean(text))


def log_line(text: object) -> str:
    """Untrusted text for a CI log: no control characters, no line that a runner
    would read as a ``::workflow-command::``."""
    return _COMMAND.sub(r"\1:" + WJ + r"\2", clean(text))


_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff"
    "\ufffe\uffff\ud800-\udfff]"
)


def log_escape(text: object) -> str:
    """``text`` as one visible line: each control character (newline, carriage return
    and tab included), bidi control or non-character replaced by its Python escape
    (``\\n``, ``\\u202e``). For a name from input in a one-line message."""
    s = "" if text is None else str(text)
    return _HIDDEN.sub(_escaped, s)


def _escaped(m: re.Match) -> str:
    return m.group().encode("unicode_escape", "backslashreplace").decode("ascii")


def mermaid_label(text: object, limit: int = 24) -> str:
    """A chart label: letters, digits and ``_./@+-`` only, in double quotes."""
    s = re.sub(r"[^\w./@+-]", "_", one_line(text), flags=re.ASCII)
    return '"' + shorten(s, limit).replace("…", "_") + '"'


def script_json(data: object) -> str:
    """JSON for an inline ``<script>``: no ``</script>``, ``<!--`` or ``&`` can end it."""
    s = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
