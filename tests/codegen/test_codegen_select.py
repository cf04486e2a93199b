"""zlbench.codegen.select: which ops the gate must time; row explanations."""

from __future__ import annotations

from pathlib import Path

from zlbench.codegen.select import EXPLAINED, annotate_rows, kernel_note, ops_to_time, row_notes
from zlbench.gate.plan import read_ops_file
from zlbench.models import BaselineResult, BaselineRow, RowKey, RowVerdict, Verdict
from zlbench.models.codegen_screen import (
    UNNAMED_SHAPE,
    CodegenClass,
    CodegenScreen,
    KernelScreen,
)
from zlbench.report.codegen import note_text, row_explanation

SHAPE = "[torch.Size([64])]"


def _shape(i: int) -> str:
    return SHAPE if i == 0 else f"[torch.Size([{64 + i}])]"


def _rows(run_name: str, n: int) -> list[RowKey]:
    return [RowKey(repo="main", run_name=run_name, op=run_name, dtype="float16", shape=_shape(i))
            for i in range(n)]  # fmt: skip


def _result(run_name: str, n: int = 1, op: str | None = None) -> BaselineResult:
    rows = [BaselineRow(op=run_name, dtype="float16", shape=_shape(i)) for i in range(n)]
    return BaselineResult(
        repo="main", run_name=run_name, op=op or run_name, timing="cudagraph", rows=rows
    )


def _kernel(name: str, status: CodegenClass, rows: list[RowKey], **kw) -> KernelScreen:
    ops = sorted({f"{r.repo}/{r.run_name}" for r in rows})
    return KernelScreen(kernel_id=f"id-{name}", name=name, status=status, ops=ops, rows=rows, **kw)


def _screen(*kernels: KernelScreen, without: tuple[str, ...] = ()) -> CodegenScreen:
    return CodegenScreen(baseline_dir="b", kernels=list(kernels), ops_without_records=list(without))


BASE = {
    "main/add": _result("add", 2),
    "main/mm": _result("mm", 1),
    "main/sum": _result("sum", 1),
}


def test_op_with_all_kernels_identical_and_rows_covered_is_skipped():
    s = _screen(
        _kernel("add_k", CodegenClass.IDENTICAL, _rows("add", 2)),
        _kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)),
        _kernel("sum_k", CodegenClass.IDENTICAL, _rows("sum", 1)),
    )
    plan = ops_to_time(s, BASE)
    assert plan.time == {}
    assert set(plan.skip) == set(BASE)
    assert plan.skip["main/add"] == "all 1 kernel(s) identical; all 2 row(s) covered"


def test_every_unproven_class_makes_the_op_timed():
    for status in CodegenClass:
        if status is CodegenClass.IDENTICAL:
            continue
        s = _screen(
            _kernel("add_k", status, _rows("add", 2)),
            _kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)),
            _kernel("sum_k", CodegenClass.IDENTICAL, _rows("sum", 1)),
        )
        plan = ops_to_time(s, BASE)
        assert plan.timed_ops() == {"main/add"}, status
        assert plan.time["main/add"].startswith("kernel(s) add_k (")


def test_shared_kernel_change_times_every_op_that_launched_it():
    shared = _kernel("helper", CodegenClass.SASS, _rows("add", 2) + _rows("sum", 1))
    s = _screen(shared, _kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)))
    assert ops_to_time(s, BASE).timed_ops() == {"main/add", "main/sum"}


def test_row_no_record_names_is_timed():
    s = _screen(
        _kernel("add_k", CodegenClass.IDENTICAL, _rows("add", 1)),  # the 2nd shape unnamed
        _kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)),
        _kernel("sum_k", CodegenClass.IDENTICAL, _rows("sum", 1)),
    )
    plan = ops_to_time(s, BASE)
    assert plan.time == {"main/add": "1 row(s) whose kernels the records do not name"}


def test_op_without_records_or_kernels_is_timed():
    s = _screen(_kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)), without=("main/add",))
    plan = ops_to_time(s, BASE)
    assert plan.time == {
        "main/add": "no codegen records in the baseline",
        "main/sum": "no kernel of this op in the codegen screen",
    }
    assert set(plan.skip) == {"main/mm"}


def test_an_op_whose_index_is_empty_launches_no_kernel_and_is_skipped():
    """v6's has_compatible_shallow_copy_type (2026-12-02): an index without a record is
    the recorder's claim that the op compiled and launched no Triton kernel; an op the
    screen merely holds no kernel of (no such claim) is still timed, a sentinel too."""
    s = _screen(_kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm", 1)))
    s.ops_without_kernels = ["main/add"]
    plan = ops_to_time(s, BASE)
    assert plan.skip["main/add"] == (
        "launches no Triton kernel (its record pass compiled and launched none); "
        "all 2 row(s) covered"
    )
    assert plan.time == {"main/sum": "no kernel of this op in the codegen screen"}
    assert ops_to_time(s, BASE, sentinels=["add"]).time["main/add"] == "sentinel op"


def _unnamed(run_name: str, dtype: str = "float16") -> RowKey:
    return RowKey(repo="main", run_name=run_name, op=run_name, dtype=dtype, shape=UNNAMED_SHAPE)


def test_rows_of_a_dtype_whose_uses_named_no_shape_are_covered_by_them():
    """v6's concat (2026-12-02): its kernels' uses named the dtype, not the shape (the
    launch came before the benchmark named the row), and its 5 rows were timed on every
    PR. They stand for every row of that dtype no use names; another dtype's row is not
    covered, and a change in them makes the op and its rows changed."""
    ok = _kernel("cat_k", CodegenClass.IDENTICAL, [_unnamed("add")], timed_rows=[_unnamed("add")])
    plan = ops_to_time(_screen(ok), {"main/add": BASE["main/add"]})
    assert plan.skip == {"main/add": "all 1 kernel(s) identical; all 2 row(s) covered"}
    other = _kernel("cat_k", CodegenClass.IDENTICAL, [_unnamed("add", "float32")])
    plan = ops_to_time(_screen(other), {"main/add": BASE["main/add"]})
    assert plan.time == {"main/add": "2 row(s) whose kernels the records do not name"}
    bad = _kernel("cat_k", CodegenClass.TTGIR, [_unnamed("add")], first_stage="ttgir")
    plan = ops_to_time(_screen(bad), {"main/add": BASE["main/add"]})
    assert plan.time == {"main/add": "kernel(s) cat_k (TTGIR changed)"}
    notes = row_notes(_rows("add", 2), _screen(bad))
    assert [[n.name for n in v] for v in notes.values()] == [["cat_k"], ["cat_k"]]


def test_sentinels_are_always_timed_by_any_spec_form():
    s = _screen(
        _kernel("add_k", CodegenClass.IDENTICAL, _rows("add", 2)),
        _kernel("mm_k", CodegenClass.IDENTICAL, _rows("mm__at__test_mm.py", 1)),
        _kernel("sum_k", CodegenClass.IDENTICAL, _rows("sum", 1)),
    )
    base = dict(BASE)
    base["main/mm__at__test_mm.py"] = _result("mm__at__test_mm.py", 1, op="mm@test_mm.py")
    del base["main/mm"]
    plan = ops_to_time(s, base, sentinels=["add", "mm@test_mm.py"])
    assert plan.time == {"main/add": "sentinel op", "main/mm__at__test_mm.py": "sentinel op"}
    assert set(plan.skip) == {"main/sum"}


def test_a_sentinel_whose_kernels_changed_is_timed_for_its_changed_kernels():
    """The H200 gate under no_pipeline labelled mm "sentinel op" and hid its TTGIR change."""
    s = _screen(
        _kernel("mm_k", CodegenClass.TTGIR, _rows("mm", 1), first_stage="ttgir"),
        _kernel("add_k", CodegenClass.IDENTICAL, _rows("add", 2)),
    )
    plan = ops_to_time(s, {k: BASE[k] for k in ("main/mm", "main/add")}, sentinels=["mm", "add"])
    assert plan.time["main/mm"] == "kernel(s) mm_k (TTGIR changed); sentinel op"
    assert plan.time["main/add"] == "sentinel op"


def test_row_notes_put_changed_kernels_first_and_prefix_diffs():
    rows = _rows("add", 2)
    changed = _kernel(
        "b_kernel", CodegenClass.TTGIR, rows[:1], first_stage="ttgir", config="BLOCK=64",
        deltas={"n_regs": 8.0, "compile_s": 0.1}, diff_file="diffs/id-b.diff",
    )  # fmt: skip
    same = _kernel("a_kernel", CodegenClass.IDENTICAL, rows)
    notes = row_notes(rows, _screen(same, changed), diff_prefix="codegen/")
    assert [n.name for n in notes[rows[0]]] == ["b_kernel", "a_kernel"]
    assert [n.name for n in notes[rows[1]]] == ["a_kernel"]
    assert notes[rows[0]][0].diff_file == "codegen/diffs/id-b.diff"
    assert row_notes(_rows("zzz", 1), _screen(same))[_rows("zzz", 1)[0]] == []


def test_row_explanation_text():
    rows = _rows("add", 1)
    k = _kernel(
        "b_kernel", CodegenClass.TTGIR, rows, first_stage="ttgir", config="BLOCK=64",
        deltas={"n_regs": 8.0, "n_spills": 0.0, "compile_s": 0.1}, diff_file="diffs/x.diff",
    )  # fmt: skip
    note = kernel_note(k, "codegen/")
    assert note_text(note) == (
        "b_kernel [BLOCK=64]: TTGIR differs; regs +8; diff codegen/diffs/x.diff"
    )
    assert row_explanation([note]) == (
        "codegen: b_kernel: regs +8; TTGIR differs; diff codegen/diffs/x.diff"
    )
    same = kernel_note(_kernel("a", CodegenClass.IDENTICAL, rows))
    assert row_explanation([same, same]) == "codegen: all 2 kernel(s) identical to the baseline's"
    assert row_explanation([]) == "codegen: kernels unknown (no record names this row)"
    failed = kernel_note(_kernel("f", CodegenClass.FAILED, rows, error="compile failed: X"))
    assert note_text(failed) == "f: no longer compiles: X"
    assert row_explanation([note, failed]) == (
        "codegen: f: no longer compiles: X; +1 other changed kernel(s)"
    )


def test_sentinels_are_gate_core_ops_of_every_kind():
    ops = Path(__file__).resolve().parents[2] / "ops"
    sentinels = read_ops_file(ops / "sentinels.txt")
    assert set(sentinels) <= set(read_ops_file(ops / "gate_core.txt"))
    assert {"add", "sum", "mm@test_mm.py"} <= set(sentinels)


def test_rows_match_on_run_dtype_shape_not_op_text_or_occurrence():
    # The recorder names a row by its op's selector and never counts occurrences.
    recorded = [RowKey(repo="main", run_name="mm__at__test_mm.py", op="mm@test_mm.py",
                       dtype="float16", shape=SHAPE)]  # fmt: skip
    k = _kernel("mm_k", CodegenClass.IDENTICAL, recorded)
    base = {"main/mm__at__test_mm.py": _result("mm__at__test_mm.py", 1, op="mm@test_mm.py")}
    first = base["main/mm__at__test_mm.py"].rows[0]
    first.op = "mm"
    base["main/mm__at__test_mm.py"].rows.append(first.model_copy(update={"occurrence": 1}))
    plan = ops_to_time(_screen(k), base)
    assert set(plan.skip) == {"main/mm__at__test_mm.py"}
    judged = [r.key("main", "mm__at__test_mm.py") for r in base["main/mm__at__test_mm.py"].rows]
    notes = row_notes(judged, _screen(k))
    assert [[n.name for n in notes[j]] for j in judged] == [["mm_k"], ["mm_k"]]
    other = judged[0].model_copy(update={"dtype": "bfloat16"})
    assert row_notes([other], _screen(k))[other] == []


def test_annotate_rows_explains_rows_to_act_on_only():
    rows = _rows("add", 2)
    k = _kernel("add_k", CodegenClass.SASS, rows[:1], first_stage="sass", diff_file="diffs/a.diff")
    verdicts = [
        RowVerdict(key=rows[0], verdict=Verdict.REGRESSION, reason="slower"),
        RowVerdict(key=rows[1], verdict=Verdict.PASS),
    ]
    out = annotate_rows(verdicts, _screen(k), diff_prefix="codegen/")
    assert out[0].reason == "slower; codegen: add_k: only SASS differs; diff codegen/diffs/a.diff"
    assert out[1] == verdicts[1] and verdicts[0].reason == "slower"  # copies, PASS untouched
    for v in EXPLAINED:
        (row,) = annotate_rows([RowVerdict(key=rows[1], verdict=v)], _screen(k))
        assert row.reason == "codegen: kernels unknown (no record names this row)"
