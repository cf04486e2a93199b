"""A store point's timed-kernel digest names each kernel with the digest of the code
the compiler under test built (``name@id=code``), so ``zlbench changes`` names the
kernels whose code changed between two gates (issue 52 follow-up): built here from the
screen's own entries (zlbench.codegen.diff.screen_kernel) through the rows' codegen
notes, as a gate judges them."""

from __future__ import annotations

import random

import pytest

from tests.support.cgsynth import record, request, stage_texts
from zlbench.codegen.diff import screen_kernel
from zlbench.codegen.select import kernel_note
from zlbench.history.bisect import digest_changes
from zlbench.history.record import gate_record, kernel_digest, kernel_pairs
from zlbench.history.store import open_store
from zlbench.models import load_json_model
from zlbench.models.bisect import ChangesReport
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelNote
from zlbench.models.run import RowKey
from zlbench.models.verdict import CodegenSummary, GateVerdict, RowVerdict, Verdict
from zlbench.workflow.changes import ChangesJob, run_changes
from zlbench.workflow.codegen_step import CodegenStep
from zlbench.workflow.codegen_verdict import explain

ADD, MUL = request("add_kernel"), request("mul_kernel")
ROW = RowKey(repo="main", run_name="add", op="add", dtype="bfloat16", shape="[4096]")
OTHER = RowKey(repo="main", run_name="mul", op="mul", dtype="bfloat16", shape="[4096]")


def screen(add_ptx: str = "") -> CodegenScreen:
    """The gate's screen: add_kernel (launched by ROW) and mul_kernel (by ROW and OTHER)
    rebuilt by the PR's compiler (add_kernel's PTX ``add_ptx`` when given), compared
    with the baseline's records."""
    pr_add = stage_texts("add", ptx=add_ptx) if add_ptx else stage_texts("add")
    kernels = [
        screen_kernel(record(ADD, stage_texts("add")), record(ADD, pr_add), rows=[ROW]),
        screen_kernel(record(MUL, stage_texts("mul")), record(MUL, stage_texts("mul")),
                      rows=[ROW, OTHER]),
    ]  # fmt: skip
    return CodegenScreen(baseline_dir="bl", kernels=kernels)


def notes(add_ptx: str = "") -> list[KernelNote]:
    return [kernel_note(k) for k in screen(add_ptx).kernels]


def gate(value_us: float, add_ptx: str = "") -> GateVerdict:
    """A gate's verdict as the judge explains it with its screen (codegen notes on the
    rows whose kernels changed, ``kernel_code`` on every row)."""
    rows = [
        RowVerdict(key=ROW, verdict=Verdict.PASS, current_us=value_us),
        RowVerdict(key=OTHER, verdict=Verdict.PASS, current_us=8.0),
    ]
    v = GateVerdict(
        verdict="PASS", exit_code=0, summary="", baseline="v", baseline_dir="bl",
        results_dir="r", generated="2026-12-05T00:00:00Z", rows=rows,
    )  # fmt: skip
    step = CodegenStep(summary=CodegenSummary(screened=True), screen=screen(add_ptx))
    return explain(v, step)


def test_every_row_of_a_screened_gate_carries_its_kernels_code_notes_or_not():
    same, changed = gate(20.0), gate(20.0, add_ptx="slower ptx\n")
    row = same.rows[0]
    assert row.codegen == [] and row.kernel_code  # identical kernels: no notes
    assert row.kernel_code == kernel_pairs(notes())
    assert changed.rows[0].codegen and changed.rows[0].kernel_code == kernel_pairs(
        notes("slower ptx\n")
    )
    assert same.rows[1].kernel_code == f"mul_kernel@{MUL.key()}={notes()[1].code_digest}"


def test_a_rows_digest_names_each_kernel_with_its_code():
    ns = notes()
    digest = kernel_digest(RowVerdict(key=ROW, verdict=Verdict.PASS, codegen=ns))
    add, mul = sorted(ns, key=lambda n: n.name)
    assert digest == (
        f"add_kernel@{add.kernel_id}={add.code_digest};mul_kernel@{mul.kernel_id}={mul.code_digest}"
    )
    assert len(add.code_digest) == 16 and add.code_digest != mul.code_digest


def test_a_kernel_not_rebuilt_reads_none_and_old_notes_keep_the_old_hash():
    ns = notes()
    ns[1] = ns[1].model_copy(update={"code_digest": "", "status": CodegenClass.MISSING})
    digest = kernel_digest(RowVerdict(key=ROW, verdict=Verdict.PASS, codegen=ns))
    assert digest.endswith(f"mul_kernel@{ns[1].kernel_id}=none")
    old = [n.model_copy(update={"code_digest": ""}) for n in notes()]
    old_digest = kernel_digest(RowVerdict(key=ROW, verdict=Verdict.PASS, codegen=old))
    assert len(old_digest) == 16 and "=" not in old_digest  # one hash of the classes
    assert kernel_digest(RowVerdict(key=ROW, verdict=Verdict.PASS)) == ""


def test_two_gates_whose_one_kernel_differs_name_that_kernel():
    """The first gate's kernels are identical to the baseline's (its rows carry no
    codegen notes), the second's add_kernel changed: the store's digests name it."""
    _, before = gate_record(gate(20.0), _commit("a"))
    _, after = gate_record(gate(22.0, add_ptx="slower ptx\n"), _commit("b"))
    b, a = {p.row: p for p in before}, {p.row: p for p in after}
    row, other = ROW.label(), OTHER.label()
    assert digest_changes(b[row].digest, a[row].digest) == [f"add_kernel@{ADD.key()}"]
    assert digest_changes(b[other].digest, a[other].digest) == []  # mul_kernel the same
    # the same code compared with another baseline: the same digest (what was built)
    rebased = [n.model_copy(update={"status": CodegenClass.TTGIR}) for n in notes()]
    assert kernel_digest(RowVerdict(key=ROW, verdict=Verdict.PASS, codegen=rebased)) == (
        b[row].digest
    )
    # a verdict.json written before kernel_code: the notes' pairs
    noted = RowVerdict(key=ROW, verdict=Verdict.PASS, codegen=notes("slower ptx\n"))
    assert kernel_digest(noted) == a[row].digest


def _commit(sha: str):
    from zlbench.models.history import CommitRef

    return CommitRef(sha=sha * 40)


def test_zlbench_changes_names_the_kernel_whose_code_changed(tmp_path):
    pytest.importorskip("otava.analysis")
    rng = random.Random(52)
    store = tmp_path / "h.sqlite"
    with open_store(store) as s:
        for i in range(16):
            slow = i >= 11
            value = 20.0 * (1.10 if slow else 1.0) * (1 + rng.gauss(0, 0.005))
            s.add_gate(gate(value, add_ptx="slower ptx\n" if slow else ""), f"{i:040x}", position=i)
    summary = run_changes(ChangesJob(store=str(store), out=tmp_path / "out"))
    rep = load_json_model(tmp_path / "out" / "changes.json", ChangesReport)
    assert [(c.row, c.position, c.kernels) for c in rep.changes] == [
        (ROW.label(), 11, [f"add_kernel@{ADD.key()}"])
    ]
    assert f"add_kernel@{ADD.key()}" in summary and "mul_kernel" not in summary
