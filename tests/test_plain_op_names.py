"""A plain op name selects its op when it is the only one of that name (``--ops bmm``,
``explain --op bmm`` when the only bmm is ``bmm@test_bmm.py``); several: one line
listing them (issue 50 item 3, selection)."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline
from zlbench.gate.plan import baseline_scope, suggest_op
from zlbench.models import RowKey, dump_json_model
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen
from zlbench.protocol.ops import op_name_of, select_keys, spec_of

KEYS = [
    "main/bmm__at__test_bmm.py",
    "main/mm__at__test_mm.py",
    "main/mm__at__test_blas.py",
    "main/abs",
    "vllm/rope",
]


def test_a_plain_name_selects_the_only_op_of_that_name():
    assert select_keys("bmm", KEYS) == {"main/bmm__at__test_bmm.py"}
    assert select_keys("main:bmm", KEYS) == {"main/bmm__at__test_bmm.py"}
    assert select_keys("vllm:bmm", KEYS) == set()  # not in that repo
    assert select_keys("abs", KEYS) == {"main/abs"}  # an exact match as before
    assert select_keys("bmm@test_other.py", KEYS) == set()  # a file named: no fallback


def test_a_plain_name_of_several_ops_lists_them():
    with pytest.raises(ZlbenchError) as e:
        select_keys("mm", KEYS, " of baseline b")
    assert str(e.value) == (
        "op 'mm' fits 2 ops of baseline b: mm@test_blas.py, mm@test_mm.py; name one of them"
    )


def test_spellings():
    assert op_name_of("main/bmm__at__test_bmm.py") == "bmm"
    assert spec_of("main/bmm__at__test_bmm.py") == "bmm@test_bmm.py"
    assert spec_of("vllm/rope") == "vllm:rope"
    assert suggest_op("bmmm", KEYS) == "bmm@test_bmm.py"  # a typo of the plain name


@pytest.fixture
def bl(tmp_path):
    row = "[1024]"
    ops = {
        "bmm__at__test_bmm.py": [brow("bmm", row, 1.0)],
        "mm__at__test_mm.py": [brow("mm", row, 1.0)],
        "mm__at__test_blas.py": [brow("mm", row, 1.0)],
    }
    return load_baseline(write_baseline(tmp_path / "bl", ops))


def test_gate_ops_takes_a_plain_name(bl):
    assert baseline_scope(bl, ["bmm"])[0] == {"main/bmm__at__test_bmm.py"}
    with pytest.raises(ZlbenchError, match="op 'mm' fits 2 ops of baseline .*mm@test_blas.py"):
        baseline_scope(bl, ["mm"])


def _row(run_name: str, op: str) -> RowKey:
    return RowKey(repo="main", run_name=run_name, op=op, dtype="float16", shape="[64]")


def test_explain_takes_a_plain_name(tmp_path, capsys):
    kernels = [
        KernelScreen(
            kernel_id=f"k{i}",
            name="bmm_kernel",
            status=CodegenClass.IDENTICAL,
            ops=[f"main/{run}"],
            rows=[_row(run, op)],
        )
        for i, (run, op) in enumerate(
            [
                ("bmm__at__test_bmm.py", "bmm@test_bmm.py"),
                ("mm__at__test_mm.py", "mm@a"),
                ("mm__at__test_blas.py", "mm@b"),
            ]  # fmt: skip
        )
    ]
    d = tmp_path / "gate"
    dump_json_model(
        d / "codegen" / "codegen.json", CodegenScreen(baseline_dir="b", kernels=kernels)
    )
    assert main(["explain", str(d), "--op", "bmm"]) == 0
    assert capsys.readouterr().out.startswith("bmm@test_bmm.py: 1 row(s), 1 kernel(s)")
    assert main(["explain", str(d), "--op", "mm"]) == 2
    assert "fits 2 ops in the codegen screen: mm@test_blas.py, mm@test_mm.py" in (
        capsys.readouterr().err
    )
    assert main(["explain", str(d), "--op", "bmmm"]) == 2
    assert "(did you mean 'bmm@test_bmm.py'?)" in capsys.readouterr().err
