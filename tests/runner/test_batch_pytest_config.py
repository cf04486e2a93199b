"""Real pytest processes over the FlagGems-shaped suite (tests/benchpkg): a checkout
without its own pytest.ini, under a project whose pyproject.toml turns warnings into
errors, still runs (pytest's config is pinned to the checkout); a checkout whose
conftest cannot be imported stops after a few identical failures, named once.

Seen on the H200: with only src/ and benchmark/ copied under such a project, every
op died importing conftest on a DeprecationWarning and the batch tried each op in
its own process (34 ops, 5 minutes)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from benchpkg_batch import BENCHPKG, interpret_config

from zlbench.models import RunStatus
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.run import run_batch
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

STRICT_PROJECT = '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'


def _checkout(tmp_path: Path, conftest_head: str) -> Path:
    """benchpkg without pytest.ini, inside a project that makes warnings errors."""
    (tmp_path / "pyproject.toml").write_text(STRICT_PROJECT)
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", "pytest.ini"))
    conftest = fg / "benchmark" / "conftest.py"
    future = "from __future__ import annotations\n"
    conftest.write_text(conftest.read_text().replace(future, future + conftest_head, 1))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    return fg


def _batch(tmp_path: Path, fg: Path, ops: list[str], progress: io.StringIO):
    return run_batch(interpret_config(tmp_path, fg, ops, progress))


@pytest.mark.slow
def test_a_parent_projects_pytest_config_does_not_leak_into_the_checkout(tmp_path):
    head = "import warnings\nwarnings.warn('old api', DeprecationWarning)\n"
    fg = _checkout(tmp_path, head)
    out = _batch(tmp_path, fg, ["add"], io.StringIO())
    st = out.statuses[0]
    assert st.status is RunStatus.PASS, (st.note, (out.out_dir / "main/add/run.log").read_text())


@pytest.mark.slow
def test_a_conftest_that_cannot_be_imported_stops_the_batch_early(tmp_path):
    fg = _checkout(tmp_path, "raise ImportError('no module named flag_gems_ext')\n")
    progress = io.StringIO()
    ops = ["add", "mm", "softmax", "sum", "nonzero", "no_bf16"]
    out = _batch(tmp_path, fg, ops, progress)
    assert {s.status for s in out.statuses} == {RunStatus.ERROR}
    not_run = [s for s in out.statuses if s.note.startswith("NOT MEASURED")]
    assert len(not_run) == len(ops) - 2  # the shared process, then two ops alone
    (systemic,) = read_batch_info(out.out_dir).systemic
    assert systemic.signature.startswith(
        "pytest exit code 4 before the op began: ImportError while loading conftest"
    )
    assert len(systemic.ops) == len(ops) and systemic.not_run == len(ops) - 2
    assert "SYSTEMIC: 6 ops fail the same way" in progress.getvalue()
