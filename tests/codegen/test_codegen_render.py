"""zlbench.report.codegen: the screen's markdown section, exactly."""

from __future__ import annotations

from zlbench.codegen.diff import count_classes
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen, Resources
from zlbench.report.codegen import headline, render_codegen, resource_cell, weight


def _k(name, status, **kw) -> KernelScreen:
    return KernelScreen(kernel_id=f"id-{name}", name=name, status=status, **kw)


def _changed(name, regs, spills, **kw) -> KernelScreen:
    return _k(
        name, CodegenClass.LLIR_PTX, first_stage="llir", config="B=1",
        baseline=Resources(n_regs=32, n_spills=0, compile_s=0.5),
        current=Resources(n_regs=32 + regs, n_spills=spills, compile_s=0.25),
        deltas={"n_regs": regs, "n_spills": spills, "compile_s": -0.25},
        diff_file=f"diffs/id-{name}.diff", ops=["main/a", "main/b", "main/c", "main/d"], **kw,
    )  # fmt: skip


def _screen(kernels, **kw) -> CodegenScreen:
    return CodegenScreen(
        baseline_dir="baselines/v2", compiler="triton 3.6.0", jobs=4, wall_s=12.34,
        counts=count_classes(kernels), kernels=kernels, **kw,
    )  # fmt: skip


def test_render_codegen_exact():
    kernels = [
        _k("same", CodegenClass.IDENTICAL),
        _changed("more_regs", 8, 0),
        _changed("spills", 0, 2),
        _k("broken|kernel", CodegenClass.FAILED, config="B=2", ops=["main/x"],
           error="compile failed: RuntimeError: *bad*"),
        _k("gone", CodegenClass.MISSING),
    ]  # fmt: skip
    text = render_codegen(_screen(kernels, ops_without_records=["main/old"]), top=1)
    assert text == (
        "## Codegen screen\n\n"
        "**2 of 5 kernels changed (1 compile failed, 1 missing)**\n\n"
        "Baseline `baselines/v2` rebuilt by `triton 3.6.0` · 4 job(s) · 12.3 s\n\n"
        "| class | kernels |\n| --- | ---: |\n"
        "| identical | 1 |\n| TTGIR changed | 0 |\n| only LLIR/PTX changed | 2 |\n"
        "| only SASS changed | 0 |\n| compile failed | 1 |\n| missing | 1 |\n\n"
        "### Failed to compile\n\n"
        "| kernel | config | ops | error |\n| --- | --- | --- | --- |\n"
        "| `broken\\|kernel` | `B=2` | `x` | compile failed: RuntimeError: \\*bad\\* |\n\n"
        "### Top changes by resource delta\n\n"
        "| kernel | config | class | first stage | regs | spills | shared B | SASS instr "
        "| compile s | ops | diff |\n"
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n"
        "| `spills` | `B=1` | only LLIR/PTX changed | llir | 32 | 0→2 (+2) |  |  "
        "| 0.50→0.25 | `a`, `b`, `c` +1 | `diffs/id-spills.diff` |\n\n"
        "_… 1 more changed kernels in codegen.json._\n\n"
        "Ops without codegen records (always timed): `old`\n"
    )


def test_spills_outrank_registers():
    assert weight(_changed("a", 0, 1)) > weight(_changed("b", 50, 0)) > weight(_changed("c", 1, 0))


def test_headline_without_failures():
    assert headline(_screen([_k("s", CodegenClass.IDENTICAL)])) == "0 of 1 kernels changed"


def test_resource_cell_unknown_is_empty():
    k = _k("x", CodegenClass.SASS, baseline=Resources(n_regs=3), current=None)
    assert resource_cell(k, "n_regs") == "" and resource_cell(k, "shared") == ""


def test_codegen_md_and_the_setup_line_spell_each_op_as_the_reports_do():
    """Issue 50 item 3: one spelling per op (protocol.ops.display_names): the plain op
    name, the selector where two ops share a name, ``repo:selector`` across repos."""
    from zlbench.report.codegen import screen_names, setup_line

    ops = ["main/bmm__at__test_bmm.py", "main/mm", "vllm/mm"]
    k = _k("fill_kernel", CodegenClass.TTGIR, config="BLOCK=8", ops=ops)
    s = _screen([k], ops_without_records=["main/abs"])
    assert screen_names(s) == {
        "main/bmm__at__test_bmm.py": "bmm", "main/mm": "main:mm", "vllm/mm": "vllm:mm",
        "main/abs": "abs",
    }  # fmt: skip
    md = render_codegen(s)
    assert "| `bmm`, `main:mm`, `vllm:mm` |" in md and "(always timed): `abs`" in md
    assert "main/" not in md
    assert setup_line(k, screen_names(s)) == (
        "fill_kernel [BLOCK=8]: TTGIR differs; 3 op(s): bmm, main:mm, vllm:mm"
    )
    assert setup_line(k).endswith("3 op(s): bmm, main:mm, vllm:mm")  # names of its own ops
