"""docs/verdict.schema.json is the JSON Schema generated from models.GateVerdict
(regenerate: ZLBENCH_UPDATE_GOLDEN=1), and real verdicts conform to it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cases import error, every_verdict, real_fail

from zlbench.report.schema import render_verdict_schema, verdict_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "verdict.schema.json"
TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def test_shipped_schema_is_the_generated_one():
    text = render_verdict_schema()
    if os.environ.get("ZLBENCH_UPDATE_GOLDEN") == "1":
        DOC.write_text(text, encoding="utf-8")
    assert DOC.read_text(encoding="utf-8") == text, "regenerate with ZLBENCH_UPDATE_GOLDEN=1"


def errors(data, schema, root, path="$") -> list[str]:
    """The subset of JSON Schema that pydantic emits for these models."""
    if "$ref" in schema:
        return errors(data, root["$defs"][schema["$ref"].split("/")[-1]], root, path)
    if "anyOf" in schema:
        options = [errors(data, s, root, path) for s in schema["anyOf"]]
        return [] if any(not e for e in options) else [f"{path}: no anyOf branch matches"]
    out = []
    t = schema.get("type")
    if t and not (
        isinstance(data, TYPES[t]) and not (t in ("integer", "number") and isinstance(data, bool))
    ):
        return [f"{path}: not {t}"]
    if "enum" in schema and data not in schema["enum"]:
        out.append(f"{path}: {data!r} not in enum")
    if "const" in schema and data != schema["const"]:
        out.append(f"{path}: {data!r} != const")
    if isinstance(data, dict):
        props = schema.get("properties", {})
        out += [f"{path}.{k}: required" for k in schema.get("required", []) if k not in data]
        if schema.get("additionalProperties") is False:
            out += [f"{path}.{k}: not in schema" for k in data if k not in props]
        for k, v in data.items():
            sub = props.get(k) or (
                schema.get("additionalProperties")
                if isinstance(schema.get("additionalProperties"), dict)
                else None
            )
            if sub:
                out += errors(v, sub, root, f"{path}.{k}")
    if isinstance(data, list) and "items" in schema:
        for i, x in enumerate(data):
            out += errors(x, schema["items"], root, f"{path}[{i}]")
    return out


@pytest.mark.parametrize("make", [every_verdict, real_fail, error])
def test_verdicts_conform_to_the_schema(make, tmp_path):
    data = json.loads(make(tmp_path).model_dump_json())
    schema = verdict_schema()
    assert errors(data, schema, schema) == []


def test_the_checker_sees_a_wrong_verdict(tmp_path):
    data = json.loads(every_verdict(tmp_path).model_dump_json())
    data["rows"][0]["judged_change"] = "fast"
    data["ops"][0]["surprise"] = 1
    del data["summary"]
    schema = verdict_schema()
    found = errors(data, schema, schema)
    assert "$.summary: required" in found and "$.ops[0].surprise: not in schema" in found
    assert any(e.startswith("$.rows[0].judged_change") for e in found)
