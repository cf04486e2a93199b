"""`zlbench gate --replay --replay-part K/N` replays one part of the plan's rows and
stops: exit 0, its replay dir written, no op path measured and no verdict (the gate
given every part with `--replayed` measures and judges: tests/runner/test_replay_step.py
for the parts' rows and samples merged). The screen and the replay are seams here."""

from __future__ import annotations

import io

import pytest
from test_gate_base_screen import BaseScreen, compilers  # noqa: F401 (autouse fixture)
from test_gate_codegen import ADD_SAME, MM_CHANGED, FakeBatch, baseline, good

import zlbench.runner.replay as replay_mod
from zlbench.models import ReplayRun, Selection
from zlbench.runner.ab.env import PR_ENV
from zlbench.runner.replay import ReplayOutcome
from zlbench.workflow import gate as gate_mod
from zlbench.workflow.ab import AbOptions
from zlbench.workflow.gate import GateJob, GateSeams
from zlbench.workflow.screen_job import run_gate_job


def _gate(tmp_path, ops_dir, out, screen=None, measure=None, **job):
    """``zlbench gate --replay`` of ``job``'s further options into ``out``, on the test
    baseline with a base compiler (its site dir made: compilers gives its fingerprint),
    the screen and batch seams faked: (exit code, the measure seam, what it said)."""
    bl, base_site = tmp_path / "bl", tmp_path / "base-a"
    if not bl.exists():
        baseline(bl)
    base_site.mkdir(exist_ok=True)
    j = GateJob(
        baseline=str(bl), out=out, selection=Selection(ops_dir=ops_dir),
        ab=AbOptions(base_compiler=str(base_site)), replay=True, **job,
    )  # fmt: skip
    measure, err = measure or FakeBatch(good()), io.StringIO()
    seams = GateSeams(measure=measure, screen=screen or BaseScreen(ADD_SAME, MM_CHANGED))
    seams.stdout = seams.stderr = err
    return run_gate_job(j, seams), measure, err.getvalue()


def test_a_replay_part_replays_its_part_and_stops_without_a_verdict(tmp_path, ops_dir, monkeypatch):
    asked = {}

    def fake_replay(**kw):
        asked.update(kw)
        kw["out"].joinpath("replay").mkdir(parents=True, exist_ok=True)
        return ReplayOutcome(run=ReplayRun(part="1/2"), replayed_ops={"main/mm"})

    monkeypatch.setattr(replay_mod, "replay_changed", fake_replay)
    monkeypatch.setattr(gate_mod, "_runner_gpu", lambda visible: "NVIDIA H100")
    out = tmp_path / "part1"
    rc, measure, err = _gate(tmp_path, ops_dir, out, time="changed",
                             base_screen_cache=tmp_path / "cache", replay_part=(1, 2),
                             replay_l2="warm")  # fmt: skip
    assert rc == 0, err
    assert (asked["part"], asked["parts"]) == ((1, 2), ())
    assert asked["l2"] == "warm"  # --replay-l2 reaches the replay step
    assert measure.requests == []  # no op path: the merging gate measures it
    assert not (out / "verdict.json").exists() and not (out / "junit.xml").exists()
    assert "replay part 1/2 written to" in err


def test_the_gate_that_takes_the_parts_shards_its_op_path(tmp_path, ops_dir, monkeypatch):
    """`--replayed PARTS --shard K/N`: every shard takes the parts' replay (nothing is
    replayed again) and measures its share of the op path only (v7's op path may not fit
    one device call); the shards' gate dirs merge with their replay
    (tests/workflow/test_gate_replay_rejudge.py)."""
    asked = {}

    def fake_replay(**kw):
        asked.update(kw)
        kw["out"].joinpath("replay").mkdir(parents=True, exist_ok=True)
        return ReplayOutcome(run=ReplayRun(), replayed_ops={"main/mm"})

    monkeypatch.setattr(replay_mod, "replay_changed", fake_replay)
    monkeypatch.setattr(gate_mod, "_runner_gpu", lambda visible: "NVIDIA H100")
    parts = (tmp_path / "part1", tmp_path / "part2")
    rc, measure, err = _gate(tmp_path, ops_dir, tmp_path / "shard1", time="changed",
                             base_screen_cache=tmp_path / "cache", replayed=parts,
                             shard=(1, 2))  # fmt: skip
    assert rc == 0, err
    assert (asked["part"], tuple(asked["parts"])) == (None, parts)
    assert asked["l2"] == "warm"  # no --replay-l2: the default policy
    assert measure.requests and all(r.shard == (1, 2) for r in measure.requests)
    assert all("main/mm" not in r.ops for r in measure.requests)  # the replay judged it
    assert "shard 1/2" in err


class PrCachingScreen(BaseScreen):
    """The screen seam, leaving one compiled PR kernel in the gate's PR cache."""

    def __call__(self, opts, say):
        (opts.cache_out / "pr-key").mkdir(parents=True, exist_ok=True)
        (opts.cache_out / "pr-key" / "__grp__pr.json").write_text("{}")
        return super().__call__(opts, say)


@pytest.mark.parametrize("built", [0, 2], ids=["none-built", "two-built"])
def test_the_ops_base_side_loads_what_the_base_compiler_built_before_it(
    tmp_path, ops_dir, monkeypatch, built
):
    """The base compiler's kernels that the replay's builds (or the screen's base
    rebuild) put in the gate's base cache feed the op path's base side, as the screen's
    feed its PR side: no base process compiles them again. Nothing built there: each
    base process compiles, as before."""
    seen = {}

    def fake_replay(**kw):
        seen["base_cache"] = kw["base_cache"]
        for i in range(built):  # what a build leaves: triton's group file of a kernel
            (kw["base_cache"] / f"key{i}").mkdir(parents=True)
            (kw["base_cache"] / f"key{i}" / f"__grp__k{i}.json").write_text("{}")
        kw["out"].joinpath("replay").mkdir(parents=True, exist_ok=True)
        return ReplayOutcome(run=ReplayRun(), replayed_ops={"main/mm"})

    monkeypatch.setattr(replay_mod, "replay_changed", fake_replay)
    monkeypatch.setattr(gate_mod, "_runner_gpu", lambda visible: "NVIDIA H100")
    screen = PrCachingScreen(ADD_SAME, MM_CHANGED)
    rc, measure, err = _gate(tmp_path, ops_dir, tmp_path / "gate", screen, time="all",
                             kernel_cache=tmp_path / "kcache")  # fmt: skip
    assert rc in (0, 1), err
    sides = {r.compiler == PR_ENV: r.shared_cache for r in measure.requests}
    assert set(sides) == {True, False}  # both sides of the A/B measured
    assert sides[False] == (seen["base_cache"] if built else None)
    assert sides[True] is not None and sides[True] != sides[False]  # never the PR's there
    said = f"the A/B's base side uses the base compiler's {built} compiled kernels"
    assert (said in err) == bool(built)


class ShardBatch(FakeBatch):
    """The measure seam as a shard's batch: only its share of the asked ops (the
    runner's deal), batch.json listing them."""

    asked: set[str] = set()  # the ops the gate asked for, before the deal

    def __call__(self, req):
        from dataclasses import replace

        from zlbench.runner.batch.shard import shard

        self.asked = self.asked | set(req.ops)
        mine = set(shard(sorted(req.ops), *req.shard)) if req.shard else set(req.ops)
        return super().__call__(replace(req, ops=mine))


def test_a_shards_ab_names_the_ops_its_batch_was_dealt(tmp_path, ops_dir, monkeypatch):
    """A shard of the gate taking the parts measures its share of the op path: its
    ab.json (the report's "N ops measured by both compilers") lists that share, not the
    whole op path (v7's shard 1 of 6 said 85 ops for its 14); `zlbench merge` unions
    the shards' lists."""
    monkeypatch.setattr(replay_mod, "replay_changed", lambda **kw: ReplayOutcome(
        run=ReplayRun(), replayed_ops=set()))  # fmt: skip
    monkeypatch.setattr(gate_mod, "_runner_gpu", lambda visible: "NVIDIA H100")
    from zlbench.models import AbSummary, load_json_model

    got = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        rc, measure, err = _gate(tmp_path, ops_dir, out, measure=ShardBatch(good()),
                                 time="all", replayed=(tmp_path / "p1",), shard=(k, 2))  # fmt: skip
        assert rc in (0, 1), err
        assert f"interleaved A/B of 3 op(s) (shard {k}/2: its share of them)" in err
        ab = load_json_model(out / "ab" / "ab.json", AbSummary)
        dealt = set().union(*(r.ops for r in measure.requests))
        assert set(ab.ops) == dealt < measure.asked, (ab.ops, dealt, measure.asked)
        got.append(set(ab.ops))
    assert got[0] and got[1] and not got[0] & got[1]
    assert got[0] | got[1] == {"main/add", "main/mm", "main/sum"}
