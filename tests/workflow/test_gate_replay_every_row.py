"""`zlbench gate --time all --replay` replays every captured row, changed or not (the
replay's own A/A, and a nightly run); `--time changed` only the changed rows: the gate's
replay step hands the time mode to the replay (zlbench.workflow.gate.replay_step), with
its rebuild workers and the screen's shared caches (the PR's, and the base's when the
screen's base rebuild put kernels in it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import zlbench.runner.batch.shard as shard
import zlbench.runner.replay as replay_mod
from zlbench.models import ReplayRun
from zlbench.runner.batch.forecast import where_recorded
from zlbench.runner.replay import ReplayOutcome
from zlbench.workflow.gate import replay_step


@pytest.mark.parametrize("time, every_row", [("all", True), ("changed", False)])
def test_the_time_mode_decides_whether_unchanged_rows_are_replayed(
    tmp_path, monkeypatch, time, every_row
):
    seen = {}

    def fake_replay(**kw):
        seen.update(kw)
        return ReplayOutcome(run=ReplayRun(), replayed_ops={"main/a"})

    monkeypatch.setattr(replay_mod, "replay_changed", fake_replay)
    monkeypatch.setattr(replay_mod, "families_of", lambda baseline, ops_dir: {})
    asked = []  # the runner's GPU model, as the batch asks nvidia-smi (here: no GPU needed)
    monkeypatch.setattr(shard, "count_visible_gpus", lambda: 1)
    monkeypatch.setattr(shard, "gpu_model", lambda gpu: asked.append(gpu) or "NVIDIA H100")
    (tmp_path / "sentinels.txt").write_text("a\n", encoding="utf-8")  # the gate's sentinels
    inputs = SimpleNamespace(
        baseline=SimpleNamespace(
            ops={"main/a": SimpleNamespace(op="a"), "main/b": SimpleNamespace(op="b")},
            path=tmp_path,
            manifest=SimpleNamespace(gpu_model="NVIDIA H200", summary={}, ops=["main/a", "main/b"]),
        ),
        ab=SimpleNamespace(base=object()),
    )
    job = SimpleNamespace(
        flaggems_dirs={}, time_budget_s=None, codegen_jobs=7, argv=["zlbench", "gate"], time=time,
        selection=SimpleNamespace(ops_dir=tmp_path), cuda_visible_devices=None,
        replay_part=(2, 3), replayed=(), replay_l2=None, kernel_cache=None,
    )  # fmt: skip
    codegen = SimpleNamespace(
        screen=object(), sentinel_only=set(), summary=SimpleNamespace(over_budget={})
    )
    seams = SimpleNamespace(say=lambda line: None)
    measured, judged, picks = replay_step(
        inputs, job, tmp_path, seams, codegen, {"main/a", "main/b"}, None, tmp_path / "c"
    )
    assert seen["every_row"] is every_row and seen["jobs"] == 7
    assert (seen["part"], seen["parts"]) == ((2, 3), ())  # --replay-part, --replayed
    assert seen["pr_cache"] == tmp_path / "c"  # the screen's compiled kernels
    # the forecast says whose GPU model recorded the op path's seconds
    assert seen["recorded_on"] == where_recorded("NVIDIA H200", "NVIDIA H100") and asked == ["0"]
    # and the rows' costs are scaled from the recorder's GPU model to the runner's
    assert (seen["recorded_gpu"], seen["runner_gpu"]) == ("NVIDIA H200", "NVIDIA H100")
    assert measured == {"main/b"} and judged == {"main/a", "main/b"} and picks == {}
    # the gate's sentinels stay on the op path: with --time all the plan names none (every
    # op is timed, none as a sentinel), so the step reads ops/sentinels.txt itself
    assert seen["timed_anyway"] == ({"main/a"} if time == "all" else set())
    # the base side builds where the screen's base rebuild put its kernels: only when it
    # put some there (the base-screen cache may have spared the rebuild)
    base = tmp_path / "base-cache"
    base.mkdir()
    args = (inputs, job, tmp_path, seams, codegen, {"main/a", "main/b"}, None, tmp_path / "c")
    replay_step(*args, base)
    assert seen["base_cache"] is None
    (base / "key").mkdir()
    (base / "key" / "__grp__k.json").write_text("{}")
    replay_step(*args, base)
    assert seen["base_cache"] == base
    # a capture version whose op seconds an H100's batch replaced keeps the rows' H200
    # latencies: the rows' costs still scale from the H200
    inputs.baseline.manifest.summary = {
        "captures": {"durations": 2, "durations_gpu": "NVIDIA H100"}
    }
    replay_step(*args, base)
    assert seen["recorded_gpu"] == "NVIDIA H200"
