"""Op selection: specs, repo prefixes, @file, dismiss list, unconditional skips, restrict_to."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory
from zlbench.errors import ZlbenchError
from zlbench.protocol.ops import read_ops_file
from zlbench.runner.catalog.select import select_ops

OPS_DIR = Path(__file__).resolve().parents[2] / "ops"


@pytest.fixture
def ops_dir(tmp_path):
    d = tmp_path / "ops"
    make_inventory(
        d,
        "main",
        ["abs", "add", "mm@test_mm.py", "mm@test_perf.py", "off"],
        skip={"off": "needs 8 GPUs"},
    )
    make_inventory(d, "vllm", ["fused_moe", "add"])
    return d


def keys(sel):
    return sorted(sel.keys())


def test_all_of_one_and_two_repos(ops_dir):
    sel = select_ops(ops_dir, all_ops=True)
    assert keys(sel) == [
        "main/abs",
        "main/add",
        "main/mm__at__test_mm.py",
        "main/mm__at__test_perf.py",
    ]
    assert [o.key for o in sel.skipped] == ["main/off"]
    sel = select_ops(ops_dir, all_ops=True, repos=["main", "vllm"])
    assert "vllm/fused_moe" in keys(sel) and "vllm/add" in keys(sel)


def test_specs_repo_prefix_and_repos(ops_dir):
    assert keys(select_ops(ops_dir, specs=["vllm:add"])) == ["vllm/add"]
    # a bare spec is looked up in every repo of --repos, selected where it exists
    assert keys(select_ops(ops_dir, specs=["add"], repos=["main", "vllm"])) == [
        "main/add",
        "vllm/add",
    ]
    assert keys(select_ops(ops_dir, specs=["fused_moe"], repos=["main", "vllm"])) == [
        "vllm/fused_moe"
    ]
    sel = select_ops(ops_dir, specs=["mm@test_perf.py", "abs", "abs"])
    assert keys(sel) == ["main/abs", "main/mm__at__test_perf.py"]
    mm = next(o for o in sel.ops if o.op.startswith("mm"))
    assert mm.nodeids == ("benchmark/test_perf.py::test_mm",)
    assert mm.run_name == "mm__at__test_perf.py" and mm.op == "mm@test_perf.py"


def test_ops_file(ops_dir, tmp_path):
    f = tmp_path / "set.txt"
    f.write_text("# comment\nabs   # inline\n\n vllm:fused_moe \n")
    assert read_ops_file(f) == ["abs", "vllm:fused_moe"]
    assert keys(select_ops(ops_dir, ops_file=f)) == ["main/abs", "vllm/fused_moe"]
    with pytest.raises(ZlbenchError, match="ops file not found"):
        select_ops(ops_dir, ops_file=tmp_path / "nope.txt")


def test_dismissed_and_restricted(ops_dir):
    (ops_dir / "dismiss.txt").write_text("add # 2025-02-03 slow\nvllm:fused_moe # 2025-02-03 x\n")
    sel = select_ops(ops_dir, all_ops=True, repos=["main", "vllm"])
    assert sorted(o.key for o, _ in sel.dismissed) == ["main/add", "vllm/add", "vllm/fused_moe"]
    assert "main/add" not in keys(sel)
    sel = select_ops(ops_dir, all_ops=True, restrict_to={"main/abs", "main/add"})
    assert keys(sel) == ["main/abs"]
    assert [o.key for o, _ in sel.dismissed] == ["main/add"]


@pytest.mark.parametrize(
    "kw,text",
    [
        ({"specs": ["nosuch"]}, "unknown op 'nosuch'"),
        ({"specs": ["ab"]}, "unknown op 'ab'"),
        ({"specs": ["nosuch"], "repos": ["main", "vllm"]}, "unknown op 'nosuch'"),
        ({"specs": ["mm"]}, "ambiguous"),
        ({"specs": ["mm@test_other.py"]}, "mm"),
        ({"specs": ["off"]}, "empty selection: nothing to run (1 op(s) selected, 1 skipped"),
        ({"specs": ["abs"], "restrict_to": set()}, "1 not in the allowed op set"),
        ({"specs": ["nope:abs"]}, "unknown repo 'nope'"),
        ({"specs": ["abs"], "repos": ["nope"]}, "unknown repo 'nope'"),
        ({"specs": ["vllm:"]}, "no op after"),
        ({}, "exactly one of --all, --ops SPEC... or --ops-file F"),
        ({"all_ops": True, "specs": ["abs"]}, "exactly one of"),
    ],
)
def test_bad_selection(ops_dir, kw, text):
    with pytest.raises(ZlbenchError) as e:
        select_ops(ops_dir, **kw)
    assert text in str(e.value) and "\n" not in str(e.value)


def test_missing_inventory(tmp_path):
    with pytest.raises(ZlbenchError, match=r"inventory_main.csv is missing.*zlbench inventory"):
        select_ops(tmp_path, specs=["abs"])


def test_bad_dismiss_file_names_its_line(ops_dir):
    (ops_dir / "dismiss.txt").write_text("abs  # 2025-02-30 no such day\n")
    with pytest.raises(ZlbenchError, match=r"dismiss.txt:1: entry 'abs': bad date"):
        select_ops(ops_dir, specs=["abs"])


def test_shipped_gate_core_set_resolves_in_the_real_inventory():
    """ops/gate_core.txt: 20-40 ops, each resolving to tests of the shipped inventory."""
    sel = select_ops(OPS_DIR, ops_file=OPS_DIR / "gate_core.txt")
    assert 20 <= len(sel.ops) <= 40
    assert not sel.dismissed and not sel.skipped
    assert all(o.nodeids for o in sel.ops)
