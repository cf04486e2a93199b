"""The recorder names a kernel by ``module:qualname`` also when its module was imported
a second time (docs/codegen.md, "Modules imported twice"): a FlagGems benchmark file
that drops every ``flag_gems*`` module from ``sys.modules`` and imports flag_gems again
left 863 kernels of plain modules recorded as generated ones (their whole module text)
and pointwise kernels without the globals of their scalar function's module."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

pytest.importorskip("triton")

from zlbench.plugins.compiler import capture  # noqa: E402

MOD = "zl_reimport_mod"
TEXT = """
import triton
import triton.language as tl

SCALE = 2


@triton.jit
def twice(x):
    return x * SCALE


@triton.jit
def twice_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, twice(tl.load(X + offs, mask=offs < N)), mask=offs < N)
"""


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    (tmp_path / f"{MOD}.py").write_text(TEXT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MOD, raising=False)
    yield tmp_path
    sys.modules.pop(MOD, None)


def _import_twice(edit=None):
    """The first import's module; ``sys.modules`` then holds a second import (of the
    file as ``edit`` leaves it)."""
    first = importlib.import_module(MOD)
    del sys.modules[MOD]
    if edit is not None:
        edit()
    importlib.invalidate_caches()
    second = importlib.import_module(MOD)
    assert second is not first and second.twice_kernel is not first.twice_kernel
    return first


def test_a_kernel_of_a_module_imported_again_is_recorded_by_name(module_dir):
    first = _import_twice()
    k = capture.kernel_source(first.twice_kernel)
    assert k.generated_source is None and k.generated_globals == {}
    assert (k.module, k.qualname, k.path, k.root) == (
        MOD,
        "twice_kernel",
        f"{MOD}.py",
        "sys.path",
    )
    # the twin rebuilds the same code: what the rebuild worker imports is that kernel
    found = capture.resolve(MOD, "twice_kernel")
    assert capture.sha256_hex(found.src) == k.source_sha256


def test_a_kernel_whose_callee_changed_before_the_second_import_stays_generated(module_dir):
    """Its own text is the same, but the JIT function it calls is not: triton's cache key
    differs, so importing by name would not give the recorded code."""

    def edit():
        (module_dir / f"{MOD}.py").write_text(TEXT.replace("x * SCALE", "x * SCALE + 0"))

    first = _import_twice(edit)
    k = capture.kernel_source(first.twice_kernel)
    assert k.generated_source is not None and k.root is None


def test_a_generated_module_names_the_scalar_function_of_a_module_imported_again(
    module_dir, tmp_path
):
    """As FlagGems' pointwise_dynamic: the generated module text executed, then the scalar
    function's module globals and the scalar function itself merged in."""
    first = _import_twice()
    gen = tmp_path / "gen" / "_zl_gen_twice.py"
    gen.parent.mkdir()
    gen.write_text(TEXT.replace("def twice_kernel", "def gen_twice_kernel"))
    spec = importlib.util.spec_from_file_location("_zl_gen_module_twice", gen)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    m.__dict__.update(first.twice.fn.__globals__)
    m.__dict__["twice"] = first.twice
    k = capture.kernel_source(m.gen_twice_kernel)
    assert k.generated_source is not None
    assert k.generated_globals == {"twice": f"{MOD}:twice", "twice_kernel": f"{MOD}:twice_kernel"}


def test_same_kernel_refuses_other_names_and_non_jit_objects(module_dir):
    mod = importlib.import_module(MOD)
    assert capture.same_kernel(mod.twice, mod.twice)
    assert not capture.same_kernel(mod.twice, mod.twice_kernel)
    assert not capture.same_kernel(mod.twice, object())


CONST_FN_TEXT = """
import triton
import triton.language as tl


@tl.constexpr
def accum_type(dtype):
    return tl.float32


@triton.jit
def add_one(x):
    acc: tl.constexpr = accum_type(x.dtype)
    return x.to(acc) + 1


@triton.jit
def scan_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc: tl.constexpr = accum_type(X.type.element_ty)
    tl.store(X + offs, tl.cumsum(tl.load(X + offs).to(acc), 0))


@triton.jit
def caller_kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, add_one(tl.load(X + offs)))
"""


def test_a_kernel_reading_a_constexpr_function_is_recorded_by_name(module_dir):
    """FlagGems' cumsum and cumprod kernels read ``@tl.constexpr def
    get_scan_accum_type``: triton's cache key holds that function's address, so it
    differs between two imports of the same file (seen on the H200, 2026-12-02: nonzero_numpy
    and cumprod recorded after the first fix still kept them as generated)."""
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT)
    first = importlib.import_module(MOD)
    del sys.modules[MOD]
    second = importlib.import_module(MOD)
    for name in ("scan_kernel", "caller_kernel"):  # read directly, or by a JIT callee
        a, b = getattr(first, name), getattr(second, name)
        assert a.cache_key != b.cache_key  # triton's own key: the address
        assert capture.portable_key(a) == capture.portable_key(b)
        k = capture.kernel_source(a)
        assert k.generated_source is None and (k.module, k.qualname) == (MOD, name)


def test_a_kernel_whose_constexpr_function_changed_stays_generated(module_dir):
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT)
    first = importlib.import_module(MOD)
    del sys.modules[MOD]
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT.replace("tl.float32", "tl.float64"))
    importlib.invalidate_caches()
    second = importlib.import_module(MOD)
    for name in ("scan_kernel", "caller_kernel"):
        a, b = getattr(first, name), getattr(second, name)
        assert a.src == b.src and capture.portable_key(a) != capture.portable_key(b)
        assert capture.kernel_source(a).generated_source is not None


def test_portable_key_is_stable_and_tells_kernels_apart(module_dir):
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT)
    mod = importlib.import_module(MOD)
    assert capture.portable_key(mod.scan_kernel) == capture.portable_key(mod.scan_kernel)
    assert capture.portable_key(mod.scan_kernel) != capture.portable_key(mod.caller_kernel)


def test_a_rebuilt_kernel_keyed_by_an_address_gets_no_dependencies_note(module_dir):
    """A recorded cache key of such a kernel differs in every process; the rebuild does
    not call that a change of its dependencies (its stages still decide)."""
    from types import SimpleNamespace

    from zlbench.plugins.compiler import rebuild

    plain = TEXT.split("import triton.language as tl", 1)[1]
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT + plain)
    mod = importlib.import_module(MOD)
    for keyed in (mod.scan_kernel, mod.caller_kernel):  # read directly, or by a callee
        assert capture.recorded_key(keyed).startswith("portable:")
    assert not capture.recorded_key(mod.twice_kernel).startswith("portable:")

    def req(fn):
        k = SimpleNamespace(source_sha256=capture.sha256_hex(fn.src), cache_key="other-process",
                            module=MOD, qualname=fn.fn.__qualname__)  # fmt: skip
        return SimpleNamespace(kernel=k)

    assert rebuild._notes(req(mod.scan_kernel), mod.scan_kernel) == []
    (note,) = rebuild._notes(req(mod.twice_kernel), mod.twice_kernel)
    assert note.startswith("dependencies changed: ")


def test_an_address_keyed_kernel_is_recorded_under_one_id_in_every_process(module_dir):
    """The record keeps the portable key of such a kernel, so its request's id is the
    same in two processes (two imports here: triton's keys differ by the address). The
    H100 capture of v5 (forty-second session) named cumsum's, sort's, argsort's, isin's
    and nonzero's kernels under ids v5's records did not hold: only the key differed."""
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT + TEXT.split("as tl", 1)[1])
    first = importlib.import_module(MOD)
    del sys.modules[MOD]
    second = importlib.import_module(MOD)
    a, b = first.scan_kernel, second.scan_kernel
    assert a.cache_key != b.cache_key
    got = capture.kernel_source(a).cache_key
    assert got == capture.kernel_source(b).cache_key == "portable:" + capture.portable_key(a)
    plain = capture.kernel_source(first.twice_kernel).cache_key
    assert plain == first.twice_kernel.cache_key  # not address-keyed: triton's own


def test_a_changed_key_is_a_change_but_for_an_old_records_address(module_dir):
    """key_changed, what the rebuild's "dependencies changed" note rests on."""
    (module_dir / f"{MOD}.py").write_text(CONST_FN_TEXT + TEXT.split("as tl", 1)[1])
    mod = importlib.import_module(MOD)
    scan, twice = mod.scan_kernel, mod.twice_kernel
    portable = capture.recorded_key(scan)
    assert not capture.key_changed(scan, portable)
    assert capture.key_changed(scan, "portable:" + "0" * 64)  # its code or a callee changed
    assert not capture.key_changed(scan, scan.cache_key + "x")  # an old record's address
    assert not capture.key_changed(twice, twice.cache_key)
    assert capture.key_changed(twice, "0" * 64)
    assert capture.key_changed(twice, portable)  # was address-keyed, no longer is
