"""`zlbench explain RESULTS_DIR --op OP` on a screen (and a verdict) written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import GateVerdict, RowKey, RowVerdict, Verdict, dump_json_model
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen, Resources

SHAPE, SHAPE2 = "[torch.Size([64])]", "[torch.Size([96])]"


def _row(run_name: str, shape: str = SHAPE, op: str | None = None) -> RowKey:
    return RowKey(repo="main", run_name=run_name, op=op or run_name, dtype="float16", shape=shape)


SOFTMAX = KernelScreen(
    kernel_id="abc123",
    name="softmax_kernel",
    config="BLOCK=1024 num_warps=4 num_stages=3",
    status=CodegenClass.TTGIR,
    first_stage="ttgir",
    baseline=Resources(n_regs=32),
    current=Resources(n_regs=40),
    deltas={"n_regs": 8},
    diff_file="diffs/abc123.diff",
    ops=["main/softmax"],
    rows=[_row("softmax")],
)
HELPER = KernelScreen(
    kernel_id="def456",
    name="fill_kernel",
    status=CodegenClass.IDENTICAL,
    ops=["main/softmax", "main/add"],
    rows=[_row("softmax"), _row("softmax", SHAPE2), _row("add")],
)
ORPHAN = KernelScreen(
    kernel_id="0rph",
    name="orphan_kernel",
    status=CodegenClass.SASS,
    first_stage="sass",
    ops=["main/softmax"],
)


@pytest.fixture
def gate_dir(tmp_path) -> Path:
    d = tmp_path / "gate"
    screen = CodegenScreen(baseline_dir="b", kernels=[SOFTMAX, HELPER, ORPHAN])
    dump_json_model(d / "codegen" / "codegen.json", screen)
    return d


def test_explain_lists_each_row_and_its_kernels(gate_dir, capsys):
    assert main(["explain", str(gate_dir), "--op", "softmax"]) == 0
    out = capsys.readouterr().out
    diff = gate_dir / "codegen" / "diffs" / "abc123.diff"
    assert out.splitlines() == [
        "softmax: 2 row(s), 3 kernel(s), 2 not identical",
        f"  float16 {SHAPE}",
        "    softmax_kernel [BLOCK=1024 num_warps=4 num_stages=3]: TTGIR differs; "
        f"regs +8; diff {diff}",
        "    fill_kernel: identical",
        f"  float16 {SHAPE2}",
        "    fill_kernel: identical",
        "  kernels of the op that no row names:",
        "    orphan_kernel: only SASS differs",
        "  note: baseline without timed-kernel attribution: setup kernels count as timed",
    ]


def test_explain_names_timed_kernels_per_row_and_setup_kernels_apart(tmp_path, capsys):
    """With timed attribution: a row lists the kernels it ran timed; a changed kernel
    that ran only outside the timed region is listed once, apart, and no note."""
    rows = [_row("softmax"), _row("softmax", SHAPE2)]
    timed = SOFTMAX.model_copy(
        update={"rows": rows, "timed_ops": ["main/softmax"], "timed_rows": rows}
    )
    fill = HELPER.model_copy(
        update={"status": CodegenClass.TTGIR, "first_stage": "ttgir", "ops": ["main/softmax"],
                "rows": rows, "setup_ops": ["main/softmax"], "setup_rows": rows}
    )  # fmt: skip
    d = tmp_path / "gate"
    dump_json_model(
        d / "codegen" / "codegen.json", CodegenScreen(baseline_dir="b", kernels=[timed, fill])
    )
    assert main(["explain", str(d), "--op", "softmax"]) == 0
    out = capsys.readouterr().out.splitlines()
    diff = d / "codegen" / "diffs" / "abc123.diff"
    sm = f"    softmax_kernel [BLOCK=1024 num_warps=4 num_stages=3]: TTGIR differs; " \
         f"regs +8; diff {diff}"  # fmt: skip
    assert out == [
        "softmax: 2 row(s), 2 kernel(s), 2 not identical",
        f"  float16 {SHAPE}",
        sm,
        f"  float16 {SHAPE2}",
        sm,
        "  launched outside the timed region only (setup kernels: they change no row):",
        "    fill_kernel: TTGIR differs",
    ]


def test_explain_shows_verdicts_when_the_dir_has_one(gate_dir, capsys):
    rows = [
        RowVerdict(key=_row("softmax"), verdict=Verdict.REGRESSION, judged_change=0.075),
        RowVerdict(key=_row("softmax", SHAPE2), verdict=Verdict.PASS, judged_change=-0.001),
        RowVerdict(key=_row("add"), verdict=Verdict.PASS),
    ]
    v = GateVerdict(verdict="FAIL", exit_code=1, summary="s", baseline="b", baseline_dir="b",
                    results_dir="r", generated="g", rows=rows)  # fmt: skip
    dump_json_model(gate_dir / "verdict.json", v)
    assert main(["explain", str(gate_dir), "--op", "main/softmax"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == f"  float16 {SHAPE}  REGRESSION +7.5 %"
    assert out[4] == f"  float16 {SHAPE2}  PASS -0.1 %"


def test_explain_row_without_known_kernels(gate_dir, capsys):
    rows = [RowVerdict(key=_row("mul"), verdict=Verdict.REGRESSION)]
    v = GateVerdict(verdict="FAIL", exit_code=1, summary="s", baseline="b", baseline_dir="b",
                    results_dir="r", generated="g", rows=rows)  # fmt: skip
    dump_json_model(gate_dir / "verdict.json", v)
    assert main(["explain", str(gate_dir), "--op", "mul"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"  float16 {SHAPE}  REGRESSION",
        "    kernels unknown",
    ]


def test_explain_unknown_op_is_one_line_exit_2(gate_dir, capsys):
    assert main(["explain", str(gate_dir), "--op", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "zlbench explain: error: op 'nope': no row or kernel of it in the codegen screen"
    ]


def test_explain_without_a_screen_is_one_line_exit_2(tmp_path, capsys):
    assert main(["explain", str(tmp_path), "--op", "add"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no codegen screen" in err[0] and "--screen" in err[0]


def test_explain_with_screen_flag(gate_dir, tmp_path, capsys):
    assert main(["explain", str(tmp_path), "--op", "add", "--screen",
                 str(gate_dir / "codegen")]) == 0  # fmt: skip
    assert "fill_kernel: identical" in capsys.readouterr().out
