"""collect(root, ops): only those ops' codegen records (the kernel replay's builds)."""

from __future__ import annotations

import pytest

from tests.support import cgsynth
from zlbench.codegen.collect import collect
from zlbench.errors import ZlbenchError


def _root(tmp_path):
    root = tmp_path / "bl"
    ids = {}
    for op in ("a", "b"):
        req = cgsynth.request(name=f"{op}_kernel")
        texts = cgsynth.stage_texts(op)
        rec = cgsynth.record(req, texts, uses=[cgsynth.use(op)])
        cgsynth.write_index(root / "main" / op / "codegen", [rec], [texts])
        ids[op] = rec.id
    return root, ids


def test_only_the_named_ops_records_are_read(tmp_path):
    root, ids = _root(tmp_path)
    some = collect(root, {"main/a"})
    assert set(some.records) == {ids["a"]} and set(some.op_kernels) == {"main/a"}
    assert set(collect(root).records) == {ids["a"], ids["b"]}


def test_ops_without_records_give_nothing_and_no_error_but_a_whole_read_refuses(tmp_path):
    root, _ = _root(tmp_path)
    assert collect(root, {"main/zz", "other/a"}).records == {}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ZlbenchError, match="no codegen records"):
        collect(empty)
