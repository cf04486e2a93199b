"""Upstream FlagGems benchmark output -> zlbench rows; marker lines -> markers.

Three inputs, all produced by upstream FlagGems without zlbench:

* the table text ``BenchmarkResult.__str__`` prints once per (op, dtype), after
  every shape of that dtype was measured::

      Operator: softmax  Performance Test (dtype=torch.bfloat16, mode=cudagraph,level=core)
      Status       Torch Latency (ms)    Gems Latency (ms)         Gems Speedup          Size Detail
      -----------------------------------------------------------------------------------------------
      SUCCESS      0.222541      0.211139      1.054      [torch.Size([1048576])]

  (columns narrowed here: upstream pads status to 10 and each value to 20 chars,
  then 10 spaces before the shape);

* the ``--record json --output FILE`` file (``{opid: {"details": [asdict(BenchmarkResult)],
  "result", "test_case", "reason"}}``, dumped with ``default=str``);
* zlbench's own marker lines (DESIGN.md §3).

A row's shape is the text upstream prints for ``metrics.shape_detail``: it is
part of the row's identity, so it is kept verbatim and :func:`shape_text` (live
objects) and :func:`shape_text_from_json` (the json file) produce that same text.

Pure: imports neither torch nor pytest.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.models import Marker, MarkerKind, Row, assign_occurrences, count_markers

# --------------------------------------------------------------------------- text helpers

# CSI (colours, cursor), OSC (titles, hyperlinks) and the other two-byte escapes.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return _ANSI_RE.sub("", text)


def normalize_dtype(dtype: object) -> str:
    """``torch.bfloat16`` (or the dtype object itself) -> ``bfloat16``; idempotent."""
    text = str(dtype).strip()
    return text[len("torch.") :] if text.startswith("torch.") else text


def one_line(text: str) -> str:
    """Collapse whitespace (newlines included) so ``text`` fits on one marker line."""
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- shapes


def shape_text(shape_detail: object) -> str:
    """The text upstream prints for a live ``shape_detail`` (what ``record_shapes`` returns).

    ``BenchmarkResult._format_metrics`` prints ``f"{shape_detail}"`` (``"N/A"`` for
    None), i.e. ``str()`` of the nested lists / dicts / (args, kwargs) tuple, which
    shows each element by its ``repr``: ``torch.Size([64, 64])``, ``torch.float16``,
    ``'str'``, ``1e-05``. Those reprs come from the objects themselves, so this works
    on live torch objects without importing torch.
    """
    if shape_detail is None:
        return "N/A"
    return format(shape_detail, "")


class _JsonSize(tuple):
    """Stands in for torch.Size when reviving a json shape_detail."""

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(repr(d) for d in self)}])"


class _JsonDtype(str):
    """Stands in for a torch.dtype (serialized by upstream as ``str(dtype)``)."""

    def __repr__(self) -> str:
        return str(self)


_DTYPE_NAME_RE = re.compile(r"torch\.[a-z][a-z0-9_]*")


def _is_int_list(obj: list) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in obj)


def _revive(obj: Any, depth: int) -> Any:
    if isinstance(obj, list):
        if depth > 0 and _is_int_list(obj):
            return _JsonSize(obj)
        return [_revive(x, depth + 1) for x in obj]
    if isinstance(obj, dict):
        return {k: _revive(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, str) and _DTYPE_NAME_RE.fullmatch(obj):
        return _JsonDtype(obj)
    return obj


def shape_text_from_json(shape_detail: object) -> str:
    """The table text of a ``shape_detail`` read back from upstream's json.

    The json loses types, so the text is rebuilt with these rules (each the common
    case of an ambiguity the json cannot resolve):

    * the top-level list is ``record_shapes``' list of arguments; a top-level
      ``[list, dict]`` pair is its ``(args, kwargs)`` tuple, printed ``([...], {...})``;
    * below the top level, a list of ints (also the empty list) was a
      ``torch.Size`` (a tensor argument): ``torch.Size([64, 64])``. A plain
      list-of-int argument (``dims=[0, 1]``) prints ``[0, 1]`` in the table but comes
      out here as ``torch.Size([0, 1])``;
    * a string ``torch.<lowercase name>`` was a dtype, printed without quotes.

    For the shapes FlagGems' core benchmarks use (tensors, ints, floats) the text is
    identical to the table's. Rows measured by zlbench carry the live text instead.
    """
    if shape_detail is None:
        return "N/A"
    obj = shape_detail
    if (
        isinstance(obj, list)
        and len(obj) == 2
        and isinstance(obj[0], list)
        and isinstance(obj[1], dict)
    ):
        return shape_text((_revive(obj[0], 0), _revive(obj[1], 0)))
    return shape_text(_revive(obj, 0))


# --------------------------------------------------------------------------- markers

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


def _split_lines(text: str) -> list[str]:
    return re.split(r"\r\n|\n|\r", text)


def find_markers(text: str) -> list[Marker]:
    """Every marker in ``text`` (ANSI codes are ignored), in order."""
    out: list[Marker] = []
    for line in _split_lines(strip_ansi(text)):
        out.extend(markers_in_line(line))
    return out


# --------------------------------------------------------------------------- tables

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


# --------------------------------------------------------------------------- whole logs


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
    *lines, partial = _split_lines(clean)
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


# --------------------------------------------------------------------------- record json


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def row_from_metrics(op: str, dtype: object, metrics: Any, *, from_json: bool = False) -> Row:
    """A Row from one upstream ``BenchmarkMetrics`` (the object or its dict).

    ``from_json``: ``shape_detail`` was read back from json (see
    :func:`shape_text_from_json`); otherwise it is the live object.
    """
    detail = _get(metrics, "shape_detail")
    error = _get(metrics, "error_msg")
    return Row(
        op=op,
        dtype=normalize_dtype(dtype),
        shape=shape_text_from_json(detail) if from_json else shape_text(detail),
        status="SUCCESS" if error is None else "FAILED",
        latency_base_ms=_get(metrics, "latency_base"),
        latency_ms=_get(metrics, "latency"),
        speedup=_get(metrics, "speedup"),
        tflops=_get(metrics, "tflops"),
        gbps=_get(metrics, "gbps"),
        error=None if error is None else str(error),
    )


def _result_rows(result: Any, where: str) -> list[Row]:
    if not isinstance(result, Mapping):
        raise ZlbenchError(f"{where}: expected an object")
    missing = [k for k in ("op_name", "dtype", "result") if k not in result]
    if missing:
        raise ZlbenchError(f"{where}: missing field '{missing[0]}'")
    if not isinstance(result["result"], list):
        raise ZlbenchError(f"{where}: field 'result' is not a list")
    try:
        return [
            row_from_metrics(result["op_name"], result["dtype"], m, from_json=True)
            for m in result["result"]
        ]
    except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
        raise ZlbenchError(f"{where}: bad metrics: {one_line(str(e))[:200]}") from None


def rows_from_record(data: Any, source: str = "<record json>") -> list[Row]:
    """Rows of a loaded ``--record json`` file, in file order, occurrences assigned."""
    if not isinstance(data, Mapping):
        raise ZlbenchError(f"{source}: expected an object keyed by operator")
    rows: list[Row] = []
    for opid, entry in data.items():
        details = entry.get("details", []) if isinstance(entry, Mapping) else None
        if not isinstance(details, list):
            raise ZlbenchError(f"{source}: field '{opid}.details' is not a list")
        for i, result in enumerate(details):
            rows.extend(_result_rows(result, f"{source}: {opid}.details[{i}]"))
    return assign_occurrences(rows)


def parse_record_json(text: str, source: str = "<record json>") -> list[Row]:
    """Rows of the text of a ``--record json`` file; bad input is one ZlbenchError line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ZlbenchError(f"{source}: not valid JSON (truncated or corrupted?): {e}") from None
    return rows_from_record(data, source)


def load_record_json(path: str | os.PathLike) -> list[Row]:
    """Rows of a ``--record json`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ZlbenchError(f"{path}: cannot read: {e}") from None
    return parse_record_json(text, str(path))
