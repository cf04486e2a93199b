"""gate/ and report/ stay pure (DESIGN.md §2): no torch, triton, pytest, plugins, runner, CLI."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import zlbench

PKG = Path(zlbench.__file__).parent
FORBIDDEN = ("torch", "triton", "pytest", "zlbench.plugins", "zlbench.runner", "zlbench.cli")
MODULES = sorted((PKG / "gate").glob("*.py")) + sorted((PKG / "report").glob("*.py"))


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_layer_imports(path):
    bad = [n for n in imported(path) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []


def test_modules_found():
    assert len(MODULES) >= 10


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_layer_writes_no_files(path):
    text = path.read_text(encoding="utf-8")
    writers = ("write_text(", "write_bytes(", "atomic_write_text(", "dump_json_model(", ".mkdir(")
    for call in writers:
        assert call not in text, f"{path.name} calls {call}"
    assert not re.search(r"open\([^)]*[\"'][wax][b+]?[\"']", text), f"{path.name} opens for writing"
