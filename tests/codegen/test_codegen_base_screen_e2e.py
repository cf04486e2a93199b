"""The PR-vs-base screen with the real triton on both sides (docs/codegen.md, "PR against
its base compiler"): the benchpkg kernels recorded by this triton are the baseline's
records; the PR and the base are two copies of one patched triton (the TTGIR pass that
turns tl.dot into MMA removed, so mm_kernel's code is not the baseline's). Against the
baseline's records mm_kernel changed; against the base nothing did: no op is timed,
mm_kernel's difference from the baseline's compiler kept as context."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("triton")

from tests.support.codegen import (  # noqa: E402
    PATCHES,
    REPO,
    patched_triton,
    record_benchpkg,
    write_op_codegen,
)
from tests.support.zlsynth import brow, write_baseline  # noqa: E402
from zlbench.codegen.screen import BaseSide, ScreenOptions, flaggems_sources, run_screen  # noqa: E402
from zlbench.models.codegen_screen import CodegenClass  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.proc]

S = "[1024]"
OPS = {"add": "add_kernel", "mm": "mm_kernel"}


def test_a_patch_the_base_has_too_times_nothing(tmp_path, monkeypatch):
    recorded = tmp_path / "rec"
    record_benchpkg(recorded)
    bl = tmp_path / "bl"
    write_op_codegen(recorded, bl, OPS, S)
    write_baseline(bl, {op: [brow(op, S, 1.0)] for op in OPS})
    patch = PATCHES["no_accelerate_matmul"]
    pr_site = patched_triton(tmp_path / "pr", patch)
    base_site = patched_triton(tmp_path / "base", patch)  # another copy of the same build
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pr_site), str(recorded / "helpers")]))
    base = BaseSide("base", "triton patched sha256:base", front=(str(base_site),))
    opts = ScreenOptions(
        baseline=bl,
        out=tmp_path / "out",
        jobs=2,
        pythonpath=flaggems_sources([REPO / "tests" / "benchpkg"]),
        exec_generated=True,
        base=base,
    )
    s = run_screen(opts)
    mm = [k for k in s.kernels if k.name == "mm_kernel"]
    assert s.decided_by == "base" and s.counts["identical"] == len(s.kernels) > len(mm) > 0
    assert {k.vs_baseline for k in mm} == {CodegenClass.TTGIR}  # not the records' code
    others = {k.vs_baseline for k in s.kernels if k not in mm}
    assert others == {CodegenClass.IDENTICAL}
    assert s.vs_baseline_counts["ttgir_changed"] == len(mm)
    assert not list((tmp_path / "out" / "diffs").iterdir())
    assert Path(opts.out / "codegen.md").read_text().count("also differs") == len(mm)
