"""zlbench.codegen.shards: the rebuild dealt over N jobs by compile seconds, and its
shard dirs taken only whole (same baseline, compiler and split; every shard once;
every kernel in the shard it was dealt to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.trees import shipped
from zlbench.codegen.shards import SHARD_JSON, load_shards, shard_ids, write_shard
from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, dump_json_model, load_json_model
from zlbench.models.codegen_screen import RebuiltShard

V3 = shipped("baselines/v3") / "main"
ESTIMATES = {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0, "e": None}


def test_shards_deal_the_longest_compiles_first_onto_the_lightest_shard():
    one, two = shard_ids(ESTIMATES, (1, 2)), shard_ids(ESTIMATES, (2, 2))
    assert sorted(one + two) == sorted(ESTIMATES) and not set(one) & set(two)
    assert one == ["a", "d", "e"] and two == ["b", "c"]  # 4+1+default vs 3+2
    assert shard_ids({"a": 1.0}, (2, 2)) == []  # more shards than kernels: empty


def _shards(tmp: Path, n: int = 2, **stamp) -> list[Path]:
    """Shard dirs of made-up kernels ``a``..``e``: records of v3's abs kernel renamed."""
    (real,) = load_json_model(V3 / "abs" / "codegen" / "index.json", CodegenIndex).records[:1]
    dirs = []
    for k in range(1, n + 1):
        ids = shard_ids(ESTIMATES, (k, n))
        recs = {i: real.model_copy(update={"id": i}) for i in ids}
        fields = dict(baseline_sha256="b" * 64, compiler="triton 3.6.0 sha256:1", shard=(k, n))
        d = tmp / f"s{k}"
        cg = {i: V3 / "abs" / "codegen" for i in ids}
        write_shard(d, RebuiltShard(**{**fields, **stamp}, ids=ids), recs, cg)
        dirs.append(d)
    return dirs


def test_whole_shards_give_every_kernel_with_its_blobs(tmp_path):
    dirs = _shards(tmp_path)
    rebuilt, where = load_shards(dirs, ESTIMATES, "b" * 64, "triton 3.6.0 sha256:1")
    assert sorted(rebuilt) == sorted(ESTIMATES)
    for i, rec in rebuilt.items():
        for d in rec.result.stages.values():
            assert not d.blob or (where[i] / d.blob).is_file()


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("one", "shards \\[1\\] of 2 given; every shard 1..2 once"),
        ("twice", "shards \\[1, 1, 2\\] of 2 given"),
        ("split", "shards of different splits"),
        ("baseline", "rebuilt from another baseline"),
        ("compiler", "rebuilt with another compiler"),
        ("kernels", "holds other kernels than shard 1/2"),
        ("index", "1 kernel\\(s\\) of its shard missing from its index.json"),
        ("unfinished", f"no {SHARD_JSON}: not the --out of a finished"),
    ],
)
def test_shards_are_refused_unless_whole_and_this_screens(tmp_path, case, why):
    dirs = _shards(tmp_path)
    sha, compiler = "b" * 64, "triton 3.6.0 sha256:1"
    if case == "one":
        dirs = dirs[:1]
    elif case == "twice":
        dirs = [dirs[0], *dirs]
    elif case == "split":
        dirs = [dirs[0], _shards(tmp_path / "3", n=3)[1]]
    elif case == "baseline":
        sha = "c" * 64
    elif case == "compiler":
        compiler = "triton 3.7.1 sha256:2"
    elif case == "kernels":
        stamp = load_json_model(dirs[0] / SHARD_JSON, RebuiltShard)
        dump_json_model(dirs[0] / SHARD_JSON, stamp.model_copy(update={"ids": ["a"]}))
    elif case == "index":
        index = load_json_model(dirs[0] / "index.json", CodegenIndex)
        dump_json_model(
            dirs[0] / "index.json", index.model_copy(update={"records": index.records[1:]})
        )
    elif case == "unfinished":
        (dirs[1] / SHARD_JSON).unlink()
    with pytest.raises(ZlbenchError, match=why):
        load_shards(dirs, ESTIMATES, sha, compiler)
