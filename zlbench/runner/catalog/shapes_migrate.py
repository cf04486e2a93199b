"""Shape files: loading, and merging upstream ``core_shapes.yaml`` into a curated set.

Why: a shape file replaces upstream's wholesale, and upstream falls back
op_name -> MRO class name -> 1-D defaults (docs/design.md §5.12). A curated set
(``ops/shapes_single.yaml``: one shape per op) that lacks upstream's
class-name keys silently measures BLAS ops with 1-D shapes. ``--migrate-shapes``
keeps every curated key as it is and adds the upstream keys it lacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from zlbench.errors import ZlbenchError
from zlbench.models import parse_yaml, read_text


class NoAliasDumper(yaml.SafeDumper):
    """Writes shared values in full (upstream uses YAML anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def load_shapes(path: str | os.PathLike) -> dict[str, Any]:
    """A shape yaml as a dict; unreadable or not a mapping -> ZlbenchError."""
    path = Path(path)
    data = parse_yaml(read_text(path, missing="shape file not found"), path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ZlbenchError(f"{path}: a shape file must be a mapping of op / class names")
    return data


def migrate_shapes(curated: dict[str, Any], upstream: dict[str, Any]) -> dict[str, Any]:
    """Curated keys first, unchanged; then upstream keys the curated set lacks."""
    out = dict(curated)
    for key, value in upstream.items():
        if key not in out:
            out[key] = value
    return out


def leading_comments(text: str) -> str:
    """The comment block at the top of a yaml text (kept across a migration)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#") or (not line.strip() and lines):
            lines.append(line)
        else:
            break
    return "\n".join(lines).rstrip() + "\n" if lines else ""


def render_shapes(data: dict[str, Any], header: str = "") -> str:
    body = yaml.dump(data, Dumper=NoAliasDumper, sort_keys=False, default_flow_style=None)
    return header + body
