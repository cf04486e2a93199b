"""The old scripts' op names and formats (issue 30 item 5, docs/ops.md "Old op names"):
ops/old_names.csv is derived from the shipped inventories; an old name is a hint in an
error, resolves in --ops / an ops file / a dismiss list with a note; the old scripts'
own dismiss list and inventory (tests/data/old_scripts) are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.runner.catalog.inventory import (
    InventoryRow,
    inventory_path,
    load_inventory,
    write_inventory,
)
from zlbench.runner.catalog.old_names import (
    OLD_NAMES_FILE,
    derive_old_names,
    load_old_names,
    render_old_names,
)
from zlbench.runner.catalog.resolve import select
from zlbench.runner.catalog.select import select_ops
from zlbench.runner.run import RunRequest, prepare

REPOS = ["main", "vllm"]
ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
OLD = ROOT / "tests" / "data" / "old_scripts"


def _inventories() -> list[InventoryRow]:
    return load_inventory(inventory_path(OPS, "main")) + load_inventory(inventory_path(OPS, "vllm"))


def _keys(sel) -> list[str]:
    return [o.key for o in sel.ops]


def test_shipped_file_is_what_the_inventories_derive():
    """benchmarks/old_names.py wrote it; re-run it after the inventory changes."""
    text = (OPS / OLD_NAMES_FILE).read_text(encoding="utf-8")
    assert text == render_old_names(derive_old_names(_inventories()))
    names = load_old_names(OPS / OLD_NAMES_FILE)
    main = [r for r in load_inventory(inventory_path(OPS, "main"))]
    assert len(main) == 1123 and len(names) == 237  # one row per renamed test (the issue)
    assert {n.repo for n in names} == {"main"}  # the vllm inventory keeps the old names


def test_an_old_name_in_an_error_says_whose_it_is_not_a_lookalike():
    rows = load_inventory(inventory_path(OPS, "main"))
    with pytest.raises(ZlbenchError) as e:  # one selector, several ops: whose, not which
        select(rows, "blas_benchmark", warn=lambda _: None)
    assert str(e.value) == (
        "unknown op 'blas_benchmark': 'blas_benchmark' is the old name of "
        "addmm@test_blas_perf_parallel.py, baddbmm@test_blas_perf_parallel.py, "
        "bmm@test_blas_perf_parallel.py, mm@test_blas_perf_parallel.py"
    )
    said: list[str] = []
    assert select(rows, "abs_inplace", warn=said.append).selector == "abs_"  # one op: used
    assert said == ["warning: old name abs_inplace: using abs_ (derived from the inventory)"]
    with pytest.raises(ZlbenchError, match="did you mean: abs_"):
        select(rows, "abs__")  # not an old name: the closest ops, as before


def test_run_resolves_an_old_name_from_the_scanned_checkout(tmp_path, capsys):
    bench = tmp_path / "fg" / "benchmark"
    bench.mkdir(parents=True)
    (bench / "test_ok.py").write_text(
        "import pytest\n\n@pytest.mark.ok_\ndef test_ok_inplace():\n    pass\n"
    )
    req = RunRequest(op="ok_inplace", flaggems_dir=str(tmp_path / "fg"), out=str(tmp_path / "r"))
    plan, _ = prepare(req)
    assert [(e.op, e.run_name) for e in plan.entries] == [("ok_", "ok_")]
    assert "warning: old name ok_inplace: using ok_ (derived from the inventory)" in (
        capsys.readouterr().err
    )
    with pytest.raises(ZlbenchError, match="unknown op 'nope_inplace'"):
        prepare(RunRequest(op="nope_inplace", flaggems_dir=str(tmp_path / "fg")))


def test_old_names_in_ops_resolve_with_one_note_each(tmp_path):
    notes: list[str] = []
    sel = select_ops(OPS, specs=["abs_inplace", "main:polygamma_inplace"], warn=notes.append)
    assert _keys(sel) == ["main/abs_", "main/polygamma_"]
    assert notes == [
        "warning: old name abs_inplace: using abs_ (ops/old_names.csv)",
        "warning: old name polygamma_inplace: using polygamma_ (ops/old_names.csv)",
    ]
    ops_file = tmp_path / "old_ops.txt"
    ops_file.write_text("# an old ops list\nbucketize_perf\nblas_benchmark  # all its ops\n")
    sel = select_ops(OPS, ops_file=ops_file, warn=notes.append)
    assert _keys(sel) == [
        "main/bucketize",
        "main/addmm__at__test_blas_perf_parallel.py",
        "main/baddbmm__at__test_blas_perf_parallel.py",
        "main/bmm__at__test_blas_perf_parallel.py",
        "main/mm__at__test_blas_perf_parallel.py",
    ]
    assert len(notes) == 4 and notes[3] == (
        "warning: old name blas_benchmark: using addmm@test_blas_perf_parallel.py, "
        "baddbmm@test_blas_perf_parallel.py, bmm@test_blas_perf_parallel.py, "
        "mm@test_blas_perf_parallel.py (ops/old_names.csv)"
    )


def test_an_op_id_wins_over_an_old_name_and_says_so():
    notes: list[str] = []
    assert _keys(select_ops(OPS, specs=["true_divide"], warn=notes.append)) == ["main/true_divide"]
    assert notes == [
        "note: 'true_divide' is an op of main (selected); 'true_divide' is the old name of "
        "div_tensor@test_true_divide.py (not selected)"
    ]


def test_an_old_name_of_tests_in_two_files_must_name_its_file():
    with pytest.raises(ZlbenchError, match="in 2 files: name one of them") as e:
        select_ops(OPS, specs=["perf_router_gemm"], warn=lambda _: None)
    assert "router_gemm@test_blas_perf_parallel.py, router_gemm@test_router_gemm.py" in str(e.value)
    sel = select_ops(OPS, specs=["perf_router_gemm@test_router_gemm.py"], warn=lambda _: None)
    assert _keys(sel) == ["main/router_gemm__at__test_router_gemm.py"]


def test_the_old_scripts_dismiss_list_dismisses_an_op_for_every_entry():
    notes: list[str] = []
    sel = select_ops(
        OPS,
        all_ops=True,
        repos=["main", "vllm"],
        dismiss_file=OLD / "dismiss.txt",
        warn=notes.append,
    )
    dismissed = {o.key for o, _ in sel.dismissed}
    # 69 main entries, each an op (none lost), and 7 vllm ones; a bare old entry is
    # main's only (flash_attn_varlen_opt_func is a vllm op too, not dismissed there)
    assert len(dismissed) == 76 and len({k for k in dismissed if k.startswith("vllm/")}) == 7
    assert "main/mul__at__test_blas_perf_parallel.py" in dismissed  # perf_mul
    assert "main/mul" not in dismissed and "main/mul__at__test_mul.py" not in dismissed
    assert {"main/polygamma_", "main/scaled_mm", "main/special_log1p"} <= dismissed
    old = [n for n in notes if "is the old name of" in n]
    assert len(old) == 7 and old[0] == (
        "note: dismiss list line 17: 'scaled_mm_benchmark' is the old name of scaled_mm: "
        "dismissed as scaled_mm"
    )
    assert sum("has no date (seed format: a bare op is the main" in n for n in notes) == 76


def test_the_old_scripts_inventory_is_read_with_one_warning(tmp_path):
    warnings: list[str] = []
    rows = load_inventory(OLD / "inventory_vllm.csv", warn=warnings.append)
    assert len(warnings) == 1 and "an inventory of the old scripts" in warnings[0]

    def key(r):
        return (r.op, r.file, r.nodeid)

    assert sorted(rows, key=key) == sorted(load_inventory(inventory_path(OPS, "vllm")), key=key)
    ops = tmp_path / "ops"  # an ops dir that holds the old file as is
    ops.mkdir()
    (ops / "inventory_vllm.csv").write_bytes((OLD / "inventory_vllm.csv").read_bytes())
    sel = select_ops(ops, specs=["vllm:mhc_post"], warn=warnings.append)
    assert [o.nodeids for o in sel.ops] == [("benchmark/test_mhc.py::test_mhc_post",)]
    skipped = select_ops(ops, specs=["vllm:sparse_attn_triton", "vllm:mhc_post"], warn=print)
    assert [o.key for o in skipped.skipped] == ["vllm/sparse_attn_triton"]


def test_an_ops_dir_without_old_names_csv_derives_them_from_its_inventory(tmp_path):
    row = InventoryRow("main", "foo_", "foo_", "", "benchmark/test_foo.py", "test_foo_inplace",
                       "benchmark/test_foo.py::test_foo_inplace", "", "")  # fmt: skip
    write_inventory(inventory_path(tmp_path, "main"), [row])
    notes: list[str] = []
    assert _keys(select_ops(tmp_path, specs=["foo_inplace"], warn=notes.append)) == ["main/foo_"]
    assert notes == ["warning: old name foo_inplace: using foo_ (derived from the inventory)"]


def test_a_malformed_old_names_file_is_one_line(tmp_path):
    (tmp_path / OLD_NAMES_FILE).write_text("old,new\na,b\n")
    with pytest.raises(ZlbenchError, match="not an old-names file"):
        load_old_names(tmp_path / OLD_NAMES_FILE)
