"""How a multi-GPU sweep deals one op over its GPUs: configs, shapes or both
(docs/autotune.md "Dealing configs or shapes"; issue 30 item 3).

Dealing *configs* (the first sweep, still the default when the op's shapes are not
known): child ``j`` of ``c`` tunes ``configs[j::c]`` of every multi-config kernel and
runs every shape; a key's winner is then picked across GPUs (the trust figure), and a
kernel with fewer than ``2c`` configs is not split at all, so an op with many shapes
and few configs gains little. Dealing *shapes*: child ``i`` of ``s`` runs only the
rows ``i, i+s, ...`` of each (benchmark op, dtype) (a row part, the plugins'
:func:`zlbench.protocol.rowpart.keeps_row`) and tunes each of their keys over every
config, so each shape's winner is picked on one GPU's timings, never across GPUs.
*Both*: ``s`` shape parts times ``c`` config shards, ``s * c`` children.

The cost model, in units of one config benchmarked on one key (FlagGems' tuners:
``warmup=25, rep=100`` ms, ~0.13 s): an op of ``S`` shapes (rows per dtype, read from
its shape file) whose largest kernel has ``K`` configs (not known before the op runs:
:data:`ASSUMED_CONFIGS` unless given), dealt ``(s, c)`` with ``s * c <= n`` GPUs and
``s <= S``, keeps its busiest child ``ceil(S/s) * (ceil(K/c) if K >= 2c else K)``
units sweeping, plus :data:`ROW_COST` per row it times. The deal with the least of
that wins; ties go to more shape parts (fewer winners picked across GPUs), then to
fewer GPUs. Without a known ``S`` the sweep deals configs over every GPU, as before.
Estimated, not measured: no multi-GPU machine was at hand to time it (docs/autotune.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import PlanEntry
from zlbench.protocol.ops import split_selector
from zlbench.runner.catalog.shapes_migrate import load_shapes

ASSUMED_CONFIGS = 32  # configs of the op's largest kernel when not known (a guess)
ROW_COST = 1.0  # a child's own timing of one row (graph warmup + replays), in config benches
DEALS = ("auto", "configs", "shapes")


@dataclass(frozen=True)
class Deal:
    """``shapes`` shape parts times ``configs`` config shards: ``shapes * configs``
    children; child ``k`` runs shape part ``k // configs`` and config shard
    ``k % configs``."""

    shapes: int = 1
    configs: int = 1

    @property
    def children(self) -> int:
        return self.shapes * self.configs

    def of(self, k: int) -> tuple[int, int]:
        """(shape part, config shard) of child ``k``, both 0-based."""
        return divmod(k, self.configs)

    def words(self) -> str:
        """``shapes dealt 2 ways x configs 1``, for notes."""
        return f"shapes dealt {self.shapes} way(s) x configs {self.configs}"


def sweep_cost(deal: Deal, shapes: int, configs: int) -> float:
    """The busiest child's cost under ``deal`` (see the module doc)."""
    rows = math.ceil(shapes / deal.shapes)
    c = deal.configs
    per_key = math.ceil(configs / c) if configs >= 2 * c else configs
    return rows * per_key + rows * ROW_COST


def choose_deal(
    gpus: int, shapes: int | None, configs: int | None = None, how: str = "auto"
) -> Deal:
    """The deal of an op over ``gpus`` GPUs: ``how`` ``configs`` (every GPU a config
    shard), ``shapes`` (every GPU a shape part, at most one per shape) or ``auto`` (the
    cost model of the module doc; configs when ``shapes`` is unknown)."""
    if how not in DEALS:
        raise ZlbenchError(f"sweep deal {how!r}: one of {', '.join(DEALS)}")
    if how == "configs" or not shapes or gpus <= 1:
        return Deal(1, max(gpus, 1))
    if how == "shapes":
        return Deal(min(gpus, shapes), 1)
    k = configs if configs else ASSUMED_CONFIGS
    deals = [Deal(s, c) for s in range(1, min(gpus, shapes) + 1) for c in range(1, gpus // s + 1)]
    return min(deals, key=lambda d: (sweep_cost(d, shapes, k), -d.shapes, d.children))


def op_shapes(entry: PlanEntry) -> int | None:
    """How many shapes the op runs: the length of its entry (under its op id) in the
    plan entry's shape file; None when that is not known (no shape file, no entry
    under the op id, e.g. shapes under a Benchmark class name, or an unreadable file)."""
    if not entry.shape_file:
        return None
    try:
        data = load_shapes(Path(entry.shape_file))
    except ZlbenchError:
        return None
    item = data.get(split_selector(entry.op)[0])
    shapes = item.get("shapes") if isinstance(item, dict) else None
    return len(shapes) if isinstance(shapes, list) and shapes else None
