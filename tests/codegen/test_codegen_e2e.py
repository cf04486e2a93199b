"""`zlbench codegen` end to end on this CPU: the benchpkg Triton kernels (plus one
generated kernel) recorded for sm_90 under the stand-in driver, then screened
with the same triton (nothing changed) and with patched copies of it (exactly
the kernels the patch touches, at the stage it touches). Uses the compiler
side's helpers (tests/support/codegen.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.codegen import NO_DOT, PATCHES, REPO, load_index, patched_triton, record_benchpkg
from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.models import load_json_model
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, RebuiltShard

pytestmark = pytest.mark.slow

STAGE_CLASS = {"ttgir": CodegenClass.TTGIR, "sass": CodegenClass.SASS}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """A baseline dir whose one op (main/benchpkg) recorded every benchpkg kernel,
    verified against its manifest (only then is the generated kernel's recorded
    source executed to rebuild it)."""
    tmp = tmp_path_factory.mktemp("cg")
    root = tmp / "base"
    shutil.copytree(record_benchpkg(tmp / "rec"), root / "main" / "benchpkg" / "codegen")
    (root / "main" / "benchpkg" / "autotune_records").mkdir()
    (root / "main" / "benchpkg" / "autotune_records" / "benchpkg.json").write_text("{}")
    write_baseline(root, {"benchpkg": [brow("benchpkg", "[8]", 1.0)]})
    assert main(["baseline", "verify", str(root)]) == 0
    return root


@pytest.fixture
def screen_env(monkeypatch, baseline):
    """The environment the workers need: benchpkg as the FlagGems checkout, the
    recorded helper module importable, no interpreter mode."""
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(REPO / "tests" / "benchpkg"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)

    def use_triton(site: Path | None) -> None:
        helpers = str(baseline.parent / "rec" / "helpers")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site)] * bool(site) + [helpers]))

    return use_triton


def _screen(baseline: Path, out: Path, jobs: int = 2) -> tuple[int, CodegenScreen]:
    rc = main(["codegen", "--baseline", str(baseline), "--out", str(out), "--jobs", str(jobs)])
    return rc, load_json_model(out / "codegen.json", CodegenScreen)


def test_same_compiler_changes_nothing(baseline, screen_env, tmp_path):
    screen_env(None)
    rc, s = _screen(baseline, tmp_path / "out")
    recorded = load_index(baseline / "main" / "benchpkg" / "codegen").records
    assert rc == 0
    assert len(s.kernels) == len(recorded) >= 10
    assert s.counts["identical"] == len(recorded), [
        k for k in s.kernels if k.status.value != "identical"
    ]
    assert "gen_twice_kernel" in {k.name for k in s.kernels}  # the generated kernel rebuilt too


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_patched_compiler_reports_exactly_the_touched_kernels(name, baseline, screen_env, tmp_path):
    patch = PATCHES[name]
    screen_env(patched_triton(tmp_path / "site", patch))
    rc, s = _screen(baseline, tmp_path / "out")
    touched = [k for k in s.kernels if patch.kernels is None or k.name in patch.kernels]
    assert rc == 0 and touched
    assert {k.kernel_id for k in s.changed()} == {k.kernel_id for k in touched}
    for k in touched:
        assert (k.status, k.first_stage) == (STAGE_CLASS[patch.stage], patch.stage)
        diff = (tmp_path / "out" / k.diff_file).read_text()
        assert f"--- baseline/{k.kernel_id}.{patch.stage}" in diff
        assert (
            k.changed_lines
            == sum(
                1
                for line in diff.splitlines()
                if line[:1] in "+-" and line[:4] not in ("+++ ", "--- ")
            )
            > 0
        )
        # SASS is disassembled only where every earlier stage is the baseline's
        early = patch.stage != "sass"
        assert (k.current.sass_instructions is None) is early, k.kernel_id
        assert any("SASS not disassembled" in n for n in k.notes) is early
    for k in s.kernels:
        if k not in touched:
            assert k.current.sass_instructions == k.baseline.sass_instructions is not None
    assert s.counts["identical"] == len(s.kernels) - len(touched)


def test_compiler_that_fails_a_kernel_exits_1(baseline, screen_env, tmp_path, capsys):
    screen_env(patched_triton(tmp_path / "site", NO_DOT))
    rc, s = _screen(baseline, tmp_path / "out", jobs=1)
    assert rc == 1
    assert {k.name for k in s.failed()} == {"mm_kernel"}
    assert all("zl patch: no dot" in k.error for k in s.failed())
    assert s.counts["identical"] == len(s.kernels) - len(s.failed())
    assert "FAILED mm_kernel" in capsys.readouterr().err


def test_a_rebuild_sharded_over_jobs_screens_as_one(baseline, screen_env, tmp_path, capsys):
    screen_env(None)
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, d in enumerate(shards, 1):
        argv = ["codegen", "--baseline", str(baseline), "--shard", f"{k}/2", "--out", str(d)]
        assert main(argv) == 0
    ids = [load_json_model(d / "rebuilt.json", RebuiltShard).ids for d in shards]
    recorded = load_index(baseline / "main" / "benchpkg" / "codegen").records
    assert sorted(ids[0] + ids[1]) == sorted(r.id for r in recorded) and all(ids)
    given = [a for d in shards for a in ("--rebuilt", str(d))]
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out), *given]) == 0
    s = load_json_model(out / "codegen.json", CodegenScreen)
    assert s.counts["identical"] == len(s.kernels) == len(recorded)
    assert "rebuilt by 2 shard job(s)" in capsys.readouterr().err
    # taken only whole: one shard missing, or given twice, is one line, exit 2
    for bad in (given[:2], given[:2] * 2):
        assert main(["codegen", "--baseline", str(baseline), "--out", str(out), *bad]) == 2
        assert "every shard 1..2 once is needed" in capsys.readouterr().err
