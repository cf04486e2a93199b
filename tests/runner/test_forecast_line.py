"""The gate's progress header says where its forecast's seconds come from (issue 50
follow-up): the baseline's recorded seconds, the GPU model that recorded them and, on
another model, that they may undercount and that the done lines' ETA corrects itself.
Synthetic numbers; nvidia-smi faked."""

from __future__ import annotations

import io
import subprocess

import pytest

from zlbench.runner.batch import run as run_mod
from zlbench.runner.batch import shard as shard_mod
from zlbench.runner.batch.costs import OpCosts
from zlbench.runner.batch.forecast import expected_line

# 50 ops of the baseline's recorded seconds: 156 s + one 23 s process start = 2m59s
COSTS = OpCosts({f"main/op{i:02d}": 3.12 for i in range(50)}, frozenset(f"main/op{i:02d}"
                for i in range(47)))  # fmt: skip
HEAD = "expected: 50 op(s) on 1 GPU(s), about 2m59s by the baseline's recorded seconds "


def line(**kw) -> str:
    return expected_line(COSTS, 1, source="the baseline's", **kw)


def test_the_seconds_are_said_to_be_the_baselines_and_where_they_were_recorded():
    assert line() == HEAD + "(3 op(s) estimated)"
    same = line(recorded_on="NVIDIA H200", runner_gpu="nvidia  H200")
    assert same == HEAD + "(3 op(s) estimated; recorded on NVIDIA H200, this runner's GPU model)"


def test_another_gpu_model_is_said_to_undercount_and_the_eta_to_correct_itself():
    other = line(recorded_on="NVIDIA H200", runner_gpu="NVIDIA H100 80GB HBM3")
    assert other == HEAD + (
        "(3 op(s) estimated; recorded on NVIDIA H200, this runner has NVIDIA H100 80GB HBM3: "
        "they may undercount (an op up to 1.6x seen on an H100), the done lines' ETA "
        "corrects itself from the ops measured)"
    )
    unknown = line(recorded_on="NVIDIA H200")
    assert "recorded on NVIDIA H200: another GPU model may take longer" in unknown
    assert "ETA corrects itself" in unknown
    for text in (other, unknown):
        assert "\n" not in text  # one line


def test_without_recorded_seconds_the_estimate_is_named():
    costs = OpCosts({"main/a": 2.0, "main/b": 2.0}, frozenset())
    assert expected_line(costs, 1) == (
        "expected: 2 op(s) on 1 GPU(s), about 27.0s by an estimate of 2.0s an op "
        "(no recorded durations)"
    )


def fake_smi(monkeypatch, stdout: str = "", rc: int = 0, hang: bool = False) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(argv, **kw):
        calls.append(argv)
        if hang:
            raise subprocess.TimeoutExpired(argv, kw.get("timeout"))
        return subprocess.CompletedProcess(argv, rc, stdout=stdout, stderr="")

    monkeypatch.setattr(shard_mod.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(shard_mod.subprocess, "run", run)
    return calls


def test_the_runners_gpu_model_comes_from_nvidia_smi_or_is_not_known(monkeypatch):
    calls = fake_smi(monkeypatch, "NVIDIA H100 80GB HBM3\n")
    assert shard_mod.gpu_model("1") == "NVIDIA H100 80GB HBM3"
    assert calls[0][-2:] == ["-i", "1"]
    assert shard_mod.gpu_model("") is None  # no GPU named: not asked
    fake_smi(monkeypatch, rc=9)
    assert shard_mod.gpu_model("0") is None
    fake_smi(monkeypatch, hang=True)
    assert shard_mod.gpu_model("0") is None
    monkeypatch.setattr(shard_mod.shutil, "which", lambda name: None)
    assert shard_mod.gpu_model("0") is None


@pytest.mark.parametrize(("recorded", "asked"), [("NVIDIA H200", True), (None, False)])
def test_the_batch_asks_the_runners_gpu_only_when_the_seconds_name_theirs(
    monkeypatch, recorded, asked
):
    asks: list[str] = []
    monkeypatch.setattr(run_mod, "gpu_model", lambda gpu: asks.append(gpu) or "NVIDIA H100")

    class Config:  # the fields forecast_line reads
        gpus, per_process, progress = ["3"], None, io.StringIO()
        durations_source, durations_gpu = "the baseline's", recorded

    text = run_mod.forecast_line(Config(), COSTS)  # type: ignore[arg-type]
    assert asks == (["3"] if asked else [])
    assert ("this runner has NVIDIA H100" in text) == asked


def test_an_interleaved_ab_sides_costs_count_both_sides_turns():
    """One side of an interleaved A/B shares each GPU's turn with the other side's
    process: its ops take AB_SIDE_FACTOR times their recorded seconds (an H100,
    2026-12-06: 1.56-1.57 over 14 ops). Any other batch: as recorded."""
    from pathlib import Path

    from zlbench.protocol.pairs import AB_SIDE_FACTOR
    from zlbench.runner.batch.costs import OpCosts

    costs = OpCosts({"main/a": 3.0, "main/b": 30.0}, frozenset({"main/a"}))

    class Config:  # the field turn_costs reads
        pair_dir = None

    assert run_mod.turn_costs(Config(), costs) is costs  # type: ignore[arg-type]
    Config.pair_dir = Path("pairs")
    both = run_mod.turn_costs(Config(), costs)  # type: ignore[arg-type]
    assert both.seconds == {"main/a": 3.0 * AB_SIDE_FACTOR, "main/b": 30.0 * AB_SIDE_FACTOR}
    assert both.recorded == costs.recorded and 1 < AB_SIDE_FACTOR < 2  # turns, not sums
