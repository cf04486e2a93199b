"""Shape (and dtype) injection into the upstream benchmarks (docs/design.md §5.11-12).

Why: upstream reads shapes from ``--shape_file`` with the fallback chain
op_name → MRO class name → 1-D defaults, but many benchmark subclasses ignore
the file: they override ``set_shapes()`` with a hard-coded list, or their
``get_input_iter`` loops over a literal list (conv/pool style). A zlbench shape
set must still decide what is measured, so right after the benchmark has read
its configuration:

* a subclass with its own ``set_shapes()`` gets the shape file's entry instead
  of its hard-coded list;
* a ``get_input_iter`` that never reads ``self.shapes`` is replaced by one
  that feeds the file's shapes to the benchmark's ``input_fn``;

but only when the file has an entry meant for that benchmark: its op_name,
or the name of the hard-coding class or one of its subclasses (a generic key
such as ``Benchmark`` would hand 2-D shapes to a benchmark whose hard-coded
shapes have another meaning). The file named by the plan entry replaces the
upstream one for that op; the plan entry's dtypes replace ``--dtypes``.
"""

from __future__ import annotations

from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import pytest
import yaml

from zlbench.plugins import bench_adapter, state

_YAML_CACHE: dict[str, dict] = {}
_CLI_SHAPE_FILE: dict[str, str | None] = {}
_CLI_DTYPES: dict[str, Any] = {}  # upstream's Config.user_desired_dtypes from --dtypes


def defining_class(cls: type, attr: str) -> type | None:
    for klass in cls.__mro__:
        if attr in klass.__dict__:
            return klass
    return None


def code_reads_name(code: CodeType, name: str) -> bool:
    """True when the code (or a nested code object) mentions attribute/global ``name``."""
    if name in code.co_names:
        return True
    return any(isinstance(c, CodeType) and code_reads_name(c, name) for c in code.co_consts)


def hardcoded_set_shapes(bench: Any, base_cls: type) -> type | None:
    """The class whose own ``set_shapes()`` replaces upstream's, or None."""
    owner = defining_class(type(bench), "set_shapes")
    return owner if owner is not None and owner is not base_cls else None


def hardcoded_input_iter(bench: Any) -> type | None:
    """The class whose ``get_input_iter`` ignores ``self.shapes``, or None."""
    owner = defining_class(type(bench), "get_input_iter")
    func = owner.__dict__["get_input_iter"] if owner is not None else None
    code = getattr(func, "__code__", None)
    if code is None or code_reads_name(code, "shapes"):
        return None
    return owner


def specific_entry(config: dict, op_name: str, cls: type, owner: type) -> tuple[str, dict] | None:
    """The shape-file entry meant for this benchmark (see module docstring), or None."""
    if op_name in config:
        return op_name, config[op_name] or {}
    for klass in cls.__mro__:
        if klass.__name__ in config:
            if issubclass(klass, owner):
                return klass.__name__, config[klass.__name__] or {}
            return None
    return None


def as_shape(row: Any) -> tuple:
    """A shape-file row as the tuple a benchmark iterates: nested lists become tuples too,
    so a curated row ``[[1, 64, 16, 16], 4]`` is upstream pixel_shuffle's own
    ``((N, C, H, W), upscale_factor)`` form (docs/ops.md), hashable like upstream's."""
    if not isinstance(row, (list, tuple)):
        return (row,)
    return tuple(as_shape(x) if isinstance(x, (list, tuple)) else x for x in row)


def load_shape_yaml(path: str) -> dict:
    if path not in _YAML_CACHE:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        _YAML_CACHE[path] = data if isinstance(data, dict) else {}
    return _YAML_CACHE[path]


def shapes_from_file(bench: Any, base_cls: type, path: str) -> tuple[str, list, str | None, str]:
    """(key, shapes, shape_desc, what) to inject, or raise LookupError when nothing applies."""
    owners = [(hardcoded_set_shapes(bench, base_cls), "set_shapes()")]
    owners.append((hardcoded_input_iter(bench), "get_input_iter()"))
    config = load_shape_yaml(path)
    for owner, what in owners:
        if owner is None:
            continue
        found = specific_entry(config, bench.op_name, type(bench), owner)
        if found is not None and found[1].get("shapes"):
            key, entry = found
            shapes = [as_shape(s) for s in entry["shapes"]]
            return key, shapes, entry.get("shape_desc"), what
    raise LookupError(bench.op_name)


def _file_shapes_iter(bench: Any):
    def get_input_iter(dtype):
        for shape in bench.shapes:
            yield from bench.input_fn(shape, dtype, bench.device)

    return get_input_iter


def shape_file_in_effect() -> str | None:
    op = state.current_op()
    if op is not None and op.entry.shape_file:
        return op.entry.shape_file
    return _CLI_SHAPE_FILE.get("path")


def before_config(bench: Any, mod: ModuleType) -> None:
    """Point upstream's Config at the plan entry's shape file and dtypes for this op
    (upstream validates ``--dtypes`` against the op's own before anything else: ops
    with other dtypes share a process, :func:`zlbench.runner.execute.worker._chunks`)."""
    cfg = getattr(mod, "Config", None)
    if cfg is None:
        return
    _hand_dtypes(cfg)
    if not hasattr(cfg, "shape_file"):
        return
    _CLI_SHAPE_FILE.setdefault("path", cfg.shape_file)
    cfg.shape_file = shape_file_in_effect() or cfg.shape_file


def dtypes_at_op_start(op: state.OpState) -> None:
    """Hand upstream's Config the op's dtypes before any of its tests runs: also
    benchmarks whose own ``init_user_config`` never calls the base one (upstream
    ``nonzero_static``, ``beam_search_score``) read them from there, and must not see
    the previous op's."""
    for mod in bench_adapter.benchmark_modules():
        _hand_dtypes(getattr(mod, "Config", None))


def _hand_dtypes(cfg: Any) -> None:
    """Upstream's ``Config.user_desired_dtypes``: the op's own dtypes, or those of
    ``--dtypes`` (kept the first time it is seen) for an op on its defaults."""
    if cfg is None or not hasattr(cfg, "user_desired_dtypes"):
        return
    _CLI_DTYPES.setdefault("dtypes", cfg.user_desired_dtypes)
    cfg.user_desired_dtypes = _entry_dtypes() or _CLI_DTYPES["dtypes"]


def _entry_dtypes() -> list | None:
    """The plan entry's dtypes as torch dtypes; None when it has none (the op's defaults)."""
    op = state.current_op()
    if op is None or not op.entry.dtypes:
        return None
    import torch

    return [getattr(torch, d) for d in op.entry.dtypes]


def after_config(bench: Any, mod: ModuleType) -> None:
    path = shape_file_in_effect()
    _apply_entry_dtypes(bench)
    op = state.current_op()
    if op is not None:
        op.shape_file = path
    if not path or not Path(path).is_file():
        return
    try:
        key, shapes, desc, what = shapes_from_file(bench, mod.Benchmark, path)
    except LookupError:
        return
    bench.shapes = shapes
    if desc:
        bench.shape_desc = desc
    if what == "get_input_iter()":
        if not callable(getattr(bench, "input_fn", None)):
            state.say(f"zlbench: cannot inject shapes into {bench.op_name}: {what} hard-codes them")
            return
        bench.get_input_iter = _file_shapes_iter(bench)
    state.say(f"zlbench: {bench.op_name}: {len(shapes)} shapes from key '{key}' replace {what}")


def _apply_entry_dtypes(bench: Any) -> None:
    dtypes = _entry_dtypes()
    if dtypes:
        bench.set_dtypes(dtypes)


def pytest_configure(config: pytest.Config) -> None:
    bench_adapter.HOOKS.before_config.append(before_config)
    bench_adapter.HOOKS.after_config.append(after_config)
    state.subscribe(on_start=dtypes_at_op_start)


def pytest_unconfigure(config: pytest.Config) -> None:
    state.unsubscribe(on_start=dtypes_at_op_start)
    for lst, cb in ((bench_adapter.HOOKS.before_config, before_config),
                    (bench_adapter.HOOKS.after_config, after_config)):  # fmt: skip
        if cb in lst:
            lst.remove(cb)
    _YAML_CACHE.clear()
    _CLI_SHAPE_FILE.clear()
    _CLI_DTYPES.clear()
