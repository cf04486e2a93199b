"""zlbench.codegen.diff: classification by first differing stage, deltas, diff text."""

from __future__ import annotations

import pytest

from tests.support.cgsynth import record, request, stage_texts
from zlbench.codegen.diff import (
    classify,
    config_text,
    count_classes,
    first_differing_stage,
    resource_deltas,
    resources,
    screen_kernel,
    stage_diff,
)
from zlbench.models.codegen import STAGES, CompileRecord
from zlbench.models.codegen_screen import CLASS_LABELS, CodegenClass, Resources

REQ = request()
BASE = record(REQ, stage_texts())

# The class a change first seen at each stage gives.
EXPECTED = {
    "ttir": CodegenClass.TTGIR,
    "ttgir": CodegenClass.TTGIR,
    "llir": CodegenClass.LLIR_PTX,
    "ptx": CodegenClass.LLIR_PTX,
    "sass": CodegenClass.SASS,
}


def _changed_from(stage: str) -> dict[str, bytes]:
    """A rebuild whose outputs differ from ``stage`` on (a change propagates)."""
    later = STAGES[STAGES.index(stage) :]
    return stage_texts(**{s: f"changed {s}\n" for s in later})


def test_same_outputs_are_identical():
    assert classify(BASE, record(REQ, stage_texts())) == (CodegenClass.IDENTICAL, None, None)


@pytest.mark.parametrize("stage", STAGES)
def test_first_differing_stage_decides_the_class(stage):
    cur = record(REQ, _changed_from(stage))
    assert classify(BASE, cur) == (EXPECTED[stage], stage, None)


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_changed_alone_is_found_in_pipeline_order(stage):
    # Only that one stage differs (e.g. a normalisation quirk): still the first one.
    cur = record(REQ, stage_texts(**{stage: "other\n"}))
    assert first_differing_stage(BASE.result, cur.result) == stage


def test_earliest_of_several_differing_stages_wins():
    cur = record(REQ, stage_texts(ptx="p\n", llir="l\n", sass="c\n"))
    assert first_differing_stage(BASE.result, cur.result) == "llir"


def test_stage_only_one_side_has_counts_as_changed():
    texts = stage_texts()
    del texts["ttir"]
    cur = record(REQ, texts)
    assert classify(BASE, cur)[:2] == (CodegenClass.TTGIR, "ttir")


def test_cubin_digest_stands_in_for_sass_only_when_neither_side_has_sass():
    a = record(REQ, {"ptx": b"same\n"}, cubin_sha256="a" * 64)
    b = record(REQ, {"ptx": b"same\n"}, cubin_sha256="b" * 64)
    same = record(REQ, {"ptx": b"same\n"}, cubin_sha256="a" * 64)
    assert classify(a, b)[:2] == (CodegenClass.SASS, "sass")
    assert classify(a, same)[0] is CodegenClass.IDENTICAL
    # With SASS on both sides the (machine-dependent) cubin digest is ignored.
    c = record(REQ, stage_texts(), cubin_sha256="c" * 64)
    d = record(REQ, stage_texts(), cubin_sha256="d" * 64)
    assert classify(c, d)[0] is CodegenClass.IDENTICAL


def test_identical_ptx_without_sass_on_one_side_is_not_proof():
    texts = stage_texts()
    del texts["sass"]
    assert classify(BASE, record(REQ, texts))[:2] == (CodegenClass.SASS, "sass")


def test_no_common_stage_is_never_identical():
    a = record(REQ, {"ttgir": b"x\n"})
    b = record(REQ, {})
    status, stage, why = classify(a, b)
    assert status is CodegenClass.MISSING and stage is None and "no stage" in why


def test_failed_rebuild_is_compile_failed_with_its_error():
    status, stage, why = classify(BASE, record(REQ, None))
    assert status is CodegenClass.FAILED and stage is None and "RuntimeError: boom" in why


def test_source_not_loadable_is_missing_not_failed():
    cur = CompileRecord(id=REQ.key(), request=REQ, error="load failed: ModuleNotFoundError: x")
    assert classify(BASE, cur) == (CodegenClass.MISSING, None, cur.error)


def test_no_rebuild_is_missing():
    assert classify(BASE, None) == (CodegenClass.MISSING, None, "no rebuild result")


def test_baseline_without_result_is_missing():
    assert classify(record(REQ, None), BASE)[0] is CodegenClass.MISSING


def test_every_class_has_a_label():
    assert set(CLASS_LABELS) == set(CodegenClass)


def test_resource_deltas_are_current_minus_baseline():
    base = record(REQ, stage_texts(), n_regs=32, n_spills=0, shared=1024, sass_instructions=100)
    cur = record(
        REQ, _changed_from("ptx"), n_regs=40, n_spills=2, shared=0, sass_instructions=90,
        times={"ttir": 0.5},
    )  # fmt: skip
    d = resource_deltas(resources(base.result), resources(cur.result))
    assert d == {
        "n_regs": 8,
        "n_spills": 2,
        "shared": -1024,
        "sass_instructions": -10,
        "compile_s": pytest.approx(0.5 - 0.13),
    }


def test_unknown_figures_have_no_delta():
    d = resource_deltas(Resources(n_regs=3), Resources(n_regs=None, shared=4))
    assert d == {}
    assert resource_deltas(Resources(n_regs=3), None) == {}


def test_cache_hit_has_no_compile_time():
    res = record(REQ, stage_texts(), cache_hit=True).result
    assert resources(res).compile_s is None


def test_config_names_constexprs_and_launch_config():
    assert config_text(request(block=128, num_warps=2)) == "BLOCK=128 num_warps=2 num_stages=3"


def test_screen_kernel_keeps_diff_file_only_when_changed():
    same = screen_kernel(BASE, record(REQ, stage_texts()), ["main/add"], diff_file="diffs/x.diff")
    changed = screen_kernel(BASE, record(REQ, _changed_from("ttgir")), ["main/add"], (), "d.diff")
    assert same.diff_file is None and same.status is CodegenClass.IDENTICAL
    assert changed.diff_file == "d.diff" and changed.first_stage == "ttgir"
    assert changed.name == "add_kernel" and changed.ops == ["main/add"]
    assert changed.kernel_id == REQ.key()


def test_count_classes_lists_every_class():
    ks = [
        screen_kernel(BASE, record(REQ, stage_texts())),
        screen_kernel(BASE, record(REQ, _changed_from("sass"))),
        screen_kernel(BASE, None),
    ]
    counts = count_classes(ks)
    assert set(counts) == {c.value for c in CodegenClass}
    assert counts["identical"] == 1 and counts["sass_changed"] == 1 and counts["missing"] == 1
    assert sum(counts.values()) == 3


def test_stage_diff_is_a_unified_diff_of_the_stage():
    text = stage_diff("abc", "ttgir", b"a\nb\nc\n", b"a\nB\nc\n")
    assert text.splitlines() == [
        "--- baseline/abc.ttgir",
        "+++ current/abc.ttgir",
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
    ]


def test_stage_diff_of_binary_names_sizes():
    text = stage_diff("abc", "sass", b"\x7fELF\0ab", b"\x7fELF\0abc")
    assert text == "# abc sass: binary outputs differ (baseline 7 bytes, current 8 bytes)\n"


def test_stage_diff_is_cut_at_the_limit(monkeypatch):
    import zlbench.codegen.diff as d

    monkeypatch.setattr(d, "DIFF_LINE_LIMIT", 10)
    a = "".join(f"{i}\n" for i in range(50)).encode()
    b = "".join(f"x{i}\n" for i in range(50)).encode()
    lines = stage_diff("k", "llir", a, b).splitlines()
    assert len(lines) == 11 and lines[-1] == "# ... 93 more diff lines cut"
