"""The one place that patches the FlagGems benchmark classes (``benchmark/base.py``).

Why: zlbench needs to see inside upstream ``Benchmark.run()``, which offers no
hooks: which dtype is being measured, the shape of each row as soon as it is
known, every ``BenchmarkMetrics`` object as it is created (so rows survive a
``pytest.fail`` at a later shape), and a point right after the benchmark has
read its shapes and dtypes (to replace hard-coded shapes). Other plugins
register callbacks in :data:`HOOKS`; :func:`install` / :func:`uninstall` patch
and restore the classes of whichever benchmark package was imported (found
by shape, not by name, so the FlagGems and vllm suites both work).

Patched: ``Benchmark.init_user_config`` (then the instance's
``get_input_iter``, which also drops the rows outside the plan entry's row part or
picks),
``Benchmark.record_shapes``, ``BenchmarkMetrics.__init__``, and ``BenchmarkResult.__str__``
where the module has it (a table the part or picks left empty prints nothing).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from zlbench.parse import normalize_dtype
from zlbench.plugins import state
from zlbench.protocol.rowpart import keeps_row, picks_row
from zlbench.protocol.turn import process_turn


@dataclass
class Hooks:
    """Callbacks; each list is called in registration order."""

    # (bench, base_module) -> None, around upstream init_user_config
    before_config: list[Callable[[Any, ModuleType], None]] = field(default_factory=list)
    after_config: list[Callable[[Any, ModuleType], None]] = field(default_factory=list)
    on_dtype: list[Callable[[Any, Any], None]] = field(default_factory=list)  # (bench, dtype)
    on_shape: list[Callable[[Any, Any], None]] = field(default_factory=list)  # (bench, detail)
    on_metric: list[Callable[[Any], None]] = field(default_factory=list)  # (metric,)


HOOKS = Hooks()

# (class, attribute name, original value) for every patch made.
_PATCHES: list[tuple[type, str, Any]] = []
_MODULES: list[ModuleType] = []


def is_benchmark_module(mod: Any) -> bool:
    bench = getattr(mod, "Benchmark", None)
    metrics = getattr(mod, "BenchmarkMetrics", None)
    return (
        isinstance(bench, type)
        and all(hasattr(bench, a) for a in ("init_user_config", "record_shapes", "run"))
        and isinstance(metrics, type)
        and "shape_detail" in getattr(metrics, "__dataclass_fields__", {})
    )


def find_benchmark_modules() -> list[ModuleType]:
    """Imported modules that define upstream-shaped Benchmark/BenchmarkMetrics classes."""
    found = []
    for mod in list(sys.modules.values()):
        if mod is not None and is_benchmark_module(mod):
            found.append(mod)
    return found


def benchmark_modules() -> list[ModuleType]:
    """The benchmark modules patched so far."""
    return list(_MODULES)


def install() -> int:
    """Patch every newly imported benchmark module; returns how many were patched now."""
    patched_classes = {cls for cls, _, _ in _PATCHES}
    n = 0
    for mod in find_benchmark_modules():
        if mod.Benchmark in patched_classes:
            continue
        _patch_benchmark(mod)
        if mod.BenchmarkMetrics not in patched_classes:
            _patch_metrics(mod.BenchmarkMetrics)
        patched_classes |= {mod.Benchmark, mod.BenchmarkMetrics}
        table = getattr(mod, "BenchmarkResult", None)
        if isinstance(table, type) and "__str__" in table.__dict__ and table not in patched_classes:
            _patch_empty_table(table)
            patched_classes.add(table)
        _MODULES.append(mod)
        n += 1
    return n


def uninstall() -> None:
    while _PATCHES:
        cls, name, orig = _PATCHES.pop()
        setattr(cls, name, orig)
    _MODULES.clear()


def _set(cls: type, name: str, value: Any) -> None:
    _PATCHES.append((cls, name, cls.__dict__[name]))
    setattr(cls, name, value)


def _patch_benchmark(mod: ModuleType) -> None:
    cls = mod.Benchmark
    orig_config = cls.__dict__["init_user_config"]
    orig_record = cls.__dict__["record_shapes"]

    def init_user_config(self, *args, **kwargs):
        for cb in HOOKS.before_config:
            cb(self, mod)
        out = orig_config(self, *args, **kwargs)
        for cb in HOOKS.after_config:
            cb(self, mod)
        _wrap_input_iter(self)
        return out

    def record_shapes(self, *args, **kwargs):
        detail = orig_record(self, *args, **kwargs)
        for cb in HOOKS.on_shape:
            cb(self, detail)
        return detail

    _set(cls, "init_user_config", init_user_config)
    _set(cls, "record_shapes", record_shapes)


def _wrap_input_iter(bench: Any) -> None:
    inner = bench.get_input_iter  # bound method, or a replacement set by after_config

    def get_input_iter(dtype):
        for cb in HOOKS.on_dtype:
            cb(bench, dtype)
        items = _drawn_in_shared_turn(inner(dtype))
        op = state.current_op()
        if op is None or not (op.entry.part or op.entry.rows is not None):
            return items
        # a row part or picks: every input is still drawn, in order (same data as whole);
        # the group as a result row names it (its op, its dtype's name)
        group = (str(getattr(bench, "op_name", "")), normalize_dtype(dtype))
        return _part_rows(items, op, group)

    bench.get_input_iter = get_input_iter


def _drawn_in_shared_turn(items: Any):
    """Each input drawn (tensors made on the GPU) in the GPU's shared turn: on a shared
    GPU never inside another process's timing (zlbench.protocol.turn)."""
    it = iter(items)
    turn = process_turn()
    while True:
        with turn.share():
            try:
                item = next(it)
            except StopIteration:
                return
        yield item


def _part_rows(items: Any, op: state.OpState, group: tuple[str, str]):
    """The items of the op's row part and picks: an index counts within (benchmark op,
    dtype) over all of the op's tests (one mark may cover several), as the runner counts
    the baseline's rows (zlbench.runner.batch.parts.row_group)."""
    picks = {tuple(p) for p in op.entry.rows} if op.entry.rows is not None else None
    for item in items:
        i = op.part_rows_seen.get(group, 0)
        op.part_rows_seen[group] = i + 1
        if keeps_row(i, op.entry.part) and picks_row(group, i, picks):
            yield item


def _patch_empty_table(cls: type) -> None:
    """``BenchmarkResult.__str__`` of a dtype's table with no row prints nothing: a test
    whose rows of that dtype the row part or picks all left out (an op of several tests,
    a family sentinel's one row) leaves upstream's ``run()`` an empty table, whose
    ``__str__`` reads ``result[0]`` (IndexError: v7's index_put_impl at one row, an H100,
    2026-12-06)."""
    orig_str = cls.__dict__["__str__"]

    def __str__(self) -> str:
        if not getattr(self, "result", None):
            return ""
        return orig_str(self)

    _set(cls, "__str__", __str__)


def _patch_metrics(cls: type) -> None:
    orig_init = cls.__dict__["__init__"]

    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        for cb in HOOKS.on_metric:
            cb(self)

    _set(cls, "__init__", __init__)
