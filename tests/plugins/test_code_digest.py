"""The cubin's code digest (``capture.code_sha256``): the same kernel compiled from two
paths gives two cubins (their line info names the source file) but one code digest; a
changed kernel another. The rebuild worker takes a kernel whose code digest equals its
record's as disassembled already: its SASS digest, registers and spills are the
record's, and no disassembler runs (nvdisasm costs ~0.7 s a kernel on a small CPU, more
than most compiles). Real sm_90 compiles on this CPU."""

from __future__ import annotations

import importlib
import os
import struct

import pytest

triton = pytest.importorskip("triton")

from zlbench.models import CompileResult, StageDigest  # noqa: E402
from zlbench.models.codegen import CompilerIdentity  # noqa: E402
from zlbench.plugins.compiler import capture, sass  # noqa: E402

TEXT = """
import triton
import triton.language as tl


@triton.jit
def k(X, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < N) * FACTOR, mask=offs < N)
"""


def _cubin(tmp_path, monkeypatch, where: str, module: str, factor: int = 2) -> bytes:
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    d = tmp_path / where
    d.mkdir(parents=True)
    (d / f"{module}.py").write_text(TEXT.replace("FACTOR", str(factor)))
    monkeypatch.syspath_prepend(str(d))
    cache = tmp_path / f"cache-{where.replace('/', '-')}"
    monkeypatch.setattr(triton.knobs.cache, "dir", str(cache))
    fn = importlib.import_module(module).k
    src = ASTSource(fn, {"X": "*fp32", "N": "i32", "BLOCK": "constexpr"}, {(2,): 128})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["cubin"]


@pytest.fixture
def cubins(tmp_path, monkeypatch):
    a = _cubin(tmp_path, monkeypatch, "a/deeper/dir", "zl_code_a")
    b = _cubin(tmp_path, monkeypatch, "b", "zl_code_b")
    c = _cubin(tmp_path, monkeypatch, "c", "zl_code_c", factor=3)
    return a, b, c


def test_one_kernel_from_two_paths_has_one_code_digest(cubins):
    a, b, c = cubins
    assert a != b  # the line info names the file
    assert capture.code_sha256(a) == capture.code_sha256(b) is not None
    assert capture.code_sha256(c) != capture.code_sha256(a)  # * 3, not * 2


@pytest.mark.skipif(sass.cuobjdump() is None, reason="triton has no bundled cuobjdump here")
def test_equal_code_digests_disassemble_the_same(cubins, tmp_path):
    a, b, _ = cubins
    got = []
    for cubin in (a, b):
        res = _result()
        capture.add_disassembly(res, cubin, capture.BlobStore(), [str(tmp_path)])
        got.append((res.stages["sass"].sha256, res.n_regs, res.n_spills))
    assert got[0] == got[1] and got[0][1] is not None


def test_what_is_not_an_elf_has_no_code_digest(cubins):
    a = cubins[0]
    assert capture.code_sha256(b"not a cubin") is None
    assert capture.code_sha256(a[:100]) is None  # its section table cut off
    bad = bytearray(a)
    struct.pack_into("<Q", bad, 0x28, len(a) + 4096)  # the table beyond the end
    assert capture.code_sha256(bytes(bad)) is None


def test_a_debug_section_does_not_count_and_a_code_byte_does(cubins):
    """Flip one byte inside the .text section: another digest. The debug sections'
    bytes differ between a and b already (test above)."""
    a = bytearray(cubins[0])
    text_at = _section(bytes(a), ".text.k")
    a[text_at] ^= 0xFF
    assert capture.code_sha256(bytes(a)) != capture.code_sha256(cubins[0])


def _section(cubin: bytes, name: str) -> int:
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    for name_off, _, _, _, off, _ in heads:
        if cubin[names + name_off :].split(b"\0", 1)[0] == name.encode():
            return off
    raise AssertionError(f"no section {name}")


# --------------------------------------------------------------------------- rebuild


def _result(**kw) -> CompileResult:
    return CompileResult(compiler=CompilerIdentity(distribution="triton", version="3.6.0"), **kw)


def _with_sass() -> CompileResult:
    return _result(
        stages={"sass": StageDigest(sha256="5" * 64, size=10, compressed_size=9, blob="b/x.gz")},
        cubin_code_sha256="c" * 64,
        n_regs=40,
        n_spills=0,
        sass_instructions=123,
    )


def test_the_same_code_takes_the_records_disassembly():
    base, cur = _with_sass(), _result(cubin_code_sha256="c" * 64)
    assert capture.same_code(base, cur)
    capture.copy_disassembly(base, cur)
    assert (cur.n_regs, cur.n_spills, cur.sass_instructions) == (40, 0, 123)
    assert cur.stages["sass"].sha256 == "5" * 64 and cur.stages["sass"].blob == ""


@pytest.mark.parametrize(
    "base_code, cur_code", [(None, "c" * 64), ("c" * 64, None), ("c" * 64, "d" * 64)]
)
def test_unknown_or_other_code_is_disassembled(base_code, cur_code):
    base = _with_sass().model_copy(update={"cubin_code_sha256": base_code})
    assert not capture.same_code(base, _result(cubin_code_sha256=cur_code))
    assert not capture.same_code(None, _result(cubin_code_sha256=cur_code))


def test_a_record_made_before_the_digest_still_loads():
    data = _with_sass().model_dump()
    del data["cubin_code_sha256"]
    assert CompileResult.model_validate(data).cubin_code_sha256 is None


def test_the_rebuild_worker_runs_no_disassembler_for_the_same_code(cubins, tmp_path, monkeypatch):
    """rebuild_one's SASS step: the same code, so add_disassembly is not called."""
    from zlbench.plugins.compiler import rebuild

    calls = []
    monkeypatch.setattr(capture, "add_disassembly", lambda *a, **k: calls.append(a))
    a, b, _ = cubins
    base = _with_sass().model_copy(update={"cubin_code_sha256": capture.code_sha256(a)})
    cur = _result(cubin_code_sha256=capture.code_sha256(b))
    rebuild.finish_sass(base, cur, b, capture.BlobStore(), [os.getcwd()])
    assert calls == [] and cur.stages["sass"].sha256 == "5" * 64
    other = _result(cubin_code_sha256=capture.code_sha256(cubins[2]))
    rebuild.finish_sass(base, other, cubins[2], capture.BlobStore(), [os.getcwd()])
    assert len(calls) == 1
