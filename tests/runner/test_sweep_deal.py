"""A multi-GPU sweep deals shapes as well as configs (issue 30 item 3, docs/autotune.md
"Dealing configs or shapes"): the cost model, the shape count of a shape file, the
merge that never compares timings of different shape parts, and a record batch whose
children (a scripted stand-in for pytest, as tests/runner/test_sweep_batch.py) each run
their row part of the op with every config."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.support.batch_fakes import FakeExecutor, fake_sweep_children, make_inventory
from zlbench.errors import ZlbenchError
from zlbench.models import PlanEntry, read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.run import run_batch
from zlbench.runner.sweep.deal import Deal, choose_deal, op_shapes, sweep_cost
from zlbench.runner.sweep.run import SweepSpec, merge_children, op_deal

# ---------------------------------------------------------------- the cost model


def test_few_configs_and_many_shapes_deal_shapes():
    assert choose_deal(2, shapes=8, configs=4) == Deal(2, 1)  # 4x4+4 = 20 < 8x2+8 = 24
    assert choose_deal(2, shapes=8, configs=3) == Deal(2, 1)  # 3 < 2x2: configs not split
    assert choose_deal(4, shapes=16, configs=6) == Deal(4, 1)


def test_many_configs_and_few_shapes_deal_configs_or_both():
    assert choose_deal(2, shapes=3, configs=140) == Deal(1, 2)  # 2x140+2 > 3x70+3
    assert choose_deal(2, shapes=1, configs=4) == Deal(1, 2)
    assert choose_deal(4, shapes=6, configs=140) == Deal(2, 2)  # 3x70+3 < 6x35+6
    assert sweep_cost(Deal(2, 2), 6, 140) == 213


def test_fewer_shapes_than_gpus_use_only_as_many_gpus_as_pay():
    d = choose_deal(4, shapes=3, configs=3)  # configs never split: one GPU per shape
    assert d == Deal(3, 1) and d.children == 3


def test_unknown_shapes_deal_configs_as_before_and_a_deal_can_be_forced():
    assert choose_deal(4, shapes=None) == Deal(1, 4)
    assert choose_deal(4, shapes=2, how="shapes") == Deal(2, 1)
    assert choose_deal(2, shapes=50, configs=2, how="configs") == Deal(1, 2)
    assert choose_deal(1, shapes=50) == Deal(1, 1)
    with pytest.raises(ZlbenchError, match="one of auto, configs, shapes"):
        choose_deal(2, 4, how="rows")
    assert [Deal(2, 2).of(k) for k in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def entry(tmp_path: Path, text: str | None, op: str = "abs", **kw) -> PlanEntry:
    shape_file = None
    if text is not None:
        shape_file = tmp_path / "shapes.yaml"
        shape_file.write_text(text)
    return PlanEntry(op=op, run_name=op, run_dir=str(tmp_path / "r"), nodeids=[],
                     shape_file=str(shape_file) if shape_file else None, **kw)  # fmt: skip


SHAPES4 = "abs:\n  shapes:\n  - [1]\n  - [2]\n  - [3]\n  - [4]\n  shape_desc: M\n"


def test_the_op_s_shapes_come_from_its_shape_file(tmp_path):
    assert op_shapes(entry(tmp_path, SHAPES4)) == 4
    assert op_shapes(entry(tmp_path, SHAPES4, op="abs@test_abs.py")) == 4
    assert op_shapes(entry(tmp_path, SHAPES4, op="neg")) is None  # not under its op id
    assert op_shapes(entry(tmp_path, None)) is None  # upstream's shapes: not known
    assert op_shapes(entry(tmp_path, "abs: [")) is None  # unreadable: not known
    spec = SweepSpec(["0", "1"], configs=3)
    assert op_deal(entry(tmp_path, SHAPES4), spec) == Deal(2, 1)
    assert op_deal(entry(tmp_path, SHAPES4, part=[1, 2]), spec) == Deal(1, 2)  # a row part


# ---------------------------------------------------------------- the merge


def _cfg(b: int) -> dict:
    return {"kwargs": {"B": b}, "num_warps": 4}


def test_a_key_of_two_shape_parts_keeps_the_first_part_s_winner_never_the_faster_gpu():
    shards = [
        {"k": {"[1]": {"config": _cfg(16), "ms": 2.0}, "[x]": {"config": _cfg(16), "ms": 5.0}}},
        {"k": {"[2]": {"config": _cfg(32), "ms": 1.0}, "[x]": {"config": _cfg(64), "ms": 1.0}}},
    ]
    merged, stats = merge_children([{}, {}], shards, parts=[0, 1])
    # [x] was tuned by both parts: part 0's winner, though part 1's GPU timed it faster
    assert merged == {"k": {"[1]": _cfg(16), "[2]": _cfg(32), "[x]": _cfg(16)}}
    assert (stats.keys, stats.differing) == (3, 1)
    merged, _ = merge_children([{}, {}], shards)  # config shards: the fastest, as before
    assert merged["k"]["[x]"] == _cfg(64)


def test_config_shards_within_a_shape_part_still_pick_the_fastest():
    shards = [
        {"k": {"[1]": {"config": _cfg(16), "ms": 2.0}}},
        {"k": {"[1]": {"config": _cfg(32), "ms": 1.0}}},
        {"k": {"[2]": {"config": _cfg(8), "ms": 1.0}}},
        {"k": {"[2]": {"config": _cfg(4), "ms": 3.0}}},
    ]
    merged, _ = merge_children([{}] * 4, shards, parts=[0, 0, 1, 1])
    assert merged == {"k": {"[1]": _cfg(32), "[2]": _cfg(8)}}


# ---------------------------------------------------------------- a record batch

# Stand-in for `python -m pytest` in a sweep child: it runs the rows of its plan entry's
# row part (all 4 shapes without one) with the configs of its --zl-sweep-shard; each
# shape i is its own tuning key "[i]"; child k's timings read 1 + k ms.
CHILD = r"""
import json, os, sys
argv = sys.argv
plan = json.load(open(argv[argv.index("--zl-plan") + 1]))
shard = argv[argv.index("--zl-sweep-shard") + 1]
out = argv[argv.index("--zl-sweep-out") + 1]
k = int(os.environ["CUDA_VISIBLE_DEVICES"])
(entry,) = plan["entries"]
part = entry.get("part") or [1, 1]
print(f"DEAL_PROBE part={part[0]}/{part[1]} shard={shard}", flush=True)
run_dir, name = entry["run_dir"], entry["run_name"]
print(f"ZLBENCH_OP_BEGIN run_name={name}", flush=True)
rows = [i for i in range(4) if i % part[1] == part[0] - 1]
cfg = {"kwargs": {"B": 16 * (k + 1)}, "num_warps": 4}
os.makedirs(os.path.join(run_dir, "autotune_records"), exist_ok=True)
record = {"k:tuned": {f"[{i}]": cfg for i in rows}}
json.dump(record, open(os.path.join(run_dir, "autotune_records", name + ".json"), "w"))
json.dump({"k:tuned": {f"[{i}]": {"config": cfg, "ms": 1.0 + k} for i in rows}}, open(out, "w"))
result = {"schema_version": 1, "kind": "run", "repo": "main", "run_name": name,
          "op": entry["op"], "status": "PASS", "mode": "record", "timing": "kernel"}
json.dump(result, open(os.path.join(run_dir, "result.json"), "w"))
print(f"ZLBENCH_OP_END run_name={name} status=PASS", flush=True)
"""


@pytest.fixture
def children(tmp_path, monkeypatch) -> None:
    fake_sweep_children(tmp_path, monkeypatch, CHILD)


def _batch(tmp_path: Path, shapes: str | None) -> tuple[Path, str]:
    make_inventory(tmp_path / "ops", "main", ["abs"])
    (tmp_path / "fg").mkdir(exist_ok=True)
    shape_file = None
    if shapes is not None:
        shape_file = tmp_path / "shapes.yaml"
        shape_file.write_text(shapes)
    config = BatchConfig(
        out_dir=tmp_path / "out", flaggems_dirs={"main": tmp_path / "fg"},
        ops_dir=tmp_path / "ops", ops=["abs"], gpus=["7"], max_retries=0,
        progress=io.StringIO(), executor=FakeExecutor(), sweep_gpus=["0", "1"],
        shape_file=shape_file,
    )  # fmt: skip
    out = run_batch(config).out_dir
    (st,) = read_ops_status(out / "ops_status.csv")
    return out / "main" / "abs", st.note


def test_a_record_batch_deals_an_op_s_shapes_over_the_sweep_gpus(tmp_path, children):
    run_dir, note = _batch(tmp_path, SHAPES4)  # 4 shapes, K unknown (assumed many): shapes
    sweep = run_dir / "sweep"
    assert "DEAL_PROBE part=1/2 shard=0/1" in (sweep / "shard-0.log").read_text()
    assert "DEAL_PROBE part=2/2 shard=0/1" in (sweep / "shard-1.log").read_text()
    merged = json.loads((run_dir / "autotune_records" / "abs.json").read_text())["kernels"]
    # each shape's winner is its own child's: shapes 0, 2 on GPU 0, shapes 1, 3 on GPU 1
    assert {k: c["kwargs"]["B"] for k, c in merged["k:tuned"].items()} == {
        "[0]": 16, "[1]": 32, "[2]": 16, "[3]": 32,
    }  # fmt: skip
    trust = json.loads((sweep / "trust.json").read_text())
    assert (trust["keys"], trust["differing"]) == (4, 0)  # no key picked across GPUs
    assert trust["measured"]["deal"] == {"shapes": 2, "configs": 1}
    assert "configs from a 2-GPU sweep (0,1, shapes dealt 2 way(s) x configs 1): keys=4" in note


def test_without_known_shapes_the_batch_deals_configs_as_before(tmp_path, children):
    run_dir, note = _batch(tmp_path, None)
    for k in (0, 1):
        log = (run_dir / "sweep" / f"shard-{k}.log").read_text()
        assert f"DEAL_PROBE part=1/1 shard={k}/2" in log
    assert "configs from a 2-GPU sweep (0,1): keys=4 differing=4" in note
