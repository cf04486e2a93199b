"""Derive the shipped shape sets (ops/shapes_single.yaml, ops/shapes_multi.yaml)
from upstream ``benchmark/core_shapes.yaml``.

A shape file replaces the upstream one wholesale and upstream looks shapes up
by op_name, then by the Benchmark class names of the MRO, then falls back to
1-D defaults (docs/design.md §5.12): so a derived set keeps *every* upstream key,
class-name keys included (``BlasBenchmark`` shapes are (B, M, N, K)), and only
thins each key's shape list. Other fields (``shape_desc``) are kept as they are.

* single: one shape per key, small but not launch-bound: among the shapes sorted
  by element count, the one at a third of the way (``round((n - 1) / 3)``).
* multi: up to three shapes, at 0, 1/3 and 2/3 of the way, in upstream order.

Shapes that are not flat integer lists (index_put, structured inputs) are not
sorted: their upstream order is used.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from zlbench.runner.catalog.shapes_migrate import NoAliasDumper

HEADER = """\
# zlbench shape set "{name}", derived from upstream FlagGems benchmark/core_shapes.yaml
# ({source}) by zlbench.runner.catalog.shapesets: every upstream key is kept (op names and
# Benchmark class names: upstream falls back op_name -> MRO class name -> defaults),
# each with {what}. Curated edits are fine; `zlbench inventory --migrate-shapes`
# keeps them and adds new upstream keys.
"""


def _flat_ints(shape: Any) -> bool:
    return isinstance(shape, list) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in shape
    )


def _order(shapes: list) -> list[int]:
    """Indices of ``shapes`` from smallest to largest (upstream order when not flat)."""
    idx = list(range(len(shapes)))
    if all(_flat_ints(s) for s in shapes):
        idx.sort(key=lambda i: (math.prod(shapes[i]), i))
    return idx


def pick_indices(shapes: list, kind: str) -> list[int]:
    """Indices of the shapes kept for ``kind`` (single|multi), in upstream order."""
    n = len(shapes)
    if n == 0:
        return []
    order = _order(shapes)
    fractions = (1 / 3,) if kind == "single" else (0.0, 1 / 3, 2 / 3)
    if kind not in ("single", "multi"):
        raise ValueError(f"unknown shape set kind {kind!r}")
    return sorted({order[round((n - 1) * f)] for f in fractions})


def derive(upstream: dict[str, Any], kind: str) -> dict[str, Any]:
    """The derived shape set: every upstream key, shapes thinned per :func:`pick_indices`."""
    out: dict[str, Any] = {}
    for key, entry in upstream.items():
        if not isinstance(entry, dict) or "shapes" not in entry:
            out[key] = entry
            continue
        shapes = list(entry["shapes"])
        new = dict(entry)
        new["shapes"] = [shapes[i] for i in pick_indices(shapes, kind)]
        out[key] = new
    return out


def render(derived: dict[str, Any], kind: str, source: str) -> str:
    what = "one shape" if kind == "single" else "up to three shapes (small, 1/3, 2/3 by size)"
    body = yaml.dump(
        derived, Dumper=NoAliasDumper, sort_keys=False, default_flow_style=None, width=100
    )
    return HEADER.format(name=kind, source=source, what=what) + "\n" + body


def derive_file(core_shapes_text: str, kind: str, source: str) -> str:
    return render(derive(yaml.safe_load(core_shapes_text), kind), kind, source)
