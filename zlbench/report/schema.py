"""JSON Schema of ``verdict.json``, generated from :class:`zlbench.models.GateVerdict`.

``docs/verdict.schema.json`` is this text; a test regenerates it and compares, so
the shipped schema can never drift from the model.
"""

from __future__ import annotations

import json

from zlbench.models import GateVerdict


def verdict_schema() -> dict:
    schema = GateVerdict.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"zlbench verdict.json (schema_version {GateVerdict.FORMAT_VERSION})"
    return schema


def render_verdict_schema() -> str:
    return json.dumps(verdict_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
