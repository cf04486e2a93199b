"""The tables upstream prints (``BenchmarkResult.__str__``) -> :class:`Table` of rows.

The header names the op and dtype, the ``Status ...`` line the columns; each
whole data line is one :class:`~zlbench.models.Row` (occurrence 0 here).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from zlbench.models import Row
from zlbench.parse.text import normalize_dtype

_HEADER_RE = re.compile(
    r"Operator:\s*(?P<op>\S+)\s+Performance Test\s*\(dtype=(?P<dtype>[^,()]+),"
    r"\s*mode=(?P<mode>[^,()]+),\s*level=(?P<level>[^,()]+)\)"
)
_DASHES_RE = re.compile(r"\s*-{10,}\s*")
_NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|N/A|[-+]?inf|nan)"
_ROW_RE = re.compile(
    rf"\s*(?P<status>SUCCESS|FAILED)(?P<values>(?:[ \t]+{_NUM})+)[ \t]+(?P<shape>\S.*?)\s*"
)
# Header column -> Row field ("" = a column Row has no field for).
COLUMN_FIELDS = {
    "Torch Latency (ms)": "latency_base_ms",
    "Gems Latency (ms)": "latency_ms",
    "Gems Speedup": "speedup",
    "TFLOPS": "tflops",
    "Torch GBPS": "",
    "Gems GBPS": "gbps",
}
_FIXED = ["latency_base_ms", "latency_ms", "speedup"]
# Upstream decides the optional columns per row (TFLOPS when the row's tflops is
# non-zero, the GBPS pair when its gbps is set), the header from the first row only.
_PER_ROW_EXTRAS = {0: [], 1: ["tflops"], 2: ["", "gbps"], 3: ["tflops", "", "gbps"]}
_CLOSE = {"[": "]", "(": ")", "{": "}"}


@dataclass
class Table:
    """One printed ``Operator: ...`` table."""

    op: str
    dtype: str  # normalized: "bfloat16"
    mode: str
    level: str
    line: int  # 1-based line of the "Operator:" header
    columns: list[str] = field(default_factory=list)  # as printed, "Status" .. "Size Detail"
    rows: list[Row] = field(default_factory=list)
    complete: bool = False  # closed by the blank line upstream prints after its last row


def _balanced(shape: str) -> bool:
    """False for a bracketed shape that is cut off (quotes are skipped)."""
    if shape[0] not in _CLOSE:
        return True
    stack: list[str] = []
    quote = ""
    for ch in shape:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _CLOSE:
            stack.append(_CLOSE[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return False
    return not stack and not quote and shape[-1] in ")]}"


def _number(token: str) -> float | None:
    if token == "N/A":
        return None
    value = float(token)
    return None if math.isnan(value) else value


def _value_fields(columns: list[str], n_values: int) -> list[str] | None:
    """Row field of each printed value: by the header; upstream's per-row rule otherwise."""
    metric_cols = [c for c in columns if c not in ("Status", "Size Detail")]
    if len(metric_cols) == n_values:
        return [COLUMN_FIELDS.get(c, "") for c in metric_cols]
    extras = _PER_ROW_EXTRAS.get(n_values - len(_FIXED))
    return None if extras is None else _FIXED + extras


def parse_table_row(line: str, table: Table) -> Row | None:
    """One data line of ``table`` -> Row (occurrence 0), or None if it is not a whole row."""
    m = _ROW_RE.fullmatch(line)
    if m is None or not _balanced(m["shape"]):
        return None
    values = [_number(t) for t in m["values"].split()]
    fields = _value_fields(table.columns, len(values))
    if fields is None:
        return None
    data = {f: v for f, v in zip(fields, values, strict=True) if f}
    return Row(op=table.op, dtype=table.dtype, shape=m["shape"], status=m["status"], **data)


def _table_from_header(m: re.Match, line_no: int) -> Table:
    return Table(
        op=m["op"],
        dtype=normalize_dtype(m["dtype"]),
        mode=m["mode"].strip(),
        level=m["level"].strip(),
        line=line_no,
    )


def parse_tables(lines: Iterable[str]) -> list[Table]:
    """Tables in whole (newline-terminated, ANSI-free) lines; rows keep occurrence 0.

    Header line, then a ``Status ...`` column line, then dashes, then rows up to a
    blank line. Inside a table, lines that are not whole rows (stderr interleaved
    into the buffered stdout) are skipped; a new header ends the table.
    """
    tables: list[Table] = []
    pending: Table | None = None  # header seen, columns/dashes not yet
    cur: Table | None = None
    for no, line in enumerate(lines, 1):
        head = _HEADER_RE.search(line)
        if head is not None:
            pending, cur = _table_from_header(head, no), None
        elif pending is not None:
            if not pending.columns and line.strip().startswith("Status"):
                pending.columns = re.split(r"\s{2,}", line.strip())
            elif pending.columns and _DASHES_RE.fullmatch(line):
                cur, pending = pending, None
                tables.append(cur)
            else:
                pending = None
        elif cur is not None:
            if not line.strip():
                cur.complete, cur = True, None
            elif (row := parse_table_row(line, cur)) is not None:
                cur.rows.append(row)
    return tables
