"""protocol.cache's kernel cache (``gate --kernel-cache DIR``): a dir per compiler by
its fingerprint, the kernel ids a build notes there, and whether a dir holds a plan's
kernels built (the notes where there are any, else any compiled kernel: a gate's own
cache, which only its screen filled)."""

from __future__ import annotations

from zlbench.protocol.cache import (
    KERNEL_MARKS,
    built_ids,
    holds_built,
    kernel_cache_dir,
    mark_built,
)


def test_a_dir_per_compiler_named_by_its_fingerprint(tmp_path):
    pr = kernel_cache_dir(tmp_path, "triton 3.6.0 sha256:2a89b8423277702a")
    base = kernel_cache_dir(tmp_path, "triton 3.6.0 sha256:0123456789abcdef")
    assert pr == tmp_path / "triton-3.6.0-sha256-2a89b8423277702a"
    assert base != pr and base.parent == pr.parent == tmp_path
    assert kernel_cache_dir(tmp_path, "../../etc x") == tmp_path / "etc-x"  # stays inside
    assert kernel_cache_dir(tmp_path, "").name == "unknown"


def test_marks_are_noted_per_kernel_and_read_back(tmp_path):
    assert built_ids(tmp_path) == set()
    mark_built(tmp_path, ["a1", "b2"])
    mark_built(tmp_path, ["b2", "c3", "", "../x", ".hidden"])  # no name leaves the dir
    assert built_ids(tmp_path) == {"a1", "b2", "c3"}
    assert sorted(p.name for p in (tmp_path / KERNEL_MARKS).iterdir()) == ["a1", "b2", "c3"]


def compiled(cache, name="k"):
    (cache / f"key-{name}").mkdir(parents=True)
    (cache / f"key-{name}" / f"__grp__{name}.json").write_text("{}")


def test_holds_built_by_the_notes_else_by_any_compiled_kernel(tmp_path):
    assert not holds_built(None, {"a"})
    cache = tmp_path / "c"
    cache.mkdir()
    assert not holds_built(cache, {"a"})  # empty
    compiled(cache)
    assert holds_built(cache, {"a", "b"})  # a gate's own cache its screen filled
    mark_built(cache, ["a"])  # a kept cache: its notes decide
    assert holds_built(cache, {"a"})
    assert not holds_built(cache, {"a", "b"})  # a later part's kernel not built there yet
    mark_built(cache, ["b"])
    assert holds_built(cache, {"a", "b"})
