"""zlbench.codegen stays importable without triton; its pure modules write no files."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import zlbench

PKG = Path(zlbench.__file__).parent / "codegen"
FORBIDDEN = ("torch", "triton", "pytest", "zlbench.plugins", "zlbench.runner", "zlbench.cli")
PURE = ("chunks.py", "collect.py", "diff.py", "explain.py", "select.py", "timed.py")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(PKG.glob("*.py")), ids=lambda p: p.name)
def test_codegen_never_imports_triton_torch_plugins_or_cli(path):
    bad = [n for n in _imports(path) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []


@pytest.mark.parametrize("name", PURE)
def test_pure_codegen_modules_write_no_files(name):
    text = (PKG / name).read_text(encoding="utf-8")
    for call in (
        "write_text(",
        "write_bytes(",
        "atomic_write_text(",
        "dump_json_model(",
        ".mkdir(",
    ):
        assert call not in text, f"{name} calls {call}"


def test_screen_imports_without_triton():
    code = (
        "import sys; sys.modules['triton'] = None; sys.modules['torch'] = None\n"
        "import zlbench.cli.codegen_cmd, zlbench.cli.explain_cmd\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
