"""parse_json copies every string only when the text may yield a lone surrogate (issue
47: the copy was half of ``baseline verify``); what it returns and refuses is the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models.base import _SURROGATE, MAX_DEPTH, _clean, parse_json

TEXTS = [
    '{"a": "plain", "b": [1, 2.5, null, true, {"c": "d"}]}',
    '{"a": "x\\ud800y"}',  # an escaped lone surrogate
    '{"a": "x\\uDFFFy"}',
    '{"a": "\\ud83d\\ude00 a pair"}',
    '{"a": "\\\\ud800 an escaped backslash"}',
    '{"a": "\\u00e9 \\u4e2d"}',
    '{"a": "é 中 raw"}',
    '["x\ud800y"]',  # a raw lone surrogate (not from a UTF-8 file)
    '"top \\ud800"',
    "3",
]


def _strings(data):
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from _strings(v)
    elif isinstance(data, list):
        for v in data:
            yield from _strings(v)


@pytest.mark.parametrize("text", TEXTS)
def test_the_same_data_as_the_full_clean(text):
    got = parse_json(text, "f.json")
    assert got == _clean(json.loads(text), Path("f.json"))
    assert not any(_SURROGATE.search(s) for s in _strings(got))


@pytest.mark.parametrize("ascii_only", [True, False])
def test_nesting_past_max_depth_is_refused_either_way(ascii_only):
    tail = "" if ascii_only else "\\ud800"
    ok = "[" * MAX_DEPTH + f'"{tail}"' + "]" * MAX_DEPTH
    assert parse_json(ok, "f.json") is not None
    deep = "[" * (MAX_DEPTH + 1) + f'"{tail}"' + "]" * (MAX_DEPTH + 1)
    with pytest.raises(ZlbenchError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json(deep, "f.json")
    obj = '{"k": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(ZlbenchError, match="nested deeper"):
        parse_json(obj, "f.json")
