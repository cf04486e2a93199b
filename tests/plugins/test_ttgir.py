"""TTGIR dump: naming and index as pure functions, the writer with a fake compiled
kernel, and the plugin under TRITON_INTERPRET=1 (index written, no IR files)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

triton = pytest.importorskip("triton")

from autotune_harness import run_plugins  # noqa: E402

from zlbench.models import PlanEntry, WorkerPlan  # noqa: E402
from zlbench.plugins import state, ttgir  # noqa: E402


def test_variant_names_are_readable():
    cfg = triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3)
    assert ttgir.config_variant(cfg) == "BLOCK_M128_BLOCK_N64_w4_s3"
    cfg = triton.Config({"EVEN": True, "EPS": 1e-5}, num_warps=8, num_stages=2, num_ctas=2)
    assert ttgir.config_variant(cfg) == "EVEN1_EPS1em05_w8_s2_c2"
    assert ttgir.variant_name({}, 4, 3, 1, 255) == "w4_s3_r255"
    assert ttgir.variant_name({}) == "default"


def test_shape_slugs():
    shape = "[torch.Size([1024, 1024]), torch.Size([1024, 512])]"
    assert ttgir.shape_slug("bfloat16", shape) == "bfloat16_1024x1024_1024x512"
    assert ttgir.shape_slug("float16", "(4096,)") == "float16_4096"
    assert ttgir.shape_slug(None, None) == "noshape"
    long = "[" + ", ".join(f"torch.Size([{i}, {i}])" for i in range(40)) + "]"
    slug = ttgir.shape_slug("float32", long)
    assert len(slug) <= 96 and slug != ttgir.shape_slug("float32", long.replace("39", "38"))


def test_same_slug_for_different_shapes_is_made_unique(tmp_path):
    dump = ttgir.OpDump(root=tmp_path)
    a = dump.slug("float32", "[torch.Size([8, 8]), 1]", "")
    b = dump.slug("float32", "[torch.Size([8, 8]), 2]", "")
    assert (a, b) == ("float32_8x8", "float32_8x8-2")
    assert dump.slug("float32", "[torch.Size([8, 8]), 1]", "") == a
    assert dump.slug(None, None, "[8]").startswith("key_")


def test_index_lists_losers_with_timings():
    win = triton.Config({"B": 64}, num_warps=2)
    lose = triton.Config({"B": 32}, num_warps=1)
    base = {"shape": "s", "dtype": "float16", "kernel": "m:k"}
    rows = ttgir.loser_rows(base, {win: [1.0, 0.9, 1.1], lose: [2.5, 2.0, 3.0]}, win)
    assert rows == [{**base, "variant": "B32_w1_s3", "role": "loser", "ms": 2.5}]
    text = ttgir.render_index(rows)
    assert text.splitlines()[0].split("\t") == list(ttgir.INDEX_COLUMNS)
    assert text.splitlines()[1].split("\t") == ["s", "float16", "m:k", "B32_w1_s3", "loser",
                                                "2.5", "", ""]  # fmt: skip


@pytest.fixture
def session(tmp_path):
    entry = PlanEntry(op="mm", run_name="mm", run_dir=str(tmp_path / "run"), nodeids=["t"])
    config = SimpleNamespace(stash=pytest.Stash())
    sess = state.start_session(config, WorkerPlan(entries=[entry]))
    sess.current = state.OpState(entry=entry, dtype="float16", shape="[torch.Size([64, 32])]")
    yield sess
    state.end_session(config)


def test_dumper_writes_the_ir_of_the_variant_used(session, tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    win = triton.Config({"BLOCK": 64}, num_warps=2)
    lose = triton.Config({"BLOCK": 32}, num_warps=1)
    compiled = SimpleNamespace(asm={"ttgir": "#blocked = ...\nmodule {}\n"})
    timings = {win: [1.0], lose: [2.0]}
    call = SimpleNamespace(kernel="pkg.ops:mm_kernel", key=(64, 32), config=win, ret=compiled,
                           timings=timings, single=False, pinned=False)  # fmt: skip
    dumper = ttgir.TtgirDumper()
    dumper(call)
    dumper(SimpleNamespace(**{**vars(call), "timings": None}))  # same variant again: no new row
    root = tmp_path / "run" / "ttgir"
    ir = root / "float16_64x32" / "mm_kernel" / "BLOCK64_w2_s3.ttgir"
    assert ir.read_text() == "#blocked = ...\nmodule {}\n"
    rows = [ln.split("\t") for ln in (root / "index.tsv").read_text().splitlines()[1:]]
    assert [(r[3], r[4], r[6]) for r in rows] == [
        ("BLOCK64_w2_s3", "chosen", "float16_64x32/mm_kernel/BLOCK64_w2_s3.ttgir"),
        ("BLOCK32_w1_s3", "loser", ""),
    ]
    assert "variant" in (root / "naming.md").read_text()


def test_naming_legend_is_written_once_per_op(session, tmp_path, monkeypatch):
    writes: list[str] = []
    real = ttgir.atomic_write_text

    def counting(path, text):
        writes.append(Path(path).name)
        real(path, text)

    monkeypatch.setattr(ttgir, "atomic_write_text", counting)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # no IR files: only index.tsv and naming.md
    configs = [triton.Config({"BLOCK": b}, num_warps=1) for b in (16, 32)]
    dumper = ttgir.TtgirDumper()
    for config in configs:
        dumper(SimpleNamespace(kernel="pkg.ops:k", key=(8,), config=config, ret=None,
                               timings={config: [1.0]}, single=False, pinned=False))  # fmt: skip
    dumper.on_end(session.current)
    assert writes == ["naming.md", "index.tsv", "index.tsv", "index.tsv"]
    root = tmp_path / "run" / "ttgir"
    assert (root / "naming.md").read_text() == ttgir.NAMING_MD
    assert len((root / "index.tsv").read_text().splitlines()) == 3


def test_op_that_tuned_nothing_gets_index_and_legend(session, tmp_path):
    ttgir.TtgirDumper().on_end(session.current)
    root = tmp_path / "run" / "ttgir"
    assert (root / "index.tsv").read_text() == ttgir.render_index([])
    assert (root / "naming.md").read_text() == ttgir.NAMING_MD


SOFTMAX_TESTS = textwrap.dedent(
    """
    import torch, flag_gems

    def test_softmax():
        flag_gems.ops.softmax(torch.randn(2, 40))
    """
)


def test_interpreter_run_writes_index_and_legend_without_ir(tmp_path):
    (tmp_path / "test_sm.py").write_text(SOFTMAX_TESTS)
    run = run_plugins(tmp_path, "test_sm.py", "rec")
    assert run.rc == 0, run.out
    root = run.run_dir / "ttgir"
    rows = [ln.split("\t") for ln in (root / "index.tsv").read_text().splitlines()[1:]]
    roles = sorted(r[4] for r in rows)
    assert roles == ["chosen", "loser", "loser"]  # 3 softmax configs were benchmarked
    chosen = next(r for r in rows if r[4] == "chosen")
    assert chosen[7] == ttgir.INTERPRET_NOTE and chosen[6] == ""
    assert (root / "naming.md").is_file()
    assert not list(root.rglob("*.ttgir"))
