"""``batch --gpu-share N``: N worker slots (pytest processes) per GPU, each given its
GPU and the GPU's turn file; gpu_turns.csv logs and sums the turns. Fake executor
runs, the CLI's range check, and one real batch over the benchpkg suite."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from benchpkg_batch import BENCHPKG, interpret_config

from tests.support.batch_fakes import FakeExecutor, batch_cli, batch_config_factory
from zlbench.errors import ZlbenchError
from zlbench.models import RunStatus, read_ops_status
from zlbench.protocol.turn import GPU_TURN_LOG_VAR, GPU_TURN_VAR, TURN_LOG_HEADER, GpuTurn
from zlbench.runner.batch.run import run_batch
from zlbench.runner.batch.turns import parse_turns, summarize_turns
from zlbench.runner.batch.workers import slot_gpus
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

OPS = ["abs", "add", "mul", "sub", "div", "exp", "log", "sin"]


@pytest.fixture
def setup(tmp_path):
    return batch_config_factory(tmp_path, OPS)


class TurnTakingExecutor(FakeExecutor):
    """Takes its GPU's turn (from the env it was given) around each op, as the
    benchmark processes do; records whether the turn file's directory existed."""

    def __call__(self, plan, *, env, on_op_done, **kw):
        turn = GpuTurn(env[GPU_TURN_VAR], env[GPU_TURN_LOG_VAR], env["CUDA_VISIBLE_DEVICES"])
        self.turn_dirs = [*getattr(self, "turn_dirs", []), Path(env[GPU_TURN_VAR]).parent]

        def done(entry, status, result):
            with turn.hold():
                on_op_done(entry, status, result)

        return super().__call__(plan, env=env, on_op_done=done, **kw)


def test_slot_gpus_gives_each_gpu_share_slots():
    assert slot_gpus(["0", "1"], 2) == {"0/1": "0", "0/2": "0", "1/1": "1", "1/2": "1"}
    assert slot_gpus(["4"], 3) == {"4/1": "4", "4/2": "4", "4/3": "4"}
    assert slot_gpus([""], 2) == {"/1": "", "/2": ""}
    for share in (1, 0):
        assert slot_gpus(["0", "1"], share) == {"0": "0", "1": "1"}


@pytest.mark.parametrize("share", [1, 2])
def test_a_gpu_listed_twice_is_refused_not_folded_into_one_worker(setup, share):
    fake = FakeExecutor()
    with pytest.raises(ZlbenchError, match="GPU list has duplicates: 0,1,0"):
        run_batch(setup(fake, gpus=["0", "1", "0"], gpu_share=share))
    assert fake.calls == []


def test_two_processes_per_gpu_share_the_gpus_turn_file(setup):
    fake = TurnTakingExecutor()
    cfg = setup(fake, gpus=["0", "1"], gpu_share=2)
    out = run_batch(cfg)
    assert out.exit_code == 0
    assert len(fake.calls) == 4  # one process slot each
    by_gpu: dict[str, list[dict]] = {}
    for call in fake.calls:
        by_gpu.setdefault(call["env"]["CUDA_VISIBLE_DEVICES"], []).append(call["env"])
    assert sorted(by_gpu) == ["0", "1"] and all(len(v) == 2 for v in by_gpu.values())
    turn_files = {}
    for gpu, envs in by_gpu.items():
        files = {env[GPU_TURN_VAR] for env in envs}
        assert len(files) == 1  # both slots of a GPU: one turn
        turn_files[gpu] = files.pop()
        assert all(env[GPU_TURN_LOG_VAR] == str(out.out_dir / "gpu_turns.csv") for env in envs)
    assert turn_files["0"] != turn_files["1"]
    assert not any(d.exists() for d in fake.turn_dirs)  # the turn files are gone after it
    # every op ran once, on the GPU of the slot that ran it, and says that GPU
    ran = Counter(e[0] for c in fake.calls for e in c["entries"])
    assert ran == Counter(OPS)
    gpu_of = {e[0]: c["env"]["CUDA_VISIBLE_DEVICES"] for c in fake.calls for e in c["entries"]}
    statuses = read_ops_status(out.out_dir / "ops_status.csv")
    assert sorted(s.run_name for s in statuses) == sorted(OPS)
    for s in statuses:
        assert s.status is RunStatus.PASS and s.attempts == 1
        assert s.gpu == gpu_of[s.run_name] and s.gpu in ("0", "1")
    assert json.loads((out.out_dir / "batch.json").read_text())["gpu_share"] == 2
    log = (out.out_dir / "gpu_turns.csv").read_text()
    assert log.splitlines()[0] == TURN_LOG_HEADER
    summary = summarize_turns(parse_turns(log))
    assert [(g.gpu, g.turns, g.overlaps) for g in summary] == [
        (gpu, sum(1 for g in gpu_of.values() if g == gpu), 0) for gpu in ("0", "1")
    ]
    text = cfg.progress.getvalue()
    assert "batch: 2 processes per GPU, timing in turns" in text
    assert "8 op(s) to run on 4 worker(s)" in text
    for g in summary:
        assert f"gpu turns: GPU {g.gpu}: 1 processes, {g.turns} turns" in text


def test_a_resumed_batch_appends_its_turns_and_sums_only_its_own(setup, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    old = [TURN_LOG_HEADER, "0,11,1000.0,1002.0,0.0", "0,12,1001.0,1003.0,0.5"]  # overlapping
    (out / "gpu_turns.csv").write_text("\n".join(old) + "\n")
    cfg = setup(TurnTakingExecutor(), gpus=["0"], gpu_share=2, resume=True)
    run_batch(cfg)
    lines = (out / "gpu_turns.csv").read_text().splitlines()
    assert lines[:3] == old and lines.count(TURN_LOG_HEADER) == 1
    assert len(parse_turns("\n".join(lines))) == 2 + len(OPS)
    text = cfg.progress.getvalue()
    assert f"gpu turns: GPU 0: 1 processes, {len(OPS)} turns," in text
    assert "0 overlapping" in text


def test_a_runner_error_in_a_shared_slot_names_the_gpu_not_the_slot(setup):
    fake = FakeExecutor({"add": ["BUG"]})
    out = run_batch(setup(fake, gpus=["0", "1"], gpu_share=2))
    st = {s.run_name: s for s in read_ops_status(out.out_dir / "ops_status.csv")}
    assert st["add"].status is RunStatus.ERROR and "runner bug" in st["add"].note
    assert all(s.gpu in ("0", "1") for s in st.values())
    assert sorted(st) == sorted(OPS)


def test_without_gpu_share_there_is_no_turn(setup):
    fake = FakeExecutor()
    cfg = setup(fake, gpus=["0", "1"])
    out = run_batch(cfg)
    assert out.exit_code == 0 and len(fake.calls) == 2
    for call in fake.calls:
        assert GPU_TURN_VAR not in call["env"] and GPU_TURN_LOG_VAR not in call["env"]
    assert not (out.out_dir / "gpu_turns.csv").exists()
    assert json.loads((out.out_dir / "batch.json").read_text())["gpu_share"] == 1
    assert "gpu turns:" not in cfg.progress.getvalue()


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    return batch_cli(tmp_path, monkeypatch, capsys, ["abs", "add", "mul"])


@pytest.mark.parametrize(
    "value,text",
    [("0", "--gpu-share 0: must be at least 1"), ("9", "--gpu-share 9: must be at most 8")],
)
def test_gpu_share_out_of_range_exits_2_with_one_line(cli, value, text):
    rc, out, err, fakes = cli("--all", "--gpus", "0", "--gpu-share", value)
    assert rc == 2
    assert err.startswith("zlbench batch: error: ") and err.count("\n") == 1
    assert text in err and "benchmark processes per GPU" in err
    assert fakes == []


def test_cli_gpus_with_a_duplicate_exits_2_with_one_line(cli):
    rc, out, err, fakes = cli("--all", "--gpus", "0,0", "--gpu-share", "2")
    assert rc == 2 and err.count("\n") == 1 and "GPU list has duplicates: 0,0" in err
    assert all(f.calls == [] for f in fakes)


def test_cli_gpu_share_reaches_the_batch(cli, tmp_path):
    rc, out, err, fakes = cli("--all", "--gpus", "0", "--gpu-share", "2")
    assert rc == 0, err
    assert len(fakes[0].calls) == 2
    assert all(c["env"][GPU_TURN_VAR].endswith("gpu-0.lock") for c in fakes[0].calls)
    info = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert info["gpu_share"] == 2


@pytest.mark.slow
def test_shared_gpu_batch_over_benchpkg_never_times_two_processes_at_once(tmp_path):
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    progress = io.StringIO()
    ops = ["add", "mm", "softmax", "sum"]
    out = run_batch(interpret_config(tmp_path, fg, ops, progress, gpu_share=2))
    text = progress.getvalue()
    assert out.exit_code == 0, text
    statuses = read_ops_status(out.out_dir / "ops_status.csv")
    assert sorted(s.run_name for s in statuses) == sorted(ops)
    assert all(s.status is RunStatus.PASS and s.rows > 0 for s in statuses), text
    log = (out.out_dir / "gpu_turns.csv").read_text()
    assert log.splitlines()[0] == TURN_LOG_HEADER
    turns = parse_turns(log)
    assert len({t.pid for t in turns}) >= 2
    (gpu,) = summarize_turns(turns)
    assert gpu.overlaps == 0 and gpu.processes >= 2 and gpu.turns >= 2 * len(ops)
    assert "2 processes per GPU" in text and "gpu turns:" in text


def test_every_process_is_told_the_share_it_runs_under(tmp_path):
    from zlbench.protocol.turn import GPU_SHARE_VAR

    config = batch_config_factory(tmp_path, ["a", "b", "c"])
    shared, alone = FakeExecutor(), FakeExecutor()
    run_batch(config(shared, gpus=["0"], gpu_share=3, out_dir=tmp_path / "s"))
    run_batch(config(alone, gpus=["0"], out_dir=tmp_path / "a"))
    assert {c["env"][GPU_SHARE_VAR] for c in shared.calls} == {"3"}
    assert {c["env"][GPU_SHARE_VAR] for c in alone.calls} == {"1"}


def test_a_batch_cannot_be_resumed_under_another_share(tmp_path):
    config = batch_config_factory(tmp_path, ["a", "b"])
    run_batch(config(FakeExecutor(), gpus=["0"], gpu_share=2))
    with pytest.raises(ZlbenchError, match="gpu_share=2, this run asks 1"):
        run_batch(config(FakeExecutor(), gpus=["0"], resume=True))


def test_cli_keep_failed_without_resume_exits_2_with_one_line(cli):
    rc, out, err, fakes = cli("--all", "--keep-failed")
    assert rc == 2 and err.count("\n") == 1 and "add --resume" in err
    assert all(f.calls == [] for f in fakes)
