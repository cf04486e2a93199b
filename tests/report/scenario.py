"""One gate verdict holding every verdict kind, built from synthetic dirs (fixed labels)."""

from __future__ import annotations

from pathlib import Path

from tests.support.zlsynth import (
    ENV,
    brow,
    crow,
    nocg_marker,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.gate.verdict import GateOptions, run_gate
from zlbench.models import GateVerdict, OpStatus, RunStatus

S = "[1024, 1024]"
LOG = (
    "".join(f"line {i}\n" for i in range(30))
    + "RuntimeError: CUDA error: an illegal memory access\n"
)


def build(tmp: Path, *, allow_env_mismatch: bool = False, gpu: str | None = None) -> GateVerdict:
    base = {
        "add": [brow("add", S, 1.0), brow("add", "[8]", 2.0, noise=0.04)],
        "mm": [brow("mm", "[64, 64, 64]", 0.8), brow("mm", "[128, 128, 128]", 0.9)],
        "softmax": [brow("softmax", S, 1.5)],
        "sum": [brow("sum", S, 1.2), brow("sum", "[7]", 1.0)],
        "index_put": [brow("index_put", S, 3.0)],
        "cumsum": [brow("cumsum", S, 1.0, no_cg=False)],
        "flip": [brow("flip", S, 2.0)],
        "dropout": [brow("dropout", S, 1.0)],
    }
    bl = write_baseline(tmp / "bl", base)
    env = ENV if gpu is None else ENV.model_copy(update={"gpu_model": gpu})
    results = [
        # add: one regression past the threshold, one inside its noise floor (8 %)
        run_result("add", [crow("add", S, 0.88), crow("add", "[8]", 1.86)], env=env),
        # mm: a replay fallback naming one row
        run_result(
            "mm",
            [crow("mm", "[64, 64, 64]", 0.8), crow("mm", "[128, 128, 128]", 0.9)],
            markers=[replay_marker("bfloat16", "[64, 64, 64]", kernel="mm_kernel")],
            env=env,
        ),
        # softmax: improved, plus a new row
        run_result("softmax", [crow("softmax", S, 1.8), crow("softmax", "[4, 4]", 1.0)], env=env),
        # sum: a row missing
        run_result("sum", [crow("sum", S, 1.2)], env=env),
        # cumsum: timed without CUDA graph
        run_result(
            "cumsum",
            [crow("cumsum", S, 1.0, no_cudagraph=True)],
            markers=[nocg_marker("bfloat16", S)],
            env=env,
        ),
        # flip: passes
        run_result("flip", [crow("flip", S, 2.01)], env=env),
    ]
    statuses = [
        OpStatus(
            repo="main",
            op="index_put",
            run_name="index_put",
            status=RunStatus.CRASH,
            rc=-11,
            attempts=3,
            note="signal 11 (SIGSEGV)",
            run_dir="main/index_put",
        ),
        OpStatus(
            repo="main",
            op="dropout",
            run_name="dropout",
            status=RunStatus.SKIP,
            note="dismissed 2026-01-01: random output",
        ),
    ]
    rdir = write_results(tmp / "res", results, statuses)
    (rdir / "main" / "index_put").mkdir(parents=True)
    (rdir / "main" / "index_put" / "run.log").write_text(LOG)
    b = load_baseline(bl)
    th = load_thresholds(None, b.manifest.thresholds)
    opts = GateOptions(
        allow_env_mismatch=allow_env_mismatch,
        baseline_label="baselines/vtest",
        results_label="gate-out/results",
        generated="2026-01-01T00:00:00Z",
    )
    return run_gate(b, load_results(rdir), th, opts)
