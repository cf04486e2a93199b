"""Upstream's ``--record json --output FILE`` file (and live metrics) -> rows.

The file is ``{opid: {"details": [asdict(BenchmarkResult)], "result", "test_case",
"reason"}}``, dumped with ``default=str``; its shapes are rebuilt by
:func:`~zlbench.parse.text.shape_text_from_json`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.models import Row, assign_occurrences, read_text
from zlbench.parse.text import normalize_dtype, one_line, shape_text, shape_text_from_json


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
    return parse_record_json(read_text(path), str(Path(path)))
