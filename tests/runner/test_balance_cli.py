"""`zlbench batch --costs / --plan-only / --suggest-shards`: what a batch runs follows the
recorded durations, and the plan is printed without measuring."""

from __future__ import annotations

import pytest

from tests.support.batch_fakes import batch_cli
from zlbench.models import OpStatus, RunStatus
from zlbench.runner.batch.status import write_ops_status

OPS = ["abs", "add", "exp", "mm", "bmm", "softmax", "topk", "cat"]
SECONDS = {"topk": 40.0, "mm": 12.0, "bmm": 11.0, "abs": 1.0, "add": 1.2, "exp": 0.9}


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    rows = [
        OpStatus(repo="main", op=op, run_name=op, status=RunStatus.PASS, seconds=s)
        for op, s in SECONDS.items()
    ]
    write_ops_status(tmp_path / "prev", rows)
    before = ["--all", "--dtypes", "bfloat16"]  # the durations' own dtype: factor 1
    run = batch_cli(tmp_path, monkeypatch, capsys, OPS, before=before)
    run.costs = str(tmp_path / "prev" / "ops_status.csv")
    return run


def _ran(fakes) -> dict[str, list[str]]:
    by_gpu: dict[str, list[str]] = {}
    for call in fakes[0].calls:
        by_gpu.setdefault(call["gpu"], []).extend(name for name, *_ in call["entries"])
    return by_gpu


def test_the_long_op_gets_a_shard_of_its_own(cli):
    ran = []
    for k in (1, 2, 3):
        rc, _, err, fakes = cli("--costs", cli.costs, "--shard", f"{k}/3", "--gpus", "0")
        assert rc == 0, err
        ran.append(sorted(_ran(fakes[-1:])["0"]))
        fakes.clear()
    assert ["topk"] in ran  # 40 s alone; the rest share the other two shards
    assert sorted(op for ops in ran for op in ops) == sorted(OPS)


def test_gpus_of_one_batch_are_balanced_by_cost(cli):
    rc, _, err, fakes = cli("--costs", cli.costs, "--gpus", "0,1")
    assert rc == 0, err
    by_gpu = _ran(fakes)
    alone = by_gpu["0"] if "topk" in by_gpu["0"] else by_gpu["1"]
    assert alone == ["topk"]


def test_plan_only_prints_each_shard_and_measures_nothing(cli):
    rc, out, err, fakes = cli("--costs", cli.costs, "--shard", "1/3", "--plan-only")
    assert rc == 0, err
    assert not fakes
    lines = out.splitlines()
    assert lines[0].startswith("expected wall time per shard (durations: ")
    assert [line.split()[0] for line in lines[2:5]] == ["1", "2", "3"]
    assert "slowest/mean" in lines[-1]


def test_suggest_shards_prints_one_number(cli):
    rc, out, err, fakes = cli("--costs", cli.costs, "--suggest-shards", "--target-wall", "70")
    assert rc == 0, err
    assert not fakes
    assert out.strip() == "2"  # topk (40 s) + a process start alone; the rest in the other


def test_suggest_shards_without_target_is_one_line_exit_2(cli):
    rc, out, err, _ = cli("--suggest-shards")
    assert rc == 2
    assert err.strip() == "zlbench batch: error: --suggest-shards needs --target-wall S"


def test_missing_costs_file_is_one_line_exit_2(cli, tmp_path):
    rc, _, err, fakes = cli("--costs", str(tmp_path / "none.csv"))
    assert rc == 2 and not fakes
    assert "no recorded durations" in err and len(err.strip().splitlines()) == 1


def test_a_replay_root_with_ops_status_balances_without_costs(cli, tmp_path):
    prev = str(tmp_path / "prev")
    rc, out, err, fakes = cli("--replay-root", prev, "--shard", "1/3", "--plan-only")
    assert rc == 0, err
    assert f"durations: {prev}" in out
    rows = [line.split() for line in out.splitlines()[2:5]]
    assert sorted(int(r[1]) for r in rows) == [1, 3, 4]  # topk alone; est. = 2 ops unrecorded
    assert sum(int(r[2]) for r in rows) == 2


def test_the_progress_header_forecasts_the_batch(cli):
    rc, out, err, _ = cli("--costs", cli.costs, "--gpus", "0")
    assert rc == 0, err
    # 66.1 s recorded + 2 ops at the median 6.1 s + one 23 s process start = 101.3 s
    assert (
        "expected: 8 op(s) on 1 GPU(s), about 1m41s by the recorded op seconds (2 op(s) estimated)"
    ) in out
    rc, out, err, _ = cli("--gpus", "0")
    assert (
        "expected: 8 op(s) on 1 GPU(s), about 39.0s by an estimate of 2.0s an op "
        "(no recorded durations)"
    ) in out
