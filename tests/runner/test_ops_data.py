"""The curated data shipped under ops/ (docs/ops.md): the dismiss list, the vllm
inventory and the DeepSeek-V4-Flash shape set load with the loaders zlbench uses."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from string import ascii_letters

import pytest

from tests.support.trees import shipped_dirs
from zlbench.errors import ZlbenchError
from zlbench.plugins.shapes import shapes_from_file
from zlbench.runner.catalog.dismiss import load_dismiss
from zlbench.runner.catalog.inventory import inventory_path, load_inventory
from zlbench.runner.catalog.resolve import select
from zlbench.runner.catalog.select import select_ops
from zlbench.runner.catalog.shapes_migrate import load_shapes

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
MARLIN_SHAPES = OPS / "shapes_fused_marlin_moe_dsv4_flash.yaml"
MARLIN_OP = "fused_marlin_moe@test_fused_marlin_moe_w4a16_mxfp4.py"


def _dismiss():
    warnings: list[str] = []
    entries = load_dismiss(OPS / "dismiss.txt", warn=warnings.append)
    assert warnings == []  # no undated (seed-format) entry
    return entries


def test_every_dismiss_entry_has_a_date_and_a_reason():
    entries = _dismiss()
    assert len(entries) == 33
    for e in entries:
        assert e.reason and isinstance(e.date, dt.date), e
        assert dt.date(2026, 8, 1) <= e.date <= dt.date(2026, 12, 3), e
    carried = [e for e in entries if e.date == dt.date(2026, 8, 12)]
    assert len(carried) == 13
    assert all("2026-12-01" in e.reason for e in carried)  # each says how it was re-checked
    # found by zlbench's own record pass of the whole inventory on the H200
    found = [e for e in entries if "H200 record pass" in e.reason]
    assert len(found) == 13 and all(e.date == dt.date(2026, 12, 3) for e in found)
    assert all(e.repo == "main" for e in found)
    assert {e.reason.split(":")[0] for e in found} <= {"FAIL", "timed out after 300 s"}


def test_every_carried_main_entry_was_rechecked_on_the_h200():
    """The H20 entries of the main repo were run again on the H200 (2026-12-03,
    --recheck-dismissed): one still failing there carries that run's date and keeps the
    H20's reason; one that skips itself there (no vLLM) says so and keeps its old date."""
    main = [e for e in _dismiss() if e.repo == "main" and "H200 record pass" not in e.reason]
    assert len(main) == 12
    rechecked = [e for e in main if e.date == dt.date(2026, 12, 3)]
    assert {e.op for e in rechecked} == {
        "linalg_lu_factor_ex", "special_gammainc", "scaled_dot_product_cudnn_attention_backward",
        "cholesky_solve", "cholesky_solve_out", "linalg_eigvals",
    }  # fmt: skip
    for e in rechecked:
        assert "on the H200 (re-check" in e.reason and "2026-08-12" in e.reason, e
    for e in main:
        assert "recheck-2026-12-03" in e.reason, e
        if e not in rechecked:
            assert e.date == dt.date(2026, 8, 12), e
            assert "the H200 re-check ran it and the test skipped itself" in e.reason, e
            assert "needs vLLM" in e.reason, e


def test_index_add_stays_dismissed():
    (entry,) = [e for e in _dismiss() if e.op == "index_add"]
    assert entry.repo is None and entry.date == dt.date(2026, 11, 29)


def test_every_dismiss_entry_names_an_op_of_its_repo():
    for e in _dismiss():
        for repo in [e.repo] if e.repo else ["main"]:
            select(load_inventory(inventory_path(OPS, repo)), e.op)  # raises when unknown


def test_no_op_of_a_shipped_baseline_is_dismissed():
    """The shipped baselines' verdicts stay as they are (a dismissed op is SKIPPED)."""
    dismissed = {f"{e.repo or 'main'}/{e.op.replace('@', '__at__')}" for e in _dismiss()}
    trees = shipped_dirs("baselines")
    # vN, and a version derived from one (v5h, v7h: with captures) after it
    versions = sorted(trees, key=lambda v: (int(v[1:].rstrip(ascii_letters)), v))
    assert versions[:9] == ["v1", "v2", "v3", "v4", "v5", "v5h", "v6", "v7", "v7h"]
    for version in versions:
        ops = {f"main/{p.name}" for p in (trees[version] / "main").iterdir()}
        assert ops and not ops & dismissed, version


def test_vllm_inventory_loads_and_resolves_without_a_checkout():
    rows = load_inventory(inventory_path(OPS, "vllm"))
    assert len(rows) == 108 and {r.repo for r in rows} == {"vllm"}
    assert all(r.nodeid == f"{r.file}::{r.function}" and r.collected == "yes" for r in rows)
    sel = select_ops(OPS, all_ops=True, repos=["vllm"])
    assert len(sel.ops) + len(sel.dismissed) + len(sel.skipped) == 108  # 107 ops, one in 2 files
    assert sorted(o.key for o, _ in sel.dismissed) == [
        "vllm/chunk_gdn2",
        "vllm/flash_mla",
        "vllm/flash_mla_sparse_fwd",
        "vllm/flash_mla_with_kvcache",
        "vllm/fp8_fp4_mqa_logits",
        "vllm/perf_chunk_gla",
        "vllm/triton_unified_attention_perf",
    ]
    assert [o.key for o in sel.skipped] == ["vllm/sparse_attn_triton"]
    (mhc,) = select_ops(OPS, specs=["vllm:mhc_post"]).ops
    assert mhc.nodeids == ("benchmark/test_mhc.py::test_mhc_post",)


def test_an_op_of_two_vllm_files_needs_its_file():
    with pytest.raises(ZlbenchError, match="perf_router_gemm@test_router_gemm.py"):
        select_ops(OPS, specs=["vllm:perf_router_gemm"])
    (op,) = select_ops(OPS, specs=["vllm:perf_router_gemm@test_router_gemm.py"]).ops
    assert op.nodeids == ("benchmark/test_router_gemm.py::test_perf_router_gemm",)


def test_marlin_shape_set_has_the_key_its_benchmark_reads():
    data = load_shapes(MARLIN_SHAPES)
    (row,) = select(load_inventory(inventory_path(OPS, "main")), MARLIN_OP).rows
    assert list(data) == [row.op_name] == ["fused_marlin_moe_w4a16_mxfp4"]
    shapes = data[row.op_name]["shapes"]
    assert [s[0] for s in shapes] == [2**i for i in range(16)]  # 1 ... 32768 tokens
    assert {tuple(s[1:]) for s in shapes} == {(256, 4096, 256, 6)}


def test_marlin_shape_set_replaces_the_hard_coded_shapes():
    """What the shapes plugin hands a benchmark whose class hard-codes set_shapes()."""

    class Benchmark:  # upstream's base class
        def set_shapes(self, shape_file_path=None): ...

    class FusedMarlinMoEW4A16MXFP4Benchmark(Benchmark):
        op_name = "fused_marlin_moe_w4a16_mxfp4"

        def set_shapes(self, shape_file_path=None):
            self.shapes = [(1, 8, 4096, 14336, 2)]

    bench = FusedMarlinMoEW4A16MXFP4Benchmark()
    key, shapes, desc, what = shapes_from_file(bench, Benchmark, str(MARLIN_SHAPES))
    assert (key, what, len(shapes)) == ("fused_marlin_moe_w4a16_mxfp4", "set_shapes()", 16)
    assert shapes[-1] == (32768, 256, 4096, 256, 6)
    assert desc == "num_tokens, num_experts, hidden_size, intermediate_size, topk"
