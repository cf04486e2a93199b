"""compiler_fingerprint (zlbench/workflow/codegen_artifact.py) names the build that an
interpreter imports: a copy of the installed triton first on the path (links, one file
replaced) is another build when that file's content differs, and the same build when it
does not. It keys the PR-vs-base screen's cache and the screen-only plan's check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.codegen import Patch, patched_triton, triton_dir

pytestmark = pytest.mark.proc

FILE = "backends/nvidia/compiler.py"
PRINT = "from zlbench.workflow.codegen_artifact import compiler_fingerprint as f; print(f())"


def _fingerprint(front: Path | None) -> str:
    env_path = [str(front)] if front else []
    code = f"import sys; sys.path[:0] = {env_path!r}; {PRINT}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_a_patched_copy_is_another_build_and_an_unchanged_copy_the_same(tmp_path):
    text = (triton_dir() / FILE).read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines(keepends=True) if text.count(ln) == 1 and ln.strip())
    same = patched_triton(tmp_path / "same", Patch(FILE, line, line, "none", frozenset()))
    patched = patched_triton(tmp_path / "patched", Patch(FILE, line, line + "\n", "none", None))
    installed = _fingerprint(None)
    assert installed.startswith("triton ") and " sha256:" in installed
    assert _fingerprint(same) == installed  # the same bytes: one build
    assert _fingerprint(patched) != installed  # one file differs: another build
