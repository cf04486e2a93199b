"""Real pytest processes over the FlagGems-shaped suite (tests/benchpkg) under a
"compiler" whose every kernel launch raises the same SystemError inside the test.

Seen on the H200 (triton whose launcher raises): every op FAILed inside its test,
pytest printed the tracebacks only in its end-of-session summary, after each op's
END line, so no op had an error signature, every op was tried twice and the
systemic stop never triggered. Here the plugin names the failure inside the op's
segment (``ZLBENCH_OP_ERROR``) and the batch stops retrying it after the 3rd op."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from benchpkg_batch import BENCHPKG, interpret_config

from zlbench.models import RunStatus
from zlbench.protocol.boundary import find_end, find_error
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.run import run_batch
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

OPS = ["add", "mm", "softmax", "sum"]
# Every kernel launch (compiled or interpreted) raises, as triton 3.7.1's launcher did.
BROKEN_LAUNCHER = """\
import triton.runtime.interpreter as _interp
import triton.runtime.jit as _jit


def launch(self, *args, **kwargs):
    raise SystemError("<built-in function launch> returned NULL without setting an exception")


_jit.JITFunction.run = launch
_interp.InterpretedFunction.run = launch
"""
SIG = "SystemError in broken_launcher.py:6"


def _broken_checkout(tmp_path: Path) -> Path:
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (fg / "src" / "broken_launcher.py").write_text(BROKEN_LAUNCHER)
    init = fg / "src" / "flag_gems" / "__init__.py"
    init.write_text(init.read_text() + "\nimport broken_launcher  # noqa: E402,F401\n")
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    return fg


@pytest.mark.slow
def test_a_failure_inside_every_test_is_named_per_op_and_stops_retries(tmp_path):
    fg = _broken_checkout(tmp_path)
    progress = io.StringIO()
    config = interpret_config(tmp_path, fg, OPS, progress, max_retries=2)
    out = run_batch(config)
    st = {s.run_name: s for s in out.statuses}
    logs = {op: (out.out_dir / "main" / op / "run.log").read_text() for op in OPS}
    assert {s.status for s in st.values()} == {RunStatus.FAIL}, {k: s.note for k, s in st.items()}
    assert {s.signature for s in st.values()} == {SIG}, logs
    # the signature is in the op's own segment, before its END line
    for op, log in logs.items():
        lines = log.splitlines()
        err = next(i for i, line in enumerate(lines) if find_error(line) == (op, SIG))
        assert any(find_end(line) == (op, "FAIL") for line in lines[err + 1 :]), log
    # two ops were retried before the third made the signature systemic; none after
    assert sorted(s.attempts for s in st.values()) == [1, 1, 2, 2]
    assert all("rescue" not in s.note for s in st.values())
    (systemic,) = read_batch_info(out.out_dir).systemic
    assert systemic.signature == SIG and systemic.ops == [f"main/{op}" for op in OPS]
    assert f"SYSTEMIC: 4 ops fail the same way under the compiler under test: {SIG}" in (
        progress.getvalue()
    )
