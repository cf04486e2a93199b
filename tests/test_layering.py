"""The layers of docs/design.md §2, read from the source (static AST imports, lazy
imports inside functions included): who may import what, and no import cycle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import zlbench

PKG = Path(zlbench.__file__).parent
THIRD_PARTY_INTERNALS = ("torch", "triton", "pytest", "_pytest")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def imported(name: str) -> set[str]:
    """Every module ``name`` imports, anywhere in the file; ``from a import b`` counts
    as ``a.b`` when that is a zlbench module, else as ``a``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return names


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def in_layer(*layers: str) -> list[str]:
    return [m for m in MODULES if under(m, *(f"zlbench.{layer}" for layer in layers))]


def bad_imports(modules: list[str], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {m: sorted(n for n in imported(m) if under(n, *forbidden)) for m in modules}
    return {m: names for m, names in found.items() if names}


def test_the_layers_are_found():
    for layer in ("gate", "report", "plugins", "protocol", "models", "runner", "workflow", "cli"):
        assert in_layer(layer), layer


def test_gate_and_report_stay_pure():
    forbidden = (*THIRD_PARTY_INTERNALS, "zlbench.plugins", "zlbench.runner", "zlbench.cli")
    assert bad_imports(in_layer("gate", "report"), (*forbidden, "zlbench.workflow")) == {}


@pytest.mark.parametrize("name", in_layer("gate", "report"))
def test_gate_and_report_write_no_files(name):
    text = MODULES[name].read_text(encoding="utf-8")
    writers = ("write_text(", "write_bytes(", "atomic_write_text(", "dump_json_model(", ".mkdir(")
    for call in writers:
        assert call not in text, f"{name} calls {call}"
    assert not re.search(r"open\([^)]*[\"'][wax][b+]?[\"']", text), f"{name} opens for writing"


def test_only_plugins_touch_torch_triton_and_pytest():
    outside = [m for m in MODULES if not under(m, "zlbench.plugins")]
    assert bad_imports(outside, THIRD_PARTY_INTERNALS) == {}


def test_plugins_never_import_the_judge_the_runner_or_the_cli():
    forbidden = ("zlbench.gate", "zlbench.report", "zlbench.runner", "zlbench.workflow")
    assert bad_imports(in_layer("plugins"), (*forbidden, "zlbench.cli")) == {}


def test_the_protocol_and_the_models_sit_at_the_bottom():
    allowed = ("zlbench.errors", "zlbench.models", "zlbench.protocol")
    for m in in_layer("protocol", "models"):
        mine = {n for n in imported(m) if under(n, "zlbench")}
        assert {n for n in mine if not under(n, *allowed)} == set(), m


def test_nothing_imports_the_cli():
    outside = [m for m in MODULES if not under(m, "zlbench.cli", "zlbench.__main__")]
    assert bad_imports(outside, ("zlbench.cli",)) == {}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_there_is_no_import_cycle():
    graph = {m: {n for n in imported(m) if n in MODULES and n != m} for m in MODULES}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Inside runner/ (docs/architecture.md): leaves, then running one op's processes, then
# sweeping one op over GPUs, then batches of ops, then what runs batches.
RUNNER_ORDER = {
    "catalog": 0,
    "claim": 0,
    "preflight": 0,
    "derived": 0,
    "execute": 1,
    "sweep": 2,
    "batch": 3,
    "ab": 4,
    "replay": 5,
    "refresh": 5,
    "run": 5,
    "attribute": 5,
    "compact": 5,
    "code_digests": 5,
    "capture_baseline": 6,  # runs the refresh's replay pass
    "baseline_batch": 5,  # how a baseline's ops are replayed (gate, capture)
}


def _runner_part(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["zlbench", "runner"] else None


def test_every_part_of_the_runner_has_a_place_in_its_order():
    parts = {_runner_part(m) for m in in_layer("runner")} - {None}
    assert parts == set(RUNNER_ORDER)


def test_nothing_in_the_runner_imports_against_its_order():
    against = {}
    for m in in_layer("runner"):
        mine = _runner_part(m)
        if mine is None:
            continue
        up = sorted(
            n
            for n in imported(m)
            if (other := _runner_part(n)) not in (None, mine)
            and RUNNER_ORDER[other] >= RUNNER_ORDER[mine]
        )
        if up:
            against[m] = up
    assert against == {}
