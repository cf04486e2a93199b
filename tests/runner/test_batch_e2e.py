"""One end-to-end batch over the small FlagGems-shaped suite (tests/benchpkg), real
plugins, real pytest processes, TRITON_INTERPRET=1: dtype fallback, crash retry and
rescue, timeout, unconditional skip, several ops per process."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from zlbench.models import RunStatus, read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.run import run_batch
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"
FAST = ["--iter", "1", "--zl-replays", "2", "--zl-warmup-ms", "1"]


@pytest.mark.slow
def test_batch_over_benchpkg(tmp_path):
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("GEMS_VENDOR", None)
    progress = io.StringIO()
    out = run_batch(
        BatchConfig(
            out_dir=tmp_path / "out",
            flaggems_dirs={"main": fg},
            ops_dir=tmp_path / "ops",
            ops=["add", "no_bf16", "crash_segv", "hang", "always_skipped"],
            dtypes=["bfloat16"],
            gpus=["0", "1"],  # two workers; CUDA_VISIBLE_DEVICES is harmless on CPU
            op_timeout_s=10,
            timing="kernel",
            env=env,
            progress=progress,
            extra_pytest_args=FAST,
        )
    )
    text = progress.getvalue()
    st = {s.run_name: s for s in read_ops_status(out.out_dir / "ops_status.csv")}
    assert st["add"].status is RunStatus.PASS and st["add"].dtype_used == "bfloat16", text
    # no_bf16 rejects bfloat16 upstream-style: retried with the op's own dtypes
    assert st["no_bf16"].status is RunStatus.PASS and st["no_bf16"].attempts == 2
    assert st["no_bf16"].dtype_used == "float16,float32"
    assert "main/no_bf16 -> fallback [defaults]" in text
    # segfault: retried until the same rc came twice, then one dtype rescue
    seg = st["crash_segv"]
    assert (seg.status, seg.rc) == (RunStatus.CRASH, -11)
    assert "same rc -11 twice" in text and "rescue" in seg.note
    # the hang is killed at the timeout and not retried after that
    assert st["hang"].status is RunStatus.TIMEOUT
    assert st["always_skipped"].status is RunStatus.SKIP
    assert st["always_skipped"].note.startswith("unconditional skip")
    assert (out.out_dir / "main" / "add" / ".complete").is_file()
    assert not (out.out_dir / "main" / "hang" / ".complete").exists()
    assert (out.out_dir / "main" / "add" / "result.json").is_file()
    assert out.exit_code == 1 and out.summary_rows >= 6
