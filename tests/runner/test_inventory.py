"""Inventory AST scan, CSV round trip, resolver and shape migration (synthetic checkout)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.runner.catalog.inventory import (
    InventoryRow,
    apply_collected,
    carry_collected,
    class_bases,
    class_chain,
    load_inventory,
    scan_checkout,
    write_inventory,
)
from zlbench.runner.catalog.resolve import all_selectors, resolve, run_name_for, select
from zlbench.runner.catalog.shapes_migrate import migrate_shapes

FILES = {
    "base.py": """
        class Benchmark: pass
        class GenericBenchmark(Benchmark): pass
        class BlasBenchmark(GenericBenchmark): pass
    """,
    "test_pointwise.py": """
        import pytest
        from . import base

        @pytest.mark.abs
        @pytest.mark.skipif(vendor == "x", reason="conditional")
        def test_abs():
            base.GenericBenchmark(op_name="abs", torch_op=None).run()

        @pytest.mark.skip(reason="broken upstream")
        @pytest.mark.neg
        def test_neg():
            base.GenericBenchmark(op_name="neg").run()

        @pytest.mark.skipif(True, reason="never runs")
        @pytest.mark.exp
        def test_exp():
            pass

        @pytest.mark.sin
        def test_sin():
            \"\"\"Doc.\"\"\"
            pytest.skip("not in this build")

        @pytest.mark.cos
        def test_cos_fwd():
            pass

        @pytest.mark.cos
        def test_cos_bwd():
            pass

        @pytest.mark.top
        @pytest.mark.bottom
        def test_two_marks():
            pass

        def test_unmarked():
            pass

        def helper_not_a_test():
            pass
    """,
    "test_blas.py": """
        import pytest
        from .base import BlasBenchmark

        @pytest.mark.mm
        def test_mm():
            BlasBenchmark(op_name="mm").run()
    """,
    "test_blas_parallel.py": """
        import pytest
        import torch

        @pytest.mark.parametrize(
            "op_name, torch_op, bench_cls",
            [
                pytest.param("mm", torch.Tensor.mm, BlasBenchmark, marks=pytest.mark.mm),
                pytest.param("bmm", torch.bmm, BlasBenchmark, marks=[pytest.mark.bmm]),
                pytest.param("xx", None, BlasBenchmark, id="custom", marks=pytest.mark.xx),
            ],
        )
        def test_blas(op_name, torch_op, bench_cls):
            bench_cls(op_name=op_name, torch_op=torch_op).run()
    """,
    "test_module_mark.py": """
        import pytest
        pytestmark = [pytest.mark.skipif(True, reason="module off"), pytest.mark.modop]

        def test_mod():
            pass
    """,
    "test_sub/test_deep.py": """
        import pytest

        @pytest.mark.deep
        def test_deep():
            pass
    """,
    "not_a_test.py": """
        import pytest

        @pytest.mark.ghost
        def test_ghost():
            pass
    """,
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    bench = tmp_path / "fg" / "benchmark"
    for name, text in FILES.items():
        (bench / name).parent.mkdir(parents=True, exist_ok=True)
        (bench / name).write_text(textwrap.dedent(text))
    return tmp_path / "fg"


def _by_nodeid(rows: list[InventoryRow]) -> dict[str, InventoryRow]:
    return {r.nodeid: r for r in rows}


def test_scan_ops_files_and_op_names(checkout):
    rows = _by_nodeid(scan_checkout(checkout))
    abs_ = rows["benchmark/test_pointwise.py::test_abs"]
    assert (abs_.op, abs_.op_name, abs_.bench_class, abs_.skip) == (
        "abs",
        "abs",
        "GenericBenchmark",
        "",
    )
    assert rows["benchmark/test_sub/test_deep.py::test_deep"].op == "deep"
    # pytest lists the bottom decorator's mark first: upstream's op id is "bottom".
    assert rows["benchmark/test_pointwise.py::test_two_marks"].op == "bottom"
    assert not any("unmarked" in n or "ghost" in n for n in rows)
    assert rows["benchmark/test_module_mark.py::test_mod"].op == "modop"


def test_scan_param_marks_give_one_row_per_param(checkout):
    rows = _by_nodeid(scan_checkout(checkout))
    mm = rows["benchmark/test_blas_parallel.py::test_blas[mm-mm-BlasBenchmark]"]
    assert (mm.op, mm.op_name, mm.bench_class) == ("mm", "mm", "BlasBenchmark")
    assert rows["benchmark/test_blas_parallel.py::test_blas[bmm-bmm-BlasBenchmark]"].op == "bmm"
    assert rows["benchmark/test_blas_parallel.py::test_blas[custom]"].op == "xx"


def test_unconditional_skip_detection(checkout):
    rows = {r.function: r.skip for r in scan_checkout(checkout)}
    assert rows["test_neg"] == "broken upstream"
    assert rows["test_exp"] == "never runs"
    assert rows["test_sin"] == "not in this build"
    assert rows["test_mod"] == "module off"
    assert rows["test_abs"] == ""  # skipif on a runtime condition is not unconditional


def test_csv_round_trip_and_carry_collected(checkout, tmp_path):
    rows = scan_checkout(checkout)
    path = tmp_path / "inv.csv"
    write_inventory(path, rows)
    assert load_inventory(path) == rows
    verified = apply_collected(rows, ["benchmark/test_blas.py::test_mm"])
    again = carry_collected(scan_checkout(checkout), verified)
    coll = {r.nodeid: r.collected for r in again}
    assert coll["benchmark/test_blas.py::test_mm"] == "yes"
    assert coll["benchmark/test_pointwise.py::test_abs"] == "no"


def test_collected_param_ids_replace_computed_ones(checkout):
    rows = scan_checkout(checkout)
    real = [
        "benchmark/test_blas_parallel.py::test_blas[mm-torch_op0-BlasBenchmark]",
        "benchmark/test_blas_parallel.py::test_blas[bmm-bmm-BlasBenchmark]",
        "benchmark/test_blas_parallel.py::test_blas[custom]",
    ]
    # Source order is what apply_collected matches by: rebuild it from the ids.
    order = {n.split("[")[1][:3]: i for i, n in enumerate(real)}
    params = sorted(
        (r for r in rows if "test_blas[" in r.nodeid),
        key=lambda r: order[r.nodeid.split("[")[1][:3]],
    )
    out = apply_collected(params, real)
    assert [r.nodeid for r in out] == real
    assert all(r.collected == "yes" for r in out)


def test_load_inventory_errors(tmp_path):
    with pytest.raises(ZlbenchError, match="inventory not found"):
        load_inventory(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ZlbenchError, match="not an inventory"):
        load_inventory(bad)


def test_resolve_single_and_multi_function_op(checkout):
    inv = scan_checkout(checkout)
    assert resolve(inv, "abs") == ["benchmark/test_pointwise.py::test_abs"]
    assert resolve(inv, "cos") == [
        "benchmark/test_pointwise.py::test_cos_bwd",
        "benchmark/test_pointwise.py::test_cos_fwd",
    ]


def test_resolve_ambiguous_lists_candidates(checkout):
    inv = scan_checkout(checkout)
    with pytest.raises(ZlbenchError) as e:
        resolve(inv, "mm")
    msg = str(e.value)
    assert "ambiguous" in msg and "mm@test_blas.py" in msg and "mm@test_blas_parallel.py" in msg
    assert "\n" not in msg


def test_resolve_at_file_disambiguation(checkout):
    inv = scan_checkout(checkout)
    assert resolve(inv, "mm@test_blas.py") == ["benchmark/test_blas.py::test_mm"]
    sel = select(inv, "mm@test_blas_parallel.py")
    assert sel.nodeids == ["benchmark/test_blas_parallel.py::test_blas[mm-mm-BlasBenchmark]"]
    assert sel.run_name == "mm__at__test_blas_parallel.py" == run_name_for(sel.selector)
    with pytest.raises(ZlbenchError, match="not in 'test_other.py'; it is in: test_blas.py"):
        resolve(inv, "mm@test_other.py")


def test_resolve_unknown_suggests_close_names(checkout):
    inv = scan_checkout(checkout)
    with pytest.raises(ZlbenchError, match=r"unknown op 'abz'; did you mean: abs"):
        resolve(inv, "abz")
    with pytest.raises(ZlbenchError, match="unknown op 'qqqqqq'$"):
        resolve(inv, "qqqqqq")
    with pytest.raises(ZlbenchError, match="bad op selector"):
        resolve(inv, "mm@")


def test_selection_skip_and_all_selectors(checkout):
    inv = scan_checkout(checkout)
    assert select(inv, "neg").skip == "broken upstream"
    assert select(inv, "abs").skip == ""
    sels = all_selectors(inv)
    assert "mm@test_blas.py" in sels and "mm@test_blas_parallel.py" in sels and "mm" not in sels
    assert "abs" in sels and len(sels) == len(set(sels))
    for s in sels:  # every selector resolves
        assert resolve(inv, s)


def test_class_chain(checkout):
    bases = class_bases(checkout)
    assert class_chain(bases, "BlasBenchmark") == ["BlasBenchmark", "GenericBenchmark", "Benchmark"]
    assert class_chain(bases, "Unknown") == ["Unknown"]


def test_migrate_shapes_keeps_curated_and_adds_missing():
    curated = {"softmax": {"shapes": [[4, 8]]}, "BlasBenchmark": {"shapes": [[1, 2, 3, 4]]}}
    upstream = {
        "softmax": {"shapes": [[1024, 1024]]},
        "BlasBenchmark": {"shapes": [[9, 9, 9, 9]]},
        "NormBenchmark": {"shapes": [[2, 3]]},
        "add": {"shapes": [[5]]},
    }
    out = migrate_shapes(curated, upstream)
    assert out["softmax"] == {"shapes": [[4, 8]]}
    assert out["BlasBenchmark"] == {"shapes": [[1, 2, 3, 4]]}
    assert list(out) == ["softmax", "BlasBenchmark", "NormBenchmark", "add"]
    assert curated == {"softmax": {"shapes": [[4, 8]]}, "BlasBenchmark": {"shapes": [[1, 2, 3, 4]]}}


def test_op_name_positional_and_super_init_forms(tmp_path):
    bench = tmp_path / "fg" / "benchmark"
    bench.mkdir(parents=True)
    (bench / "test_forms.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from . import base

            class PenaltyBenchmark(base.Benchmark):
                def __init__(self, *args, **kwargs):
                    super().__init__("repetition_penalty", *args, **kwargs)

            class KwBenchmark(base.Benchmark):
                def __init__(self, **kwargs):
                    super().__init__(op_name="kw_op", **kwargs)

            @pytest.mark.scaled_mm
            def test_scaled_mm():
                ScaledMMBenchmark("scaled_mm", torch_op, gems_op).run()

            @pytest.mark.penalty
            def test_penalty():
                PenaltyBenchmark(torch_op=f).run()

            @pytest.mark.kw
            def test_kw():
                KwBenchmark(torch_op=f).run()
            """
        )
    )
    rows = {r.op: r for r in scan_checkout(tmp_path / "fg")}
    assert (rows["scaled_mm"].op_name, rows["scaled_mm"].bench_class) == (
        "scaled_mm",
        "ScaledMMBenchmark",
    )
    assert (rows["penalty"].op_name, rows["penalty"].bench_class) == (
        "repetition_penalty",
        "PenaltyBenchmark",
    )
    assert rows["kw"].op_name == "kw_op"


def test_an_unparsable_file_is_left_out_with_a_warning(checkout):
    (checkout / "benchmark" / "test_broken.py").write_text("def test_x(:\n")
    (checkout / "benchmark" / "test_latin1.py").write_bytes(b"# \xe9\n")
    warnings: list[str] = []
    rows = scan_checkout(checkout, warn=warnings.append)
    assert "benchmark/test_pointwise.py::test_abs" in _by_nodeid(rows)
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: benchmark/test_broken.py: cannot parse (line 1)")
    assert "test_latin1.py: not UTF-8" in warnings[1]


def test_collect_sets_gems_vendor_unless_set(tmp_path, monkeypatch):
    # issue 30: FlagGems' vendor probe (nvidia-smi) can hang a collect without it
    from zlbench.runner.catalog.inventory import collect_nodeids

    bench = tmp_path / "fg" / "benchmark"
    bench.mkdir(parents=True)
    (bench / "test_vendor.py").write_text(
        "import os\nimport pytest\n\n\n"
        "@pytest.mark.parametrize('v', [os.environ.get('GEMS_VENDOR', 'unset')])\n"
        "def test_vendor(v):\n    pass\n"
    )
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    assert collect_nodeids(tmp_path / "fg") == ["benchmark/test_vendor.py::test_vendor[nvidia]"]
    monkeypatch.setenv("GEMS_VENDOR", "metax")
    assert collect_nodeids(tmp_path / "fg") == ["benchmark/test_vendor.py::test_vendor[metax]"]
