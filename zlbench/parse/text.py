"""Text helpers shared by the parsers, and a row's shape text.

A row's shape is the text upstream prints for ``metrics.shape_detail``: it is
part of the row's identity, so it is kept verbatim and :func:`shape_text` (live
objects) and :func:`shape_text_from_json` (the json file) produce that same text.
"""

from __future__ import annotations

import re
from typing import Any

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


def split_lines(text: str) -> list[str]:
    """``text`` cut at every line break; the last item is what follows the last one."""
    return re.split(r"\r\n|\n|\r", text)


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
