"""End to end on CPU: `zlbench baseline refresh` of the benchpkg suite compiling real
sm_90 kernels under the stand-in driver (``--zl-codegen-standin cuda:90``, passed
through PYTEST_ADDOPTS; no TRITON_INTERPRET, which records nothing) keeps every op's
codegen records (docs/baselines.md); the codegen screen of that baseline with the
same triton finds 0 changed kernels; a touched blob makes `baseline verify` fail
and the gate refuse the baseline (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import BaselineManifest, load_json_model, load_yaml_model
from zlbench.models.codegen_screen import CodegenScreen
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"
OPS = ["add", "mm"]
ADDOPTS = (
    "--iter 1 --zl-replays 2 --zl-warmup-ms 1 --zl-timing-backend cpu --zl-codegen-standin cuda:90"
)

pytestmark = pytest.mark.slow


def _env(mp: pytest.MonkeyPatch, fg: Path) -> None:
    mp.delenv("TRITON_INTERPRET", raising=False)
    mp.delenv("GEMS_VENDOR", raising=False)
    mp.delenv("GITHUB_STEP_SUMMARY", raising=False)
    mp.setenv("OMP_NUM_THREADS", "1")
    mp.setenv("PYTEST_ADDOPTS", ADDOPTS)
    mp.setenv("ZLBENCH_FLAGGEMS_DIR", str(fg))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """benchpkg as a FlagGems checkout and a baseline v2 refreshed from it (1 replay)."""
    root = tmp_path_factory.mktemp("refresh-cg")
    fg = root / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(root / "ops", "main"), scan_checkout(fg, "main"))
    with pytest.MonkeyPatch.context() as mp:
        _env(mp, fg)
        rc = main(
            ["baseline", "refresh", "--out", str(root / "v2"), "--ops", *OPS]
            + ["--ops-dir", str(root / "ops"), "--flaggems-dir", str(fg), "--repeats", "1"]
            + ["--shape-file", str(fg / "benchmark" / "core_shapes.yaml")]
            + ["--dtypes", "float32", "--mode", "kernel", "--keep-work", str(root / "work")]
        )
    assert rc == 0
    return root


def _records(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "codegen" / "index.json").read_text())["records"]


def test_refreshed_baseline_keeps_the_replay_pass_codegen_records(world, capsys):
    base, work = world / "v2", world / "work"
    for op in OPS:
        kept = _records(base / "main" / op)
        assert kept and kept == _records(work / "replay-1" / "main" / op)
        for rec in kept:
            for stage in rec["result"]["stages"].values():
                assert (base / "main" / op / "codegen" / stage["blob"]).is_file()
    # The record pass also compiled the autotune candidates the replay never launches.
    assert len(_records(work / "record" / "main" / "mm")) > len(_records(base / "main" / "mm"))
    m = load_yaml_model(base / "manifest.yaml", BaselineManifest)
    assert {f"main/{op}/codegen/index.json" for op in OPS} <= set(m.files)
    assert main(["baseline", "verify", str(base)]) == 0
    assert "no codegen records" not in capsys.readouterr().out


def test_screen_of_the_refreshed_baseline_with_its_own_triton_changes_nothing(
    world, monkeypatch, tmp_path
):
    _env(monkeypatch, world / "fg")
    out = tmp_path / "cg"
    assert main(["codegen", "--baseline", str(world / "v2"), "--out", str(out)]) == 0
    screen = load_json_model(out / "codegen.json", CodegenScreen)
    kept = sum(len(_records(world / "v2" / "main" / op)) for op in OPS)
    assert len(screen.kernels) == kept and screen.counts["identical"] == kept


def test_touched_codegen_blob_fails_verify_and_the_gate_refuses(
    world, monkeypatch, tmp_path, capsys
):
    base = tmp_path / "v2"
    shutil.copytree(world / "v2", base)
    blob = sorted((base / "main" / "mm" / "codegen" / "blobs").iterdir())[0]
    blob.write_bytes(blob.read_bytes()[:-1])
    assert main(["baseline", "verify", str(base)]) == 1
    assert f"FAIL main/mm/codegen/blobs/{blob.name}: content changed" in capsys.readouterr().out
    _env(monkeypatch, world / "fg")
    rc = main(["gate", "--baseline", str(base), "--ops-dir", str(world / "ops")]
              + ["--out", str(tmp_path / "gate")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert "does not match its manifest: main/mm/codegen/blobs/" in err and "\n" not in err
