"""Multi-GPU sweep (docs/design.md §5.16): sharding, merge, trust figure, children, on CPU."""

from __future__ import annotations

import json
import textwrap

import pytest

from zlbench.errors import ZlbenchError
from zlbench.plugins import sweep


def test_parse_shard():
    assert sweep.parse_sweep_shard("1/4") == (1, 4)
    for bad in ("4/4", "x/2", "1", "-1/2", "0/0"):
        with pytest.raises(ZlbenchError):
            sweep.parse_sweep_shard(bad)


def test_round_robin_shards_cover_every_config_once():
    configs = list(range(10))
    shards = [sweep.shard_configs(configs, k, 3) for k in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert sorted(c for s in shards for c in s) == configs


def test_too_few_configs_are_not_split():
    assert sweep.shard_configs([0, 1, 2], 1, 2) == [0, 1, 2]
    assert sweep.shard_configs([0, 1, 2, 3], 1, 2) == [1, 3]
    assert sweep.shard_configs([0, 1], 0, 1) == [0, 1]


def _cfg(b):
    return {"kwargs": {"B": b}, "num_warps": 4}


def test_merge_picks_fastest_shard_winner_and_counts_trust():
    shards = [
        {"k": {"[1]": {"config": _cfg(16), "ms": 1.00}, "[2]": {"config": _cfg(16), "ms": 2.0}}},
        {"k": {"[1]": {"config": _cfg(32), "ms": 1.005}, "[2]": {"config": _cfg(64), "ms": 1.0}}},
        {"k": {"[1]": {"config": _cfg(16), "ms": 0.99}}, "j": {"[9]": {"config": _cfg(8)}}},
    ]
    merged, stats = sweep.merge_shards(shards, close_rel=0.02)
    assert merged == {"k": {"[1]": _cfg(16), "[2]": _cfg(64)}, "j": {"[9]": _cfg(8)}}
    # [1]: winners differ (16 vs 32) within 2 %: close; [2]: differ, not close; [9]: one shard
    assert (stats.keys, stats.differing, stats.close) == (3, 2, 1)
    assert stats.line() == "ZLBENCH_SWEEP keys=3 differing=2 close=1"


def test_merge_of_agreeing_shards_has_full_trust():
    shard = {"k": {"[1]": {"config": _cfg(16), "ms": 1.0}}}
    merged, stats = sweep.merge_shards([shard, json.loads(json.dumps(shard))])
    assert merged == {"k": {"[1]": _cfg(16)}} and stats.differing == 0


SOFTMAX_TESTS = textwrap.dedent(
    """
    import torch, flag_gems

    def test_softmax():
        flag_gems.ops.softmax(torch.randn(2, 40))
    """
)


def test_sweep_child_writes_winner_and_timing_per_key(tmp_path):
    pytest.importorskip("triton")
    from autotune_harness import run_plugins

    (tmp_path / "test_sm.py").write_text(SOFTMAX_TESTS)
    out = tmp_path / "shard0.json"
    args = ["--zl-sweep-shard", "0/1", "--zl-sweep-out", str(out)]
    run = run_plugins(tmp_path, "test_sm.py", "s0", extra_args=args)
    assert run.rc == 0, run.out
    shard = json.loads(out.read_text())
    ((key, result),) = shard["flag_gems.ops.softmax:softmax_kernel"].items()
    assert result["ms"] > 0
    merged, stats = sweep.merge_shards([shard])
    assert merged == run.records() and stats.keys == 1
