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
