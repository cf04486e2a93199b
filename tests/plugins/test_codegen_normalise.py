# ruff: noqa: E501 - the IR excerpts keep their real, long lines
"""The IR normaliser and the disassembler parsers (pure: no triton, no compile).

The inputs are excerpts of real triton 3.6 output for benchpkg's add_kernel."""

from __future__ import annotations

import pytest

from zlbench.plugins.compiler import normalise as norm
from zlbench.plugins.compiler.sass import parse_res_usage

TTGIR = """\
#blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#loc = loc("/home/ci/flaggems/src/flag_gems/ops/add.py":13:0)
#loc16 = loc("x_ptr"(#loc))
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %n: i32) attributes {noinline = false} {
    %c256_i32 = arith.constant 256 : i32 loc(#loc1)
    %a = ttg.local_alloc() : () -> !ttg.memdesc<1xf32> loc(callsite(#loc3 at #loc4))
    %b = tt.call @f(%a) : (i32) -> i32 loc(fused["a(b)c.py":1:2, #loc5])
    tt.return loc(#loc15)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
"""

LLIR = """\
define ptx_kernel void @add_kernel(ptr addrspace(1) %0, i32 %3) local_unnamed_addr #0 !dbg !4 {
  %8 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x(), !dbg !7
  %9 = shl i32 %8, 8, !dbg !8
  ret void, !dbg !9
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}
!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, producer: "triton")
!1 = !DIFile(filename: "add.py", directory: "/home/ci/flaggems/src/flag_gems/ops")
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !{i32 4, !"nvvm-reflect-ftz", i32 1}
!7 = !DILocation(line: 14, column: 25, scope: !4)
"""

PTX = """\
.visible .entry add_kernel(
	.param .u64 .ptr .global .align 1 add_kernel_param_0
)
{
	.loc	1 13 0                          // add.py:13:0
$L__func_begin0:
	mov.u32 	%r1, %ctaid.x;
	.loc	1 16 16, function_name $L__info_string0, inlined_at 1 18 4
	ret;
}
	.file	1 "/home/ci/flaggems/src/flag_gems/ops/add.py"
	.section	.debug_abbrev
	{
.b8 1
	}
	.section	.debug_info
	{
.b32 72                                 // Length of Unit
.b8 97
	}
	.section	.debug_macinfo	{	}
"""


def test_mlir_loses_every_location_and_keeps_the_ops():
    out = norm.normalise("ttgir", TTGIR)
    assert " loc(" not in out and "#loc" not in out
    assert "/home/ci" not in out
    assert "  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, " in out
    assert "    %c256_i32 = arith.constant 256 : i32\n" in out
    assert "ttg.local_alloc() : () -> !ttg.memdesc<1xf32>\n" in out  # "alloc(" is not a loc
    assert "tt.call @f(%a) : (i32) -> i32\n" in out  # parens inside a quoted loc string
    assert out.splitlines()[0].startswith("#blocked = ")


def test_llir_loses_debug_metadata_and_keeps_other_metadata():
    out = norm.normalise("llir", LLIR)
    assert "!dbg" not in out and "!DI" not in out and "Debug Info Version" not in out
    assert "/home/ci" not in out
    assert "  %9 = shl i32 %8, 8\n" in out
    assert "local_unnamed_addr #0 {" in out
    assert '!3 = !{i32 4, !"nvvm-reflect-ftz", i32 1}' in out


def test_ptx_loses_file_loc_and_debug_sections_and_keeps_code():
    out = norm.normalise("ptx", PTX)
    assert ".loc" not in out and ".file" not in out and ".debug_" not in out
    assert ".b8" not in out and "/home/ci" not in out
    assert "\tmov.u32 \t%r1, %ctaid.x;\n\tret;\n}\n" in out


def test_same_ir_at_two_paths_normalises_to_the_same_text():
    moved = TTGIR.replace("/home/ci/flaggems", "/opt/runner/work/fg")
    assert norm.normalise("ttgir", moved) == norm.normalise("ttgir", TTGIR)
    moved = PTX.replace("/home/ci/flaggems", "/x")
    assert norm.normalise("ptx", moved) == norm.normalise("ptx", PTX)


def test_machine_roots_are_scrubbed_longest_first():
    text = "a /home/ci/fg/src/x.py b /home/ci/y"
    out = norm.scrub_roots(text, ["/home/ci", "/home/ci/fg/src"])
    assert out == "a <root>/x.py b <root>/y"


@pytest.mark.parametrize("stage", ["ttir", "ttgir", "llir", "ptx", "sass"])
def test_normalising_twice_changes_nothing(stage):
    text = {"ttir": TTGIR, "ttgir": TTGIR, "llir": LLIR, "ptx": PTX, "sass": "  A ;\n\n"}[stage]
    once = norm.normalise(stage, text)
    assert norm.normalise(stage, once) == once


SASS = """
	code for sm_90a
		Function : add_kernel
        /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
                                                                             /* 0x000e220000000800 */
        /*0010*/              @!P0 EXIT ;                                    /* 0x000000000000894d */
        /*0020*/                   BRA 0x20;                                 /* 0x00000000fffc7947 */
        /*0030*/                   NOP;                                      /* 0x0000000000007918 */
"""


def test_sass_instruction_count_excludes_nops():
    assert norm.sass_instruction_count(norm.normalise("sass", SASS)) == 3


def test_res_usage_gives_registers_and_spills_as_triton_counts_them():
    text = " Function add_kernel:\n  REG:40 STACK:8 SHARED:0 LOCAL:16 CONSTANT[0]:576 TEXTURE:0"
    assert parse_res_usage(text) == (40, 4)
    assert parse_res_usage("no function here") == (None, None)
