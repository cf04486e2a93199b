"""One whole pytest output -> rows, tables, markers, failures and pytest's summary."""

from __future__ import annotations

import re
from dataclasses import dataclass

from zlbench.models import Marker, Row, assign_occurrences, count_markers
from zlbench.parse.markers import find_markers
from zlbench.parse.tables import Table, parse_tables
from zlbench.parse.text import normalize_dtype, split_lines, strip_ansi


@dataclass(frozen=True)
class Failure:
    """A failure the log shows.

    source: ``input`` (upstream's ``FAILED: Operator=... dtype=... err=<<<...>>>``,
    printed when generating inputs failed), ``row`` (a FAILED row of a printed,
    possibly partial table: its shape is the failing one) or ``pytest`` (pytest's
    ``FAILED|ERROR <nodeid> - <message>`` summary line).
    """

    source: str
    line: int  # 1-based; for ``row``, the line of its table's header
    op: str | None = None
    dtype: str | None = None
    shape: str | None = None
    test: str | None = None
    message: str | None = None


@dataclass
class ParsedLog:
    rows: list[Row]  # every whole row of every table, occurrences assigned
    tables: list[Table]
    markers: list[Marker]
    failures: list[Failure]
    summary: str | None  # pytest's final "1 passed, 2 warnings in 10.13s" line
    truncated: bool  # the text ends mid-line (its last, partial line gave no row)

    @property
    def marker_counts(self) -> dict[str, int]:
        return count_markers(self.markers)

    @property
    def finished(self) -> bool:
        """pytest printed its final summary: the run was not cut off."""
        return self.summary is not None

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def failing_shape(self) -> str | None:
        """Shape of the first FAILED row, when a printed table names one."""
        return next((f.shape for f in self.failures if f.shape is not None), None)


_INPUT_FAILED_RE = re.compile(
    r"FAILED: Operator=(?P<op>\S+)(?: dtype=(?P<dtype>\S+))?(?: err=<<<(?P<err>.*?)>>>)?", re.S
)
_PYTEST_FAILED_RE = re.compile(r"(?:FAILED|ERROR) (?P<node>\S*(?:::|\.py)\S*)(?: - (?P<msg>.*))?")
_SUMMARY_RE = re.compile(
    r"=*\s*(?:no tests ran|\d+ (?:passed|failed|skipped|errors?|warnings?|deselected|"
    r"xfailed|xpassed|rerun)(?:, \d+ \w+)*) in [\d.]+s(?: \([^)]*\))?\s*=*"
)


def _placeholder(value: str | None) -> str | None:
    """None for upstream's unformatted ``{dtype}`` / ``{e}`` (a missing f-prefix)."""
    return None if value is None or value.startswith("{") else value


def _input_failures(text: str) -> list[Failure]:
    out = []
    for m in _INPUT_FAILED_RE.finditer(text):
        dtype = _placeholder(m["dtype"])
        out.append(
            Failure(
                source="input",
                line=text.count("\n", 0, m.start()) + 1,
                op=m["op"],
                dtype=normalize_dtype(dtype) if dtype else None,
                message=_placeholder(m["err"]),
            )
        )
    return out


def _line_failures(lines: list[str], tables: list[Table]) -> list[Failure]:
    out = [
        Failure(source="row", line=t.line, op=t.op, dtype=t.dtype, shape=r.shape)
        for t in tables
        for r in t.rows
        if r.status == "FAILED"
    ]
    for no, line in enumerate(lines, 1):
        m = _PYTEST_FAILED_RE.fullmatch(line.strip())
        if m is not None:
            out.append(Failure(source="pytest", line=no, test=m["node"], message=m["msg"]))
    return out


def parse_log(text: str) -> ParsedLog:
    """Rows, tables, markers and failures of one upstream/zlbench pytest output.

    Only newline-terminated lines give rows: a log cut off mid-line (a timeout)
    yields exactly the rows that were printed whole. Markers are also read from
    a partial last line (the event did happen). Markers are not tied to rows here
    (the log does not say which shape was being measured): dtype/shape_detail
    stay None.
    """
    clean = strip_ansi(text)
    *lines, partial = split_lines(clean)
    tables = parse_tables(lines)
    rows = assign_occurrences([r for t in tables for r in t.rows])
    it = iter(rows)
    for t in tables:
        t.rows = [next(it) for _ in t.rows]
    summary = next((ln.strip() for ln in lines if _SUMMARY_RE.fullmatch(ln.strip())), None)
    failures = sorted(_input_failures(clean) + _line_failures(lines, tables), key=lambda f: f.line)
    return ParsedLog(
        rows=rows,
        tables=tables,
        markers=find_markers(clean),
        failures=failures,
        summary=summary,
        truncated=partial != "",
    )


def parse_rows(text: str) -> list[Row]:
    """``parse_log(text).rows``."""
    return parse_log(text).rows
