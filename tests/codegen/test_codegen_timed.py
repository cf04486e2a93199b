"""Timed kernels (zlbench.codegen.timed): only the kernels a row ran inside its timed
region make it changed and explain it; a changed kernel that ran only outside (input
generation, the torch reference) is a setup kernel, listed once, apart; records
without the attribution count every kernel as timed, with one note. Hand-built
screens and indexes; the benchpkg recording end to end: test_codegen_timed_e2e.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.support.cgsynth import record, request, stage_texts, use, write_run
from zlbench.codegen.collect import collect
from zlbench.codegen.diff import screen_kernel
from zlbench.codegen.select import ops_to_time, row_notes
from zlbench.codegen.timed import NO_ATTRIBUTION, TimedKernels
from zlbench.models import BaselineResult, BaselineRow, KernelUse, RowKey, RowVerdict, Verdict
from zlbench.models.codegen_screen import (
    UNNAMED_SHAPE,
    CodegenClass,
    CodegenScreen,
    KernelScreen,
)
from zlbench.plugins import codegen as recorder_plugin
from zlbench.report.codegen import row_explanation
from zlbench.report.why import why_lines
from zlbench.workflow.codegen import summarize

S1, S2 = "[torch.Size([64])]", "[torch.Size([96])]"
T, C = CodegenClass.IDENTICAL, CodegenClass.TTGIR


def row(op: str, shape: str = S1) -> RowKey:
    return RowKey(repo="main", run_name=op, op=op, dtype="float16", shape=shape)


def kernel(name: str, status: CodegenClass, timed=(), setup=(), unknown=()) -> KernelScreen:
    """A kernel run timed at the rows ``timed``, only outside at ``setup``, and with
    no attribution at ``unknown``."""
    rows = [*timed, *setup, *unknown]
    ops = sorted({f"main/{r.run_name}" for r in rows})
    timed_ops = sorted({f"main/{r.run_name}" for r in timed})
    setup_ops = sorted({f"main/{r.run_name}" for r in setup} - set(timed_ops))
    return KernelScreen(
        kernel_id=f"id-{name}", name=name, status=status,
        first_stage="ttgir" if status is C else None, ops=ops, rows=rows,
        timed_ops=timed_ops, setup_ops=setup_ops, timed_rows=list(timed), setup_rows=list(setup),
    )  # fmt: skip


def screen(*kernels: KernelScreen) -> CodegenScreen:
    return CodegenScreen(baseline_dir="b", kernels=list(kernels))


def result(op: str, *shapes: str) -> BaselineResult:
    rows = [BaselineRow(op=op, dtype="float16", shape=s) for s in shapes or (S1,)]
    return BaselineResult(repo="main", run_name=op, op=op, timing="cudagraph", rows=rows)


EMB = {"main/embedding": result("embedding", S1, S2)}
EMB_ROWS = [row("embedding", S1), row("embedding", S2)]


def test_a_changed_setup_kernel_changes_no_op_and_is_listed_apart():
    s = screen(
        kernel("embedding_kernel", T, timed=EMB_ROWS),
        kernel("fill_kernel", C, setup=EMB_ROWS),
    )
    plan = ops_to_time(s, EMB)
    assert plan.time == {}
    assert plan.skip["main/embedding"] == (
        "all 1 timed kernel(s) identical (1 changed outside the timed region); all 2 row(s) covered"
    )
    notes = row_notes(EMB_ROWS, s)
    assert [[n.name for n in notes[r]] for r in EMB_ROWS] == [["embedding_kernel"]] * 2
    assert [k.name for k in TimedKernels.of(s).setup_changed()] == ["fill_kernel"]
    summary = summarize(s, "changed", "codegen/codegen.json")
    assert summary.note == "" and summary.changed == 1


def test_a_changed_timed_kernel_changes_the_op_and_alone_explains_it():
    s = screen(
        kernel("embedding_kernel", C, timed=EMB_ROWS),
        kernel("fill_kernel", C, setup=EMB_ROWS),
    )
    plan = ops_to_time(s, EMB)
    assert plan.time == {"main/embedding": "kernel(s) embedding_kernel (TTGIR changed)"}
    notes = row_notes(EMB_ROWS, s)
    assert row_explanation(notes[EMB_ROWS[0]]).startswith("codegen: embedding_kernel")
    assert "fill_kernel" not in row_explanation(notes[EMB_ROWS[0]])
    assert TimedKernels.of(s).setup_changed()[0].name == "fill_kernel"


def test_without_attribution_every_kernel_counts_with_one_note():
    """A baseline recorded before the attribution (v2, v3): as before, plus the note."""
    s = screen(
        kernel("embedding_kernel", T, unknown=EMB_ROWS),
        kernel("fill_kernel", C, unknown=EMB_ROWS),
    )
    assert ops_to_time(s, EMB).time == {"main/embedding": "kernel(s) fill_kernel (TTGIR changed)"}
    assert [n.name for n in row_notes(EMB_ROWS, s)[EMB_ROWS[0]]] == [
        "fill_kernel",
        "embedding_kernel",
    ]
    assert TimedKernels.of(s).setup_changed() == []
    assert summarize(s, "changed", "x").note == NO_ATTRIBUTION


def test_a_row_with_no_kernel_marked_timed_counts_its_setup_kernels():
    """Row S2's timed side launched no recorded kernel: its kernels all count there."""
    s = screen(
        kernel("embedding_kernel", T, timed=EMB_ROWS[:1]),
        kernel("fill_kernel", C, setup=EMB_ROWS),
    )
    plan = ops_to_time(s, EMB)
    assert plan.time == {"main/embedding": "kernel(s) fill_kernel (TTGIR changed)"}
    notes = row_notes(EMB_ROWS, s)
    assert [n.name for n in notes[EMB_ROWS[0]]] == ["embedding_kernel"]
    assert [n.name for n in notes[EMB_ROWS[1]]] == ["fill_kernel"]
    assert TimedKernels.of(s).setup_changed() == []


def test_an_op_with_no_kernel_marked_timed_is_named_in_the_note():
    base = {**EMB, "main/add": result("add")}
    s = screen(
        kernel("embedding_kernel", T, timed=EMB_ROWS),
        kernel("fill_kernel", C, setup=[*EMB_ROWS, row("add")]),
    )
    assert ops_to_time(s, base).timed_ops() == {"main/add"}
    assert summarize(s, "changed", "x").note == (
        "1 op(s) with no kernel marked timed (main/add): setup kernels count as timed"
    )


def test_a_setup_kernel_that_fails_or_is_missing_always_counts():
    for status in (CodegenClass.FAILED, CodegenClass.MISSING):
        s = screen(
            kernel("embedding_kernel", T, timed=EMB_ROWS),
            kernel("fill_kernel", status, setup=EMB_ROWS),
        )
        assert ops_to_time(s, EMB).timed_ops() == {"main/embedding"}, status
        assert "fill_kernel" in [n.name for n in row_notes(EMB_ROWS, s)[EMB_ROWS[0]]]


def test_a_kernel_timed_in_one_op_and_setup_in_another_is_no_setup_kernel():
    base = {**EMB, "main/fill": result("fill")}
    s = screen(
        kernel("embedding_kernel", T, timed=EMB_ROWS),
        kernel("fill_kernel", C, timed=[row("fill")], setup=EMB_ROWS),
    )
    plan = ops_to_time(s, base)
    assert plan.timed_ops() == {"main/fill"} and "main/embedding" in plan.skip
    assert TimedKernels.of(s).setup_changed() == []


def test_collect_and_screen_keep_where_each_kernel_ran(tmp_path):
    """KernelUse.timed -> KernelScreen.timed_rows/setup_rows (and the ops)."""
    texts = stage_texts("fill")
    t, f = dict(timed=True), dict(timed=False)
    fill = record(request("fill_kernel"), texts, uses=[
        use("embedding", shape=S1).model_copy(update=f),  # input generation of row S1
        use("embedding", shape=S2).model_copy(update=f),
        use("embedding", shape=None).model_copy(update=f),  # the first row's inputs
    ])  # fmt: skip
    emb = record(request("embedding_kernel"), stage_texts("emb"), uses=[
        use("embedding", shape=S1).model_copy(update=t),
        use("embedding", shape=S2).model_copy(update=t),
    ])  # fmt: skip
    old = record(request("old_kernel"), stage_texts("old"), uses=[use("embedding", shape=S1)])
    write_run(tmp_path, "embedding", [(fill, texts), (emb, stage_texts("emb")), (old, {})])
    base = collect(tmp_path)
    by_name = {}
    for kid, rec in base.records.items():
        by_name[rec.request.kernel.name] = screen_kernel(
            rec, rec, base.ops[kid], base.rows[kid],
            op_timed=base.op_timed[kid], row_timed=base.row_timed[kid],
        )  # fmt: skip
    rows = [r.model_copy(update={"op": "embedding"}) for r in EMB_ROWS]
    unnamed = rows[0].model_copy(update={"shape": UNNAMED_SHAPE})  # the use without a shape
    assert by_name["fill_kernel"].setup_ops == ["main/embedding"]
    assert by_name["fill_kernel"].setup_rows == [unnamed, *rows]
    assert by_name["fill_kernel"].timed_rows == []
    # the stand-in row is no row of its own: the setup kernel still counts nowhere
    s = screen(*by_name.values())
    counted = [k.name for k in TimedKernels.of(s).op_kernels("main/embedding")]
    assert "fill_kernel" not in counted and "embedding_kernel" in counted
    assert by_name["embedding_kernel"].timed_ops == ["main/embedding"]
    assert by_name["embedding_kernel"].timed_rows == rows
    assert by_name["old_kernel"].timed_ops == by_name["old_kernel"].setup_ops == []
    assert by_name["old_kernel"].timed_rows == by_name["old_kernel"].setup_rows == []


def test_recorder_marks_each_use_and_merges_a_row_launched_both_ways(monkeypatch):
    """Recorder.note: the flag is part of the dedup key; one use per row, timed when
    any launch of it was."""
    entry = SimpleNamespace(run_name="embedding", op="embedding", run_dir="/nowhere")
    op = SimpleNamespace(entry=entry, dtype="float16", shape=S1)
    timed = [False]
    monkeypatch.setattr(recorder_plugin.state, "current_op", lambda: op)
    monkeypatch.setattr(recorder_plugin.state, "in_timed_region", lambda: timed[0])
    r = recorder_plugin.Recorder()
    rec = record(request("fill_kernel"), stage_texts("fill"))
    r.by_hash["h"] = rec
    r.note("h")
    r.note("h")
    assert r.uses["embedding"][rec.id] == [
        KernelUse(run_name="embedding", op="embedding", dtype="float16", shape=S1, timed=False)
    ]
    timed[0] = True
    r.note("h")
    op.shape = S2
    r.note("h")
    assert [(u.shape, u.timed) for u in r.uses["embedding"][rec.id]] == [(S1, True), (S2, True)]
    timed[0] = False
    r.note("h")  # outside again, after a timed launch: the row stays timed
    assert [(u.shape, u.timed) for u in r.uses["embedding"][rec.id]] == [(S1, True), (S2, True)]


def test_a_kernel_shared_by_many_regressed_rows_is_explained_once():
    """helper_kernel is the largest change of rows b, c and d: one line explains it,
    those rows refer to it; row a names its own, larger change; helper_kernel is not
    repeated on any row line."""
    helper = kernel("helper_kernel", C, timed=[row("a"), row("b"), row("c"), row("d")])
    helper.deltas = {"n_regs": 2.0}
    own = kernel("a_kernel", C, timed=[row("a")])
    own.deltas = {"sass_instructions": 300.0}
    s = screen(helper, own, kernel("e_kernel", T, timed=[row("e")]))
    keys = [row(op) for op in "abcde"]
    notes = row_notes(keys, s)
    rows = [RowVerdict(key=k, verdict=Verdict.REGRESSION, codegen=notes[k]) for k in keys]
    lines = why_lines(rows)
    assert lines[0] == (
        "- `helper_kernel`, the largest change of 3 rows below: regs +2; TTGIR differs"
    )
    assert lines[1] == (
        "- `a` `float16` `[torch.Size([64])]`: `a_kernel`: SASS +300 instructions; TTGIR differs"
    )
    assert lines[2:5] == [
        f"- `{op}` `float16` `[torch.Size([64])]`: `helper_kernel` (above: the largest "
        "change of 3 rows)"
        for op in "bcd"
    ]
    assert lines[5] == (
        "- `e` `float16` `[torch.Size([64])]`: codegen: all 1 kernel\\(s\\) identical to "
        "the baseline's"
    )
    assert len(lines) == 6  # helper_kernel also ran in row a: it explains b-d, named there
    assert sum("helper_kernel" in line and "TTGIR differs" in line for line in lines) == 1


def test_a_row_explanation_names_one_kernel_and_counts_the_rest():
    rows = [row("a")]
    s = screen(*(kernel(f"k{i}_kernel", C, timed=rows) for i in range(5)))
    text = row_explanation(row_notes(rows, s)[rows[0]])
    assert text == "codegen: k0_kernel: TTGIR differs; +4 other changed kernel(s)"


def test_collect_names_the_ops_whose_index_is_empty(tmp_path):
    """An empty index (the op launched no Triton kernel) is not a missing one."""
    texts = stage_texts("add")
    write_run(tmp_path, "add", [(record(request("add_kernel"), texts), texts)])
    write_run(tmp_path, "shallow_copy_check", [])
    write_run(tmp_path, "old", None)
    base = collect(tmp_path)
    assert base.ops_without_kernels == ["main/shallow_copy_check"]
    assert base.ops_without_records == ["main/old"]


def test_recorder_counts_the_kernels_of_a_run_it_could_not_record(monkeypatch):
    """A launch of a kernel without a record (compiled before the recorder, from IR, or
    a record that failed) is counted in its run's index: the screen then proves nothing
    of the op. A run with every kernel recorded says 0, not None (not counted)."""
    entry = SimpleNamespace(run_name="embedding", op="embedding", run_dir="/nowhere")
    op = SimpleNamespace(entry=entry, dtype="float16", shape=S1)
    monkeypatch.setattr(recorder_plugin.state, "current_op", lambda: op)
    monkeypatch.setattr(recorder_plugin.state, "in_timed_region", lambda: True)
    monkeypatch.setattr(recorder_plugin.Recorder, "disassemble_pending", lambda self: None)
    r = recorder_plugin.Recorder()
    rec = r.by_hash["h"] = record(request("fill_kernel"), stage_texts("fill"))
    r.by_id[rec.id] = rec
    r.note("h")
    assert r.index_for("embedding").unrecorded == 0
    r.note("unknown")
    r.note("unknown")  # one kernel, launched twice
    r.on_compile(src=SimpleNamespace(), metadata={"hash": "ir"}, metadata_group={},
                 times=None, cache_hit=False)  # fmt: skip
    assert r.index_for("embedding").unrecorded == 2
    assert r.index_for("other").unrecorded == 0


def test_an_op_with_unrecorded_kernels_is_timed_and_its_empty_index_proves_nothing(tmp_path):
    texts = stage_texts("add")
    add = record(request("add_kernel"), texts, uses=[use("add")])
    for run, kernels in (("add", [(add, texts)]), ("noop", [])):
        write_run(tmp_path, run, kernels)
        index_path = tmp_path / "main" / run / "codegen" / "index.json"
        index = json.loads(index_path.read_text())
        index_path.write_text(json.dumps({**index, "unrecorded": 1}))
    base = collect(tmp_path)
    assert base.unrecorded == {"main/add": 1, "main/noop": 1}
    assert base.ops_without_kernels == []
    s = screen(kernel("add_kernel", T, timed=[row("add")]))
    s.ops_with_unrecorded = base.unrecorded
    s.ops_without_kernels = base.ops_without_kernels
    plan = ops_to_time(s, {"main/add": result("add"), "main/noop": result("noop")})
    assert plan.time == {
        "main/add": "1 kernel(s) its record pass ran without a record",
        "main/noop": "1 kernel(s) its record pass ran without a record",
    }
