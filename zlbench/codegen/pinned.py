"""The compile records a replay launches, out of a record pass's (docs/baselines.md, v6).

In record mode the codegen recorder sees every kernel the op compiled, and an autotune
sweep compiles every config it benchmarks: 844 of the 2,432 records of the first 141
ops of the full-inventory record pass (H200, 2026-12-01) were configs that lost their
sweep. A baseline replays its pinned configs only, so the screen needs only the records
of those; a loser is never launched by a gate and need not be rebuilt.

:func:`pinned_only` keeps, of each autotuned kernel (a ``<module>:<qualname>`` of the
op's autotune records), the records whose config is one of its pinned configs: every
config kwarg has that value as the record's constexpr of that name, and ``num_warps``,
``num_stages`` (and ``num_ctas`` where recorded) agree. A kernel no autotune record
names (not autotuned, or named otherwise) keeps every record. It drops nothing of a
kernel unless every pinned config of it matched a record: a config a pre-hook rewrote,
or a name this mapping does not know, keeps the kernel's records whole. Over-screening
costs CPU; dropping a launched kernel would let its change go unseen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zlbench.models import CodegenIndex, CompileRecord
from zlbench.models.autotune import Records

LAUNCH_FIELDS = ("num_warps", "num_stages", "num_ctas")


def pinned_only(index: CodegenIndex, records: Records) -> tuple[CodegenIndex, int]:
    """``index`` without the records of configs no autotune record pinned; the number
    dropped."""
    pinned = _pinned_by_kernel(records)
    drop: set[str] = set()
    for name, configs in pinned.items():
        recs = [r for r in index.records if kernel_of(r) == name]
        matched = [[r for r in recs if config_matches(r, c)] for c in configs]
        if recs and all(matched):
            keep = {r.id for m in matched for r in m}
            drop |= {r.id for r in recs if r.id not in keep}
    kept = [r for r in index.records if r.id not in drop]
    return index.model_copy(update={"records": kept}), len(drop)


def _pinned_by_kernel(records: Records) -> dict[str, list[Mapping[str, Any]]]:
    """kernel (``#N`` suffix of a second tuner over one function dropped) -> its pinned
    configs, each once."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for kernel, by_key in records.items():
        configs = out.setdefault(kernel.split("#", 1)[0], [])
        for config in by_key.values():
            if isinstance(config, Mapping) and config not in configs:
                configs.append(config)
    return out


def kernel_of(rec: CompileRecord) -> str:
    """``<module>:<qualname>``, as autotune records name a kernel."""
    k = rec.request.kernel
    return f"{k.module}:{k.qualname}"


def config_matches(rec: CompileRecord, config: Mapping[str, Any]) -> bool:
    """Whether ``rec`` was compiled with the autotune ``config`` (see the module doc)."""
    req = rec.request
    names = list(req.signature)
    consts = {
        names[c.path[0]]: c.value
        for c in req.constexprs
        if len(c.path) == 1 and 0 <= c.path[0] < len(names)
    }
    kwargs = config.get("kwargs") or {}
    if not isinstance(kwargs, Mapping):
        return False
    for name, value in kwargs.items():
        if name not in consts or consts[name] != value:
            return False
    launch = req.config.model_dump()
    return all(config.get(f) is None or launch.get(f) == config.get(f) for f in LAUNCH_FIELDS)


__all__ = ["config_matches", "kernel_of", "pinned_only"]
