"""A baseline is never written to (issue 26): every command that writes refuses an
``--out`` inside a baseline, ``zlbench codegen`` included, and ``baseline verify``
notices files that no refresh writes."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main

S = "[1024]"


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})


def files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize("where", ["", "main/add/codegen", "new/deeper"])
def test_codegen_out_inside_the_baseline_is_refused(bl, capsys, where):
    before = files(bl)
    out = bl / where if where else bl
    assert main(["codegen", "--baseline", str(bl), "--out", str(out)]) == 2
    assert "inside the baseline" in one_error_line(capsys)
    assert files(bl) == before


def test_codegen_out_inside_a_batch_dir_given_is_refused(tmp_path, capsys):
    batch = write_results(tmp_path / "batch", [run_result("add", [crow("add", S, 1.0)])])
    before = files(batch)
    assert main(["codegen", "--baseline", str(batch), "--out", str(batch / "cg")]) == 2
    assert "inside" in one_error_line(capsys)
    assert files(batch) == before


def test_codegen_out_inside_another_baseline_is_refused(tmp_path, bl, capsys):
    other = write_baseline(tmp_path / "other", {"add": [brow("add", S, 1.0)]})
    assert main(["codegen", "--baseline", str(bl), "--out", str(other / "cg")]) == 2
    assert f"inside the baseline {other.resolve()}" in one_error_line(capsys)


def test_merge_and_batch_out_inside_a_baseline_are_refused(tmp_path, bl, capsys):
    shard = write_results(tmp_path / "s1", [run_result("add", [crow("add", S, 1.0)])])
    assert main(["merge", str(shard), "--out", str(bl / "main" / "m")]) == 2
    assert "inside the baseline" in one_error_line(capsys)
    assert not (bl / "main" / "m").exists()


def test_an_out_beside_a_foreign_manifest_yaml_is_not_a_baseline(tmp_path, capsys):
    """Another project's manifest.yaml above --out does not make it a baseline."""
    (tmp_path / "manifest.yaml").write_text("apiVersion: v1\nkind: Pod\n")
    shard = write_results(tmp_path / "s1", [run_result("add", [crow("add", S, 1.0)])])
    assert main(["merge", str(shard), "--out", str(tmp_path / "m")]) == 0


@pytest.mark.parametrize(
    "stray", ["codegen.json", "codegen.md", "diffs/k.diff", "main/add/codegen/codegen.md"]
)
def test_baseline_verify_notices_files_no_refresh_writes(bl, capsys, stray):
    main(["baseline", "verify", str(bl)])  # (the synthetic baseline has no records)
    assert "not part of a baseline" not in capsys.readouterr().out
    (bl / stray).parent.mkdir(parents=True, exist_ok=True)
    (bl / stray).write_text("x\n")
    assert main(["baseline", "verify", str(bl)]) == 1
    assert f"FAIL {stray}: not part of a baseline" in capsys.readouterr().out


@pytest.mark.parametrize("extra", [[], ["-o", "main/add"], ["--legacy-csv", "-o", "main"]])
def test_summarize_never_writes_into_a_baseline(bl, capsys, extra):
    before = files(bl)
    args = ["summarize", str(bl)] + [str(bl / a) if a.startswith("main") else a for a in extra]
    assert main(args) == 2
    assert "inside the baseline" in one_error_line(capsys)
    assert files(bl) == before
