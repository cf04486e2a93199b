"""Each screened kernel carries a digest of the code the compiler under test built
(KernelScreen.code_digest, zlbench.codegen.diff.code_digest): the history store names
the kernels whose code changed between two commits by it (issue 52 follow-up)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cgsynth import record, request, result, stage_texts, use, write_run
from zlbench.codegen import worker_pool
from zlbench.codegen.diff import LOAD_FAILED, code_digest, screen_kernel
from zlbench.codegen.screen import BaseSide, ScreenOptions, run_screen
from zlbench.codegen.select import kernel_note
from zlbench.models import dump_json_model, load_json_model
from zlbench.models.codegen import CompileRecord
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelNote, KernelScreen

REPO = Path(__file__).resolve().parents[2]
ADD = request("add_kernel")


def test_the_digest_is_16_hex_of_the_stages_and_changes_with_any_stage():
    d = code_digest(record(ADD, stage_texts("add")))
    assert len(d) == 16 and int(d, 16) >= 0
    assert code_digest(record(ADD, stage_texts("add"))) == d  # the same code, the same digest
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        changed = record(ADD, stage_texts("add", **{stage: f"changed {stage}\n"}))
        assert code_digest(changed) != d, stage


def test_it_is_the_digest_bisect_and_the_history_simulator_give_a_kernel():
    """zlbench bisect keeps each probe's kernels as {stage: sha256}; the simulator
    (benchmarks/history_sim.py) stores 16 hex of their sorted JSON: the same text."""
    import hashlib

    from zlbench.workflow.bisect import _digests

    rec = record(ADD, stage_texts("add"))
    text = json.dumps(_digests(rec), sort_keys=True)
    assert code_digest(rec) == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_a_failed_compile_has_a_digest_and_nothing_compiled_has_none():
    failed = code_digest(record(ADD, None))
    assert len(failed) == 16 and failed != code_digest(record(ADD, stage_texts("add")))
    not_loaded = CompileRecord(id=ADD.key(), request=ADD, error=f"{LOAD_FAILED}: no module x")
    assert code_digest(not_loaded) == "" and code_digest(None) == ""


def test_without_sass_the_cubins_code_digest_stands_in():
    texts = {k: v for k, v in stage_texts("add").items() if k != "sass"}

    def rec(code: str | None) -> CompileRecord:
        return CompileRecord(
            id=ADD.key(), request=ADD, result=result(texts).model_copy(
                update={"cubin_code_sha256": code}
            )
        )  # fmt: skip

    assert code_digest(rec("a" * 64)) != code_digest(rec("b" * 64))
    assert code_digest(rec(None)) != code_digest(rec("a" * 64))


def test_the_screens_entry_carries_the_rebuilds_digest_whatever_it_was_compared_with():
    built = record(ADD, stage_texts("add", ptx="pr ptx\n"))
    vs_records = screen_kernel(record(ADD, stage_texts("add")), built)
    vs_base = screen_kernel(record(ADD, stage_texts("add", ptx="pr ptx\n")), built)
    assert vs_records.status is CodegenClass.LLIR_PTX and vs_base.status is CodegenClass.IDENTICAL
    assert vs_records.code_digest == vs_base.code_digest == code_digest(built) != ""
    # an identical kernel is rebuilt too, and has its digest
    same = screen_kernel(record(ADD, stage_texts("add")), record(ADD, stage_texts("add")))
    assert same.status is CodegenClass.IDENTICAL and same.code_digest
    assert screen_kernel(record(ADD, stage_texts("add")), None).code_digest == ""


def test_the_rows_kernel_note_carries_it_and_an_old_screen_still_loads(tmp_path):
    k = screen_kernel(record(ADD, stage_texts("add")), record(ADD, stage_texts("add")))
    note = kernel_note(k)
    assert note.code_digest == k.code_digest
    assert f'"code_digest":"{k.code_digest}"' in note.model_dump_json()  # 16 hex a note
    old = CodegenScreen(baseline_dir="bl", kernels=[k]).model_dump(mode="json")
    del old["kernels"][0]["code_digest"]
    (tmp_path / "codegen.json").write_text(json.dumps(old))
    loaded = load_json_model(tmp_path / "codegen.json", CodegenScreen)
    assert loaded.kernels[0].code_digest == ""
    assert KernelNote.model_validate({"kernel_id": "x", "name": "k", "status": "identical"})
    dump_json_model(tmp_path / "again.json", loaded)  # and writes back as it is


# --------------------------------------------------------------------------- the screen


@pytest.fixture
def fake_worker(monkeypatch, tmp_path):
    """The stand-in rebuild worker (tests/support/fakeworker.py); returns a function
    writing the PR's plan and, when given, the base's (its path)."""
    monkeypatch.setattr(worker_pool, "WORKER_MODULE", "tests.support.fakeworker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pr_file, base_file = tmp_path / "pr_plan.json", tmp_path / "base_plan.json"
    monkeypatch.setenv("FAKE_CODEGEN_PLAN", str(pr_file))

    def plans(pr: dict, base: dict | None = None) -> Path:
        pr_file.write_text(json.dumps(pr))
        base_file.write_text(json.dumps(base or {}))
        return base_file

    return plans


def _texts(tag: str, **changed: str) -> dict[str, str]:
    return {k: v.decode() for k, v in stage_texts(tag, **changed).items()}


@pytest.mark.proc
def test_codegen_json_holds_each_kernels_code_digest(fake_worker, tmp_path):
    mul = request("mul_kernel")
    root = tmp_path / "bl"
    for op, req in (("add", ADD), ("mul", mul)):
        tag = req.kernel.name.split("_")[0]
        write_run(root, op, [(record(req, stage_texts(tag), [use(op)]), stage_texts(tag))])
    (root / "manifest.yaml").write_text("recorded\n")
    pr = {"add_kernel": {"texts": _texts("add")}, "mul_kernel": {"texts": _texts("mul", ptx="x\n")}}
    base_plan = fake_worker(pr, pr)

    def screen(out: str, base: BaseSide | None) -> dict[str, KernelScreen]:
        s = run_screen(ScreenOptions(baseline=root, out=tmp_path / out, jobs=1, base=base))
        on_disk = load_json_model(tmp_path / out / "codegen.json", CodegenScreen)
        assert on_disk.kernels == s.kernels
        return {k.name: k for k in on_disk.kernels}

    alone = screen("alone", None)
    texts = {n: {k: v.encode() for k, v in p["texts"].items()} for n, p in pr.items()}
    assert alone["add_kernel"].code_digest == code_digest(record(ADD, texts["add_kernel"]))
    assert alone["mul_kernel"].code_digest == code_digest(record(mul, texts["mul_kernel"]))
    assert alone["mul_kernel"].status is CodegenClass.LLIR_PTX
    # decided against a base that builds the same: identical, the same code digests
    based = screen("based", BaseSide("b", "fp", env={"FAKE_CODEGEN_PLAN": str(base_plan)}))
    assert based["mul_kernel"].status is CodegenClass.IDENTICAL
    assert {n: k.code_digest for n, k in based.items()} == {
        n: k.code_digest for n, k in alone.items()
    }
