"""`zlbench gate --shard K/N`, `zlbench merge` of the shards' gate dirs and the judge's
`gate --results`: the path the flagtree-gate workflow takes, with measuring faked.

The fake is the workflow's measure seam (``zlbench.workflow.gate.GateSeams``): it
selects and shards with the real ``plan_selection`` (so an empty shard raises as in a
real batch) and writes synthetic results (tests/support/zlsynth.py) for the ops of the request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.models import GateVerdict, Selection, Verdict, load_json_model, read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.plan import plan_selection
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

S = "[1024]"
OPS = ["add", "mm", "mul"]


def results(slow: set[str] = frozenset()):
    """One result per op; the ops in ``slow`` run at 0.8x of the baseline."""
    return [run_result(op, [crow(op, S, 0.8 if op in slow else 1.0)]) for op in OPS]


class FakeMeasure:
    """measure_batch: the first request of a shard measures ``first``, every confirm
    pass (no shard) ``confirm``."""

    def __init__(self, first, confirm):
        self.first, self.confirm = first, confirm
        self.requests = []

    def __call__(self, req):
        self.requests.append(req)
        cfg = BatchConfig(
            out_dir=req.out_dir,
            flaggems_dirs={},
            ops_dir=req.job.selection.ops_dir,
            all_ops=True,
            restrict_to=set(req.ops),
            shard=req.shard,
        )
        keys = set(plan_selection(cfg).keys())  # EmptyShardError for an empty shard
        source = self.first if req.shard else self.confirm
        write_results(req.out_dir, [r for r in source if f"main/{r.run_name}" in keys])
        return req.out_dir, 0


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    make_inventory(tmp_path / "ops", "main", OPS)
    write_baseline(tmp_path / "bl", {op: [brow(op, S, 1.0)] for op in OPS})  # confirm_repeats 2
    return tmp_path


def shard_of(op: str, n: int) -> int:
    from zlbench.runner.batch.shard import shard

    keys = [f"main/{o}" for o in OPS]
    return next(k for k in range(1, n + 1) if f"main/{op}" in shard(keys, k, n))


def gate(world, *args) -> int:
    """The judge: `zlbench gate --results` (measures nothing)."""
    return main(["gate", "--baseline", str(world / "bl"), "--ops-dir", str(world / "ops"), *args])


def gate_shard(world, fake, shard, out, confirm=None) -> int:
    """`gate --shard K/N` through the workflow, measuring with ``fake``."""
    job = GateJob(
        baseline=str(world / "bl"),
        out=out,
        selection=Selection(ops_dir=world / "ops"),
        shard=shard,
        confirm=confirm,
    )
    return run_gate(job, GateSeams(measure=fake))


def run_shards(world, n, fake) -> list[Path]:
    outs = []
    for k in range(1, n + 1):
        out = world / f"shard{k}"
        assert gate_shard(world, fake, (k, n), out) == 0
        outs.append(out)
    return outs


@pytest.mark.parametrize("really_slow", [True, False])
def test_a_shard_confirms_its_flagged_op_and_the_judge_uses_the_samples(world, capsys, really_slow):
    """mm regresses in its shard; the shard re-measures it twice (the manifest's
    confirm_repeats) into confirm/1, confirm/2; the judge of the merged gate dirs
    fails on the confirmed regression, or passes when the re-measures say noise."""
    fake = FakeMeasure(results({"mm"}), results({"mm"} if really_slow else set()))
    outs = run_shards(world, 2, fake)
    k = shard_of("mm", 2)
    by_shard = [r for r in fake.requests if r.shard is not None]
    assert [r.shard for r in by_shard] == [(1, 2), (2, 2)]
    confirms = [r for r in fake.requests if r.shard is None]
    assert [(c.ops, c.out_dir) for c in confirms] == [
        ({"main/mm"}, outs[k - 1] / "confirm" / str(i)) for i in (1, 2)
    ]
    for i, out in enumerate(outs, 1):
        # each shard judged its own slice (no MISSING for the other shard's ops)
        v = load_json_model(out / "verdict.json", GateVerdict)
        mine = {st.run_name for st in read_ops_status(out / "results" / "ops_status.csv")}
        assert {o.run_name for o in v.ops} == mine and "MISSING" not in v.counts
        assert (out / "report.md").is_file() and (out / "junit.xml").is_file()
        assert (out / "confirm").is_dir() == (i == k)
    assert "covers this shard only" in capsys.readouterr().out

    assert main(["merge", *map(str, outs), "--out", str(world / "merged")]) == 0
    rc = gate(world, "--results", str(world / "merged"), "--out", str(world / "judged"))
    v = load_json_model(world / "judged" / "verdict.json", GateVerdict)
    [mm] = [r for r in v.rows if r.key.run_name == "mm"]
    assert len(mm.samples) == 3  # the first measurement and the shard's two re-measures
    if really_slow:
        assert (rc, v.verdict) == (1, "FAIL")
        assert mm.verdict is Verdict.REGRESSION and mm.confirmed is True
    else:
        assert (rc, v.verdict) == (0, "PASS")
        assert mm.confirmed is False
    assert len(fake.requests) == 4  # the judge measured nothing


def test_without_the_confirm_passes_the_judge_cannot_confirm(world):
    """The failure the merge of confirm/ fixes: results alone leave the regression
    'not re-measured'."""
    fake = FakeMeasure(results({"mm"}), results(set()))
    outs = run_shards(world, 2, fake)
    merged = main(["merge", *(str(o / "results") for o in outs), "--out", str(world / "m")])
    assert merged == 0
    assert gate(world, "--results", str(world / "m"), "--out", str(world / "judged")) == 1
    v = load_json_model(world / "judged" / "verdict.json", GateVerdict)
    [mm] = [r for r in v.rows if r.key.run_name == "mm"]
    assert mm.verdict is Verdict.REGRESSION and mm.confirmed is None


def test_confirm_flag_sets_the_passes_of_a_shard(world):
    fake = FakeMeasure(results({"mm"}), results({"mm"}))
    k = shard_of("mm", 2)
    out = world / "s"
    assert gate_shard(world, fake, (k, 2), out, confirm=1) == 0
    assert [r.out_dir for r in fake.requests[1:]] == [out / "confirm" / "1"]


def test_more_shards_than_ops(world, capsys):
    """4 shards, 3 ops: shard 4 measures nothing, exits 0 with a note and an empty
    results/ that merges; the judge sees every op once and passes."""
    fake = FakeMeasure(results(), results())
    outs = run_shards(world, 4, fake)
    empty = outs[3]
    assert "shard 4/4: nothing to measure" in capsys.readouterr().out
    assert read_ops_status(empty / "results" / "ops_status.csv") == []
    assert not (empty / "verdict.json").exists()
    assert main(["merge", *map(str, outs), "--out", str(world / "merged")]) == 0
    assert gate(world, "--results", str(world / "merged"), "--out", str(world / "judged")) == 0
    v = load_json_model(world / "judged" / "verdict.json", GateVerdict)
    assert sorted(o.run_name for o in v.ops) == OPS and v.counts == {"PASS": 3}


def test_a_shard_that_measured_nothing_exits_2(world):
    def nothing(req):
        write_results(req.out_dir, [])
        return req.out_dir, 2

    assert gate_shard(world, nothing, (1, 2), world / "s") == 2
