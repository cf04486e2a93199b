"""zlbench merge: shards of a batch merge into what the unsharded batch produces."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from tests.support.batch_fakes import FakeExecutor, make_inventory
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_results
from zlbench.models import read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.merge import merge_batches
from zlbench.runner.batch.run import run_batch
from zlbench.workflow.merge import is_gate_dir, merge_dirs

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


def test_shards_that_replayed_different_records_are_refused(make, tmp_path):
    for r in ("r1", "r2"):
        (tmp_path / r).mkdir()
    a = make("a", shard=(1, 2), replay_root=tmp_path / "r1")
    b = make("b", shard=(2, 2), replay_root=tmp_path / "r2")
    with pytest.raises(ZlbenchError) as e:
        merge_batches([a, b], tmp_path / "m")
    msg = str(e.value)
    assert msg.startswith("cannot merge shards that replayed different records: replay_root is")
    assert str(tmp_path / "r1") in msg and str(tmp_path / "r2") in msg and "\n" not in msg
    assert not (tmp_path / "m").exists()
    c = make("c", shard=(2, 2), replay_root=tmp_path / "r1")
    assert len(merge_batches([a, c], tmp_path / "m")[1]) == 12


# --------------------------------------------------------------------------- gate dirs


@pytest.fixture
def gate_dirs(make):
    """Two shard gate dirs: g1 confirmed op1 twice (op2 once), g2 confirmed op5 once."""
    g1, g2 = make("g1/results", shard=(1, 2)).parent, make("g2/results", shard=(2, 2)).parent
    one, two, five = ({f"main/{op}"} for op in ("op1", "op2", "op5"))
    make("g1/confirm/1", restrict_to=one | two)
    make("g1/confirm/2", restrict_to=one)
    make("g2/confirm/1", restrict_to=five)
    return g1, g2


def _keys(batch_dir):
    return sorted(f"{s.repo}/{s.run_name}" for s in read_ops_status(batch_dir / "ops_status.csv"))


def test_gate_dirs_merge_into_a_gate_dir_with_the_confirm_passes(make, gate_dirs, tmp_path):
    g1, g2 = gate_dirs
    m = merge_dirs([g1, g2], tmp_path / "m")
    assert m.gate and m.passes == ["1", "2"] and m.out == tmp_path / "m"
    assert sorted(p.name for p in m.out.iterdir()) == ["confirm", "results"]
    whole = make("whole")
    assert _view(m.out / "results" / "ops_status.csv") == _view(whole / "ops_status.csv")
    assert _keys(m.out / "confirm" / "1") == ["main/op1", "main/op2", "main/op5"]
    assert _keys(m.out / "confirm" / "2") == ["main/op1"]  # g2 had one pass only
    # what the judge reads: the shards' results and, pass by pass, their samples
    merged, a, b = load_results(m.out), load_results(g1), load_results(g2)
    assert merged.rows() == {**a.rows(), **b.rows()}
    assert len(merged.confirm) == 2
    assert merged.confirm[0] == {**a.confirm[0], **b.confirm[0]}
    assert merged.confirm[1] == a.confirm[1]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.")]


def test_gate_dirs_without_confirm_passes(make, tmp_path):
    g1, g2 = make("g1/results", shard=(1, 2)).parent, make("g2/results", shard=(2, 2)).parent
    m = merge_dirs([g1, g2], tmp_path / "m")
    assert m.gate and m.passes == [] and not (m.out / "confirm").exists()
    assert len(_keys(m.out / "results")) == 12


def test_gate_dir_merge_failing_in_a_pass_leaves_nothing(make, gate_dirs, tmp_path):
    g1, g2 = gate_dirs
    bad = g2 / "confirm" / "1" / "ops_status.csv"
    bad.unlink()
    with pytest.raises(ZlbenchError, match="not a batch dir"):
        merge_dirs([g1, g2], tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g1", "g2", "ops"]


def test_gate_dirs_and_batch_dirs_do_not_mix(make, gate_dirs, tmp_path):
    plain = make("plain", shard=(2, 2))
    with pytest.raises(ZlbenchError, match="cannot merge gate dirs with batch dirs: .*plain"):
        merge_dirs([gate_dirs[0], plain], tmp_path / "m")
    assert not is_gate_dir(plain) and is_gate_dir(gate_dirs[0])
    batch = merge_dirs([make("a", shard=(1, 2)), plain], tmp_path / "m")  # batch dirs as before
    assert not batch.gate and (batch.out / "ops_status.csv").is_file()


def test_merge_cli_with_gate_dirs(gate_dirs, tmp_path, capsys):
    assert main(["merge", *map(str, gate_dirs), "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "12 op(s) from 2 shard(s), 19 row(s)" in out and "2 confirm pass(es)" in out
