"""Shards' A/B dirs merge into one A/B that the judge reads; shards of different
compilers do not."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import crow, run_result, write_results
from zlbench.errors import ZlbenchError
from zlbench.models import AbCompiler, AbSummary, load_json_model
from zlbench.runner.ab.merge import merge_ab
from zlbench.runner.ab.rounds import AB_DIR, load_rounds, load_summary, write_summary

S = "[8]"


def shard(root, op, base_version="3.5.0", rounds=2, floor_us=0.3):
    ab = root / AB_DIR
    for i in range(1, rounds + 1):
        for side, lat in (("pr", 1.0), ("base", 0.9)):
            rows = [crow(op, S, 1.0 / lat, lat=lat, torch_lat=1.0)]
            write_results(ab / str(i) / side, [run_result(op, rows)])
    s = AbSummary(
        mode="suspects", rounds=rounds, threshold=0.03, floor_us=floor_us, ops=[f"main/{op}"]
    )
    s.seconds = {"pr": 10.0, "base": 12.0}
    s.pr = AbCompiler(env="pr", path="/pr/triton")
    s.base = AbCompiler(env="b", dist="flagtree", version=base_version, path="/b/triton")
    write_summary(ab, s)
    return root


def test_rounds_of_every_shard_merge_round_by_round(tmp_path):
    dirs = [shard(tmp_path / "s1", "x"), shard(tmp_path / "s2", "y")]
    out = tmp_path / "merged"
    assert merge_ab(dirs, out)
    summary, rounds = load_summary(out)
    assert summary.ops == ["main/x", "main/y"] and summary.seconds == {"pr": 20.0, "base": 24.0}
    loaded = load_rounds(rounds)
    assert len(loaded.rounds) == 2
    pr, base = loaded.rounds[1]
    assert {k.run_name for k in pr} == {"x", "y"} == {k.run_name for k in base}
    assert load_json_model(out / AB_DIR / "ab.json", AbSummary).rounds == 2


def test_no_shard_with_an_ab_writes_nothing(tmp_path):
    (tmp_path / "s1").mkdir()
    assert not merge_ab([tmp_path / "s1"], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_shards_with_different_base_compilers_are_refused(tmp_path):
    dirs = [shard(tmp_path / "s1", "x"), shard(tmp_path / "s2", "y", base_version="3.4.0")]
    with pytest.raises(ZlbenchError, match="different base compiler: merge shards"):
        merge_ab(dirs, tmp_path / "m")


def test_shards_judged_with_different_paired_floors_are_refused(tmp_path):
    dirs = [shard(tmp_path / "s1", "x"), shard(tmp_path / "s2", "y", floor_us=0.0)]
    with pytest.raises(ZlbenchError, match="different floor: merge shards"):
        merge_ab(dirs, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_sharded_ab_reaches_the_judge_through_merge(tmp_path):
    """Two shards, each with its screen (results/) and its suspects' A/B (ab/):
    `zlbench merge` + `gate --results MERGED` judge the rows on the merged A/B."""
    from tests.support.zlsynth import brow, write_baseline
    from zlbench.cli import main
    from zlbench.models import GateVerdict, Verdict

    rows = {op: [brow(op, S, 1.0, lat=0.5)] for op in ("x", "y")}  # stored: 0.5 ms, stale
    write_baseline(tmp_path / "bl", rows)
    for k, op in ((1, "x"), (2, "y")):
        g = shard(tmp_path / f"s{k}", op)  # A/B: PR 1.0 ms, base 0.9 ms (+11 %)
        write_results(g / "results", [run_result(op, [crow(op, S, 1.0, lat=1.0)])])
    (tmp_path / "ops").mkdir()
    assert (
        main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")])
        == 0
    )
    assert (tmp_path / "m" / AB_DIR / "2" / "base").is_dir()
    rc = main(
        ["gate", "--baseline", str(tmp_path / "bl"), "--results", str(tmp_path / "m")]
        + ["--out", str(tmp_path / "judge"), "--ops-dir", str(tmp_path / "ops")]
    )
    v = load_json_model(tmp_path / "judge" / "verdict.json", GateVerdict)
    assert rc == 1 and v.ab is not None and v.ab.ops == ["main/x", "main/y"]
    assert {r.key.run_name: r.verdict for r in v.rows} == {
        "x": Verdict.REGRESSION,
        "y": Verdict.REGRESSION,
    }
    assert all(abs(r.ab.change - 1 / 0.9 + 1) < 1e-9 and r.ab.rounds == 2 for r in v.rows)


def test_interleaved_shards_merge_their_pairs_and_their_pr_sides(tmp_path):
    from test_interleaved_judge import gate_dir

    from zlbench.runner.ab.interleave import load_pairs

    _, g1 = gate_dir(tmp_path / "a", {"x": [(110.0, 100.0)] * 5})
    _, g2 = gate_dir(tmp_path / "b", {"y": [(100.0, 100.0)] * 5})
    out = tmp_path / "merged"
    assert merge_ab([g1, g2], out)
    pairs = load_pairs(out / AB_DIR)
    assert pairs is not None and sorted(r.key.op for r in pairs.rows) == ["x", "y"]
    summary, rounds = load_summary(out)
    assert summary.method == "interleaved" and len(rounds) == 1
    assert (out / AB_DIR / "1" / "pr").is_dir()  # the shards' results/, as the PR side
    with pytest.raises(ZlbenchError, match="paired by two shards"):
        merge_ab([g1, g1], tmp_path / "twice")
