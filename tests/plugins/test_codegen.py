"""Codegen records with real Triton compiles for sm_90 on this CPU (stand-in driver):
recording, rebuilding with the same and with a patched compiler, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from _corerun import FAST, copy_benchpkg, entry  # noqa: E402

from tests.support.codegen import (  # noqa: E402
    BENCHPKG_SRC,
    PATCHES,
    digests,
    load_index,
    patched_triton,
    rebuild,
    record_benchpkg,
    subprocess_env,
)
from zlbench.errors import ZlbenchError  # noqa: E402
from zlbench.models import (  # noqa: E402
    STAGES,
    CodegenIndex,
    RunResult,
    WorkerPlan,
    load_codegen_index,
    load_json_model,
    read_blob,
)
from zlbench.plugins.compiler import sass  # noqa: E402

BENCHPKG_KERNELS = {"add_kernel", "softmax_kernel", "sum_kernel", "mm_kernel", "scale_kernel"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The codegen dir of one recording of the benchpkg kernels (+ a generated one)."""
    return record_benchpkg(tmp_path_factory.mktemp("rec"))


@pytest.fixture(scope="module")
def same_rebuild(recorded, tmp_path_factory) -> CodegenIndex:
    tmp = tmp_path_factory.mktemp("same")
    proc = rebuild(recorded / "index.json", tmp / "out", tmp)
    assert proc.returncode == 0, proc.stderr
    assert "ZLBENCH_CODEGEN_REBUILD kernels=12 failed=0" in proc.stdout
    return load_index(tmp / "out")


def _first_changed(a: dict[str, str], b: dict[str, str]) -> str | None:
    return next((s for s in STAGES if a.get(s) != b.get(s)), None)


# --------------------------------------------------------------------------- recording


def test_recording_keeps_every_benchpkg_kernel_compiled_for_sm90(recorded):
    index = load_index(recorded)
    names = {r.request.kernel.name for r in index.records}
    assert names == BENCHPKG_KERNELS | {"gen_twice_kernel"}
    # every config the tuners benchmarked was compiled: softmax, sum, mm have several
    assert sum(r.request.kernel.name == "mm_kernel" for r in index.records) == 3
    for rec in index.records:
        assert rec.id == rec.request.key()
        assert (rec.request.target.backend, rec.request.target.arch) == ("cuda", 90)
        assert {"ttir", "ttgir", "llir", "ptx"} <= set(rec.result.stages)
        assert rec.result.shared is not None and rec.result.cubin_sha256


@pytest.mark.skipif(sass.cuobjdump() is None, reason="triton has no bundled cuobjdump here")
def test_recording_without_sass_keeps_every_other_stage_identical(recorded, tmp_path):
    """``--zl-codegen-no-sass`` (the gate's measure step): no cuobjdump, no SASS,
    registers or spills; the same kernels and the same IR and PTX digests."""
    light = load_index(record_benchpkg(tmp_path, sass=False))
    full = {r.id: r for r in load_index(recorded).records}
    assert {r.id for r in light.records} == set(full)
    assert all("sass" in r.result.stages and r.result.n_regs for r in full.values())
    for rec in light.records:
        assert "sass" not in rec.result.stages
        assert rec.result.n_regs is None and rec.result.sass_instructions is None
        want = {s: d for s, d in full[rec.id].result.stages.items() if s != "sass"}
        assert rec.result.stages == want


def test_recorded_blobs_hold_normalised_ir_without_paths_or_locations(recorded):
    index = load_index(recorded)
    repo = str(Path(__file__).resolve().parents[2])
    for rec in index.records:
        for stage, digest in rec.result.stages.items():
            text = read_blob(recorded, digest).decode("utf-8")
            assert repo not in text, (rec.request.kernel.name, stage)
            assert " loc(" not in text and "!dbg" not in text and "\t.loc\t" not in text
    add = next(r for r in index.records if r.request.kernel.name == "add_kernel")
    assert "tt.func public @add_kernel" in read_blob(recorded, add.result.stages["ttgir"]).decode()


def test_recorded_request_has_config_constexprs_and_attributes(recorded):
    index = load_index(recorded)
    mm = [r.request for r in index.records if r.request.kernel.name == "mm_kernel"]
    assert sorted((q.config.num_warps, q.config.num_stages) for q in mm) == [(1, 2), (2, 3), (4, 3)]
    # non-default options only: num_warps=4/num_stages=3 are triton's defaults
    assert sorted(json.dumps(q.options, sort_keys=True) for q in mm) == [
        '{"num_stages": 2, "num_warps": 1}', '{"num_warps": 2}', "{}"]  # fmt: skip
    q = next(q for q in mm if q.config.num_warps == 4)
    consts = {tuple(c.path): (c.kind, c.value) for c in q.constexprs}
    assert consts[(5,)] == ("int", 64)  # K
    assert consts[(6,)] == ("int", 32) and consts[(8,)] == ("int", 32)  # BLOCK_M, BLOCK_K
    assert q.signature["a_ptr"] == "*fp32" and q.signature["BLOCK_M"] == "constexpr"
    assert [0] in [a.path for a in q.attrs] and q.kernel.path == "flag_gems/ops/mm.py"
    assert q.kernel.generated_source is None and q.kernel.root == "sys.path"


def test_generated_kernel_keeps_its_source_and_the_injected_globals(recorded):
    gen = next(
        r for r in load_index(recorded).records if r.request.kernel.name == "gen_twice_kernel"
    )
    k = gen.request.kernel
    assert k.module == "_gen_module_twice" and k.path == "gen_twice.py" and k.root is None
    assert "def gen_twice_kernel(" in k.generated_source
    assert k.generated_globals == {"twice": "zl_scalar:twice"}


@pytest.mark.skipif(sass.cuobjdump() is None, reason="triton has no bundled cuobjdump here")
def test_sass_registers_and_instruction_counts_come_from_the_cubin(recorded):
    for rec in load_index(recorded).records:
        r = rec.result
        assert r.n_regs and r.n_regs > 0 and r.n_spills == 0
        assert r.sass_instructions and r.sass_instructions > 5
        assert "Function : " in read_blob(recorded, r.stages["sass"]).decode()


# --------------------------------------------------------------------------- rebuilding


def test_rebuild_with_the_same_compiler_gives_identical_digests(recorded, same_rebuild):
    want = digests(load_index(recorded))
    assert digests(same_rebuild) == want
    assert all(len(d) == len(STAGES) or sass.cuobjdump() is None for d in want.values())
    assert [r.id for r in same_rebuild.records] == [r.id for r in load_index(recorded).records]
    assert all(not r.error and not r.notes for r in same_rebuild.records)


def test_rebuild_elsewhere_gives_identical_stage_digests(recorded, tmp_path):
    """Another machine: the sources at another path, another cwd and cache dir."""
    src = tmp_path / "some" / "other" / "checkout"
    shutil.copytree(BENCHPKG_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path, src=src)
    assert proc.returncode == 0, proc.stderr
    assert digests(load_index(tmp_path / "out")) == digests(load_index(recorded))
    # the cubins name the other path in their line info, their code is the same: the
    # recorder wrote each one's code digest, and the rebuild took the record's SASS
    # instead of disassembling (blob "": not stored again)
    base = {r.id: r.result for r in load_index(recorded).records}
    for r in load_index(tmp_path / "out").records:
        assert base[r.id].cubin_code_sha256
        assert r.result.cubin_code_sha256 == base[r.id].cubin_code_sha256
        if sass.cuobjdump() is not None:
            assert r.result.stages["sass"].blob == ""


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_rebuild_with_a_patched_compiler_changes_exactly_the_patched_kernels(
    name, recorded, tmp_path
):
    patch = PATCHES[name]
    site = patched_triton(tmp_path / "site", name)
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path, site)
    assert proc.returncode == 0, proc.stderr
    before, after = load_index(recorded), load_index(tmp_path / "out")
    a, b = digests(before), digests(after)
    for rec in before.records:
        touched = patch.kernels is None or rec.request.kernel.name in patch.kernels
        want = patch.stage if touched else None
        if want == "sass" and sass.cuobjdump() is None:
            want = None
        assert _first_changed(a[rec.id], b[rec.id]) == want, rec.request.kernel.name


@pytest.mark.skipif(sass.cuobjdump() is None, reason="triton has no bundled cuobjdump here")
def test_rebuild_with_ptxas_optimisation_disabled_changes_only_sass_and_says_why(
    recorded, tmp_path
):
    """The H200 case of issue 11: DISABLE_PTXAS_OPT=1 leaves every IR as it was."""
    env = {"DISABLE_PTXAS_OPT": "1"}
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path, None, env=env)
    assert proc.returncode == 0, proc.stderr
    before, after = load_index(recorded), load_index(tmp_path / "out")
    a, b = digests(before), digests(after)
    assert {_first_changed(a[i], b[i]) for i in a} == {"sass"}
    assert all(r.result.env == {"DISABLE_PTXAS_OPT": "true"} for r in after.records)
    assert all("DISABLE_PTXAS_OPT" not in r.result.env for r in before.records)


def test_rebuild_reports_kernels_that_fail_and_builds_the_others(recorded, tmp_path):
    index = load_index(recorded)
    bad = [r.model_copy(deep=True) for r in index.records[:3]]
    const = bad[0].request.constexprs[-1]
    bad[0].request.constexprs[-1] = const.model_copy(update={"kind": "str", "value": "x"})
    bad[1].request.kernel.module = "no_such_module_zl"
    const = bad[2].request.constexprs[-1]
    bad[2].request.constexprs[-1] = const.model_copy(update={"kind": "repr", "value": "<obj>"})
    good = index.records[3]
    path = tmp_path / "in.json"
    path.write_text(CodegenIndex(records=[*bad, good]).model_dump_json(), encoding="utf-8")
    proc = rebuild(path, tmp_path / "out", tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    out = load_index(tmp_path / "out").records
    assert out[0].error.startswith("compile failed: ") and out[0].result is None
    assert out[1].error == "load failed: ModuleNotFoundError: No module named 'no_such_module_zl'"
    assert out[2].error == "load failed: ValueError: constexpr <obj> was recorded as repr only"
    assert out[3].error is None and digests(CodegenIndex(records=[out[3]])) == {
        good.id: digests(index)[good.id]}  # fmt: skip
    assert "failed=3" in proc.stdout


def test_rebuild_notes_a_kernel_whose_source_changed(recorded, tmp_path):
    index = load_index(recorded)
    rec = index.records[0].model_copy(deep=True)
    rec.request.kernel.source_sha256 = "0" * 64
    path = tmp_path / "in.json"
    path.write_text(CodegenIndex(records=[rec]).model_dump_json(), encoding="utf-8")
    assert rebuild(path, tmp_path / "out", tmp_path).returncode == 0
    (out,) = load_index(tmp_path / "out").records
    assert out.result is not None and out.notes[0].startswith("source changed: ")


def test_rebuild_notes_a_kernel_whose_cache_key_alone_differs(recorded, tmp_path):
    """Same source, other cache key (a called JIT function or a global it reads): a
    note that names what triton's key covers; the stages decide the class."""
    index = load_index(recorded)
    rec = index.records[0].model_copy(deep=True)
    rec.request.kernel.cache_key = "not-the-key-here"
    path = tmp_path / "in.json"
    path.write_text(CodegenIndex(records=[rec]).model_dump_json(), encoding="utf-8")
    assert rebuild(path, tmp_path / "out", tmp_path).returncode == 0
    (out,) = load_index(tmp_path / "out").records
    assert out.notes[0].startswith("dependencies changed: triton's cache key differs here")
    assert digests(load_index(tmp_path / "out"))[rec.id] == digests(index)[rec.id]


def test_rebuild_shard_takes_every_nth_record(recorded, tmp_path):
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path, None, "--shard", "1/5")
    assert proc.returncode == 0, proc.stderr
    ids = [r.id for r in load_index(recorded).records]
    assert [r.id for r in load_index(tmp_path / "out").records] == ids[1::5]


# --------------------------------------------------------------------------- bad input


def test_rebuild_of_a_corrupted_index_is_one_line_and_exit_2(recorded, tmp_path):
    bad = tmp_path / "index.json"
    bad.write_text((recorded / "index.json").read_text()[:500], encoding="utf-8")
    proc = rebuild(bad, tmp_path / "out", tmp_path)
    assert proc.returncode == 2
    assert (
        proc.stderr.count("\n") == 1 and "not valid JSON (truncated or corrupted?)" in proc.stderr
    )
    assert not (tmp_path / "out").exists()


def test_corrupted_codegen_index_or_blob_is_one_zlbench_error(recorded, tmp_path):
    run = tmp_path / "run"
    (run / "codegen").mkdir(parents=True)
    (run / "codegen" / "index.json").write_text('{"schema_version": 1, "records": [{"id": 3}]}')
    with pytest.raises(ZlbenchError, match=r"index.json: field 'records.0.id'"):
        load_codegen_index(run)
    assert load_codegen_index(tmp_path / "no-codegen") is None
    digest = load_index(recorded).records[0].result.stages["ttgir"]
    (run / "codegen" / "blobs").mkdir()
    (run / "codegen" / digest.blob).write_bytes(b"not gzip")
    with pytest.raises(ZlbenchError, match="codegen blob corrupt"):
        read_blob(run / "codegen", digest)


# --------------------------------------------------------------------------- the plugin


def _run_benchpkg(
    root: Path, ops: list[tuple[str, str]], *extra: str, env_extra: dict | None = None
) -> subprocess.CompletedProcess:
    entries = [entry(root, op, nodeid) for op, nodeid in ops]
    plan = root / "plan.json"
    plan.write_text(WorkerPlan(entries=entries).model_dump_json(), encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "zlbench.plugins.loader",
           "--zl-plan", str(plan), *FAST, *extra, *[n for _, n in ops]]  # fmt: skip
    env = subprocess_env(root, src=root / "src")
    env.update(env_extra or {})
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)


def test_plugin_records_each_op_and_attributes_kernels_to_its_rows(tmp_path):
    root = copy_benchpkg(tmp_path / "suite")
    ops = [("add", "benchmark/test_add.py::test_add"), ("mm", "benchmark/test_mm.py::test_mm"),
           ("pinned_add", "benchmark/test_hardcoded_shapes.py::test_pinned_add")]  # fmt: skip
    proc = _run_benchpkg(root, ops, "--zl-codegen-standin", "cuda:90")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for op, kernel in (("add", "add_kernel"), ("mm", "mm_kernel"), ("pinned_add", "add_kernel")):
        run_dir = root / "runs" / "main" / op
        index = load_codegen_index(run_dir)
        assert {r.request.kernel.name for r in index.records} == {kernel}
        result = load_json_model(run_dir / "result.json", RunResult)
        rows = {(r.dtype, r.shape) for r in result.rows}
        used = {(u.dtype, u.shape) for r in index.records for u in r.used_by}
        assert rows and rows <= used, (op, rows - used)
        assert all(u.run_name == op and u.op == op for r in index.records for u in r.used_by)
        for rec in index.records:
            for digest in rec.result.stages.values():
                assert (run_dir / "codegen" / digest.blob).is_file()
    # pinned_add (n=48) reuses add's kernels (n=64: same specialisation) from triton's
    # in-process cache: nothing compiles, the launches alone attribute them
    runs = root / "runs" / "main"
    add = {r.id: r.result.times for r in load_codegen_index(runs / "add").records}
    pinned = {r.id: r.result.times for r in load_codegen_index(runs / "pinned_add").records}
    assert pinned and all(add[i] == t for i, t in pinned.items())  # the same compilations


def test_plugin_writes_nothing_under_the_interpreter(tmp_path):
    root = copy_benchpkg(tmp_path / "suite")
    ops = [("add", "benchmark/test_add.py::test_add")]
    proc = _run_benchpkg(root, ops, env_extra={"TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (root / "runs" / "main" / "add" / "result.json").is_file()
    assert not (root / "runs" / "main" / "add" / "codegen").exists()
