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
* zlbench's own marker lines (docs/design.md §3).

A row's shape is the text upstream prints for ``metrics.shape_detail``: it is
part of the row's identity, so it is kept verbatim and :func:`shape_text` (live
objects) and :func:`shape_text_from_json` (the json file) produce that same text.

Import from ``zlbench.parse`` itself; the split into modules is internal:
``text`` (ANSI, dtypes, shape text), ``markers``, ``tables``, ``log`` (a whole
pytest output) and ``record`` (the json file).

Pure: imports neither torch nor pytest.
"""

from __future__ import annotations

from zlbench.parse.log import Failure, ParsedLog, parse_log, parse_rows
from zlbench.parse.markers import find_markers
from zlbench.parse.record import (
    load_record_json,
    parse_record_json,
    row_from_metrics,
    rows_from_record,
)
from zlbench.parse.tables import COLUMN_FIELDS, Table, parse_table_row, parse_tables
from zlbench.parse.text import (
    normalize_dtype,
    one_line,
    shape_text,
    shape_text_from_json,
    strip_ansi,
)
from zlbench.protocol.markers import markers_in_line, parse_marker_line

__all__ = [
    "COLUMN_FIELDS",
    "Failure",
    "ParsedLog",
    "Table",
    "find_markers",
    "load_record_json",
    "markers_in_line",
    "normalize_dtype",
    "one_line",
    "parse_log",
    "parse_marker_line",
    "parse_record_json",
    "parse_rows",
    "parse_table_row",
    "parse_tables",
    "row_from_metrics",
    "rows_from_record",
    "shape_text",
    "shape_text_from_json",
    "strip_ansi",
]
