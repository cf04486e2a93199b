"""zlbench merge: shards of a batch merge into what the unsharded batch produces."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from batch_fakes import FakeExecutor, make_inventory

from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import read_ops_status
from zlbench.runner.batch import BatchConfig, run_batch
from zlbench.runner.batchinfo import read_batch_info
from zlbench.runner.merge import merge_batches

OPS = [f"op{i}" for i in range(10)] + ["gone", "skipme"]


@pytest.fixture
def make(tmp_path):
    ops_dir = tmp_path / "ops"
    make_inventory(ops_dir, "main", OPS, skip={"skipme": "no"})
    (ops_dir / "dismiss.txt").write_text("gone  # 2025-01-01 broken\n")

    def batch(name, fake=None, **kw):
        cfg = BatchConfig(
            out_dir=tmp_path / name,
            flaggems_dirs={"main": tmp_path},
            ops_dir=ops_dir,
            all_ops=True,
            progress=io.StringIO(),
            executor=fake or FakeExecutor({"op3": ["CRASH:-6", "PASS:1"]}),
            **kw,
        )
        return run_batch(cfg).out_dir

    return batch


def _view(path):
    return [s.model_dump(exclude={"gpu", "seconds"}) for s in read_ops_status(path)]


def test_merge_of_shards_equals_unsharded(make, tmp_path):
    whole = make("whole")
    shards = [make(f"s{k}", shard=(k, 3), gpus=[str(k)]) for k in (1, 2, 3)]
    out, statuses, rows = merge_batches(shards, tmp_path / "merged")
    assert _view(out / "ops_status.csv") == _view(whole / "ops_status.csv")
    assert (out / "summary.csv").read_text() == (whole / "summary.csv").read_text()
    assert rows == 19 and len(statuses) == 12
    for st in statuses:
        if st.run_dir:
            assert (out / st.run_dir / "result.json").is_file()
    info = read_batch_info(out)
    assert info.merged_from == [str(s) for s in shards] and info.shard is None
    assert info.gpus == ["1", "2", "3"] and [d.key for d in info.dismissed] == ["main/gone"]
    assert info.ops == read_batch_info(whole).ops
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".merged")]


def test_same_op_twice_with_same_content_is_fine(make, tmp_path):
    a = make("a", shard=(1, 2))
    b = make("b", shard=(2, 2))
    out, statuses, _ = merge_batches([a, b, a], tmp_path / "m")
    assert len(statuses) == 12


def test_same_op_with_different_content_is_refused(make, tmp_path):
    a = make("a", shard=(1, 2))
    b = make("b", shard=(2, 2))
    a2 = tmp_path / "a2"
    shutil.copytree(a, a2)
    st = next(s for s in read_ops_status(a2 / "ops_status.csv") if s.run_dir)
    (a2 / st.run_dir / "result.json").write_text(
        (a2 / st.run_dir / "result.json").read_text().replace('"speedup": 1.0', '"speedup": 9.0')
    )
    with pytest.raises(ZlbenchError, match=f"op main/{st.run_name} is in both"):
        merge_batches([a, b, a2], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_different_environment_is_refused(make, tmp_path):
    a = make("a", shard=(1, 2))
    b = make("b", FakeExecutor(gpu_model="NVIDIA A100"), shard=(2, 2))
    msg = "different environments .*gpu_model is 'NVIDIA (A100|H200)'"
    with pytest.raises(ZlbenchError, match=msg):
        merge_batches([a, b], tmp_path / "m")
    assert not (tmp_path / "m").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.")]


def test_different_timing_is_refused(make, tmp_path):
    a = make("a", shard=(1, 2))
    b = make("b", shard=(2, 2), timing="kernel")
    with pytest.raises(ZlbenchError, match="measured differently: timing is 'cudagraph'"):
        merge_batches([a, b], tmp_path / "m")


def test_bad_merge_inputs(make, tmp_path):
    a = make("a")
    with pytest.raises(ZlbenchError, match="already exists"):
        merge_batches([a], a)
    with pytest.raises(ZlbenchError, match="not a batch dir"):
        merge_batches([tmp_path / "ops"], tmp_path / "m")


def test_merge_and_summarize_cli(make, tmp_path, capsys):
    a = make("a", shard=(1, 2))
    b = make("b", shard=(2, 2))
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 0
    assert "12 op(s) from 2 shard(s), 19 row(s)" in capsys.readouterr().out
    assert main(["merge", str(a), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zlbench merge: error:") and "already exists" in err
    (tmp_path / "m" / "summary.csv").unlink()
    assert main(["summarize", str(tmp_path / "m")]) == 0
    assert "19 row(s)" in capsys.readouterr().out
    assert json.loads((tmp_path / "m" / "batch.json").read_text())["kind"] == "batch"
