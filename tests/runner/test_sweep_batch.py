"""`batch` / `baseline refresh` with --sweep-gpus (docs/design.md §5.16): each op of a
record batch is swept by real child processes (a scripted stand-in for pytest),
merged, and measured once by the batch's executor (a fake) on the first GPU."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.support.batch_fakes import FakeExecutor, fake_sweep_children, make_inventory
from zlbench.cli import main
from zlbench.models import RunResult, RunStatus, load_json_model, read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.run import run_batch

# Stand-in for `python -m pytest` in a sweep child: shard k of n writes its record,
# its shard winner (shard 0 is the fastest) and result.json; op "bad" fails on shard 1.
CHILD = r"""
import json, os, sys
argv = sys.argv
plan = json.load(open(argv[argv.index("--zl-plan") + 1]))
k, n = map(int, argv[argv.index("--zl-sweep-shard") + 1].split("/"))
out = argv[argv.index("--zl-sweep-out") + 1]
print("CVD_PROBE=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"), flush=True)
(entry,) = plan["entries"]
run_dir, name = entry["run_dir"], entry["run_name"]
print(f"ZLBENCH_OP_BEGIN run_name={name}", flush=True)
cfg = {"kwargs": {"B": 16 * (k + 1)}, "num_warps": 4}
os.makedirs(os.path.join(run_dir, "autotune_records"), exist_ok=True)
record = {"k:tuned": {"[1]": cfg}, "k:single": {"[1]": {"kwargs": {}, "num_warps": 1}}}
json.dump(record, open(os.path.join(run_dir, "autotune_records", name + ".json"), "w"))
json.dump({"k:tuned": {"[1]": {"config": cfg, "ms": 1.0 + k}}}, open(out, "w"))
status = "FAIL" if entry["op"] == "bad" and k == 1 else "PASS"
result = {"schema_version": 1, "kind": "run", "repo": "main", "run_name": name,
          "op": entry["op"], "status": status, "mode": "record", "timing": "kernel"}
json.dump(result, open(os.path.join(run_dir, "result.json"), "w"))
print(f"ZLBENCH_OP_END run_name={name} status={status}", flush=True)
sys.exit(1 if status == "FAIL" else 0)
"""


@pytest.fixture
def fake_children(tmp_path, monkeypatch) -> None:
    fake_sweep_children(tmp_path, monkeypatch, CHILD)


def _config(tmp_path: Path, ops: list[str], **kw) -> BatchConfig:
    make_inventory(tmp_path / "ops", "main", ["abs", "add", "bad"])
    (tmp_path / "fg").mkdir(exist_ok=True)
    return BatchConfig(
        out_dir=tmp_path / "out",
        flaggems_dirs={"main": tmp_path / "fg"},
        ops_dir=tmp_path / "ops",
        ops=ops,
        gpus=["7"],
        max_retries=0,
        progress=io.StringIO(),
        **kw,
    )


def test_record_batch_sweeps_each_op_then_measures_on_the_first_gpu(tmp_path, fake_children):
    fake = FakeExecutor()
    config = _config(tmp_path, ["abs", "add", "bad"], executor=fake, sweep_gpus=["0", "1"])
    outcome = run_batch(config)
    out = outcome.out_dir
    st = {s.run_name: s for s in read_ops_status(out / "ops_status.csv")}

    # measured: one op per call, on GPU 0, replaying the op's merged record ("bad":
    # its failed sweep fell back to one record process)
    assert sorted(c["entries"] for c in fake.calls) == [
        [(op, (), "replay", str(out / "main" / op / "autotune_records"))] for op in ("abs", "add")
    ] + [[("bad", (), "record", None)]]
    assert {c["gpu"] for c in fake.calls} == {"0"}
    for op in ("abs", "add"):
        run_dir = out / "main" / op
        for k in (0, 1):
            assert f"CVD_PROBE={k}" in (run_dir / "sweep" / f"shard-{k}.log").read_text()
        merged = json.loads((run_dir / "autotune_records" / f"{op}.json").read_text())["kernels"]
        assert merged == {
            "k:single": {"[1]": {"kwargs": {}, "num_warps": 1}},
            "k:tuned": {"[1]": {"kwargs": {"B": 16}, "num_warps": 4}},  # shard 0 was faster
        }
        trust = json.loads((run_dir / "sweep" / "trust.json").read_text())
        assert (trust["keys"], trust["differing"], trust["close"]) == (1, 1, 0)
        assert load_json_model(run_dir / "result.json", RunResult).mode == "record"
        assert st[op].status is RunStatus.PASS and st[op].gpu == "0"
        assert "configs from a 2-GPU sweep (0,1): keys=1 differing=1 close=0" in st[op].note
    assert "main/add ZLBENCH_SWEEP keys=1 differing=1 close=0" in config.progress.getvalue()

    # a failing child costs the sweep, not the op: recorded serially on GPU 0 (issue 30)
    assert st["bad"].status is RunStatus.PASS and st["bad"].gpu == "0"
    assert "sweep child 1/2 (GPU 1): FAIL (see sweep/shard-1.log): fell back to a serial " in (
        st["bad"].note
    )
    assert "CVD_PROBE=1" in (out / "main" / "bad" / "sweep" / "shard-1.log").read_text()
    assert outcome.exit_code == 0


def test_a_failing_sweep_child_then_a_failing_serial_sweep_fails_the_op(tmp_path, fake_children):
    fake = FakeExecutor({"bad": ["FAIL"]})
    outcome = run_batch(_config(tmp_path, ["bad"], executor=fake, sweep_gpus=["0", "1"]))
    (st,) = read_ops_status(outcome.out_dir / "ops_status.csv")
    # (then the record-mode dtype rescue sweeps again, and falls back again)
    assert {c["gpu"] for c in fake.calls} == {"0"}
    assert {c["entries"][0][2] for c in fake.calls} == {"record"}
    assert st.status is RunStatus.FAIL and "fell back to a serial sweep on GPU 0" in st.note
    assert outcome.exit_code == 2  # nothing measured


def test_replay_batch_ignores_sweep_gpus(tmp_path, fake_children):
    (tmp_path / "rec").mkdir()
    fake = FakeExecutor()
    config = _config(
        tmp_path, ["abs"], executor=fake, sweep_gpus=["0", "1"], replay_root=tmp_path / "rec"
    )
    outcome = run_batch(config)
    assert [c["gpu"] for c in fake.calls] == ["7"]  # the batch's own GPUs: no sweep
    assert not (outcome.out_dir / "main" / "abs" / "sweep").exists()


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    make_inventory(tmp_path / "ops", "main", ["abs"])
    (tmp_path / "fg").mkdir()
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path / "fg"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return ["--ops-dir", str(tmp_path / "ops"), "--ops", "abs"]


def test_batch_sweep_with_replay_root_is_one_line_exit_2(tmp_path, cli_env, capsys):
    rc = main(["batch", *cli_env, "--sweep-gpus", "0,1", "--replay-root", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--replay-root" in err[0], err


def test_refresh_passes_sweep_gpus_to_its_batch(tmp_path, cli_env, monkeypatch):
    from zlbench.runner import refresh

    seen = []

    def fake_refresh(cfg):
        seen.append(cfg)
        raise KeyboardInterrupt  # stop here: only the plumbing is checked

    monkeypatch.setattr(refresh, "refresh", fake_refresh)
    argv = ["baseline", "refresh", "--out", str(tmp_path / "v9"), *cli_env]
    assert main([*argv, "--sweep-gpus", "2,3"]) == 130
    assert seen[0].batch.sweep_gpus == ["2", "3"] and seen[0].batch.replay_root is None
