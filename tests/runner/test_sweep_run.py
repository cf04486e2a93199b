"""Multi-GPU sweep through the runner (docs/design.md §5.16): `zlbench run --sweep-gpus`
end to end on the small suite (tests/benchpkg, Triton interpreter on CPU), the
merge of child records, argument checks, and children killed on interrupt."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import MarkerKind, RunResult, load_json_model
from zlbench.runner.execute.proc import _group_alive as group_alive
from zlbench.runner.sweep import children as sweep_children
from zlbench.runner.sweep.children import Child, run_group
from zlbench.runner.sweep.run import check_sweep_gpus, merge_children

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"

# A pytest plugin the children load: shows the CUDA_VISIBLE_DEVICES each one saw.
PROBE = """
import os

def pytest_configure(config):
    print(f"CVD_PROBE={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}", flush=True)
"""


@pytest.fixture
def suite(tmp_path: Path, monkeypatch) -> Path:
    dest = tmp_path / "benchpkg"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(BENCHPKG, dest, ignore=ignore)
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "cvd_probe.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(probe))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    addopts = "--iter 1 --zl-replays 2 --zl-warmup-ms 1 -p cvd_probe"
    monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.chdir(tmp_path)
    return dest


@pytest.mark.slow
def test_run_sweep_two_gpus_merges_and_measures_by_replay(suite, tmp_path, capsys):
    shapes = str(suite / "benchmark" / "core_shapes.yaml")
    argv = ["run", "--op", "softmax", "--flaggems-dir", str(suite), "--mode", "kernel"]
    rc = main([*argv, "--shape-file", shapes, "--sweep-gpus", "0,1"])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    run_dir = tmp_path / "runs" / "softmax"
    sweep = run_dir / "sweep"

    # two children, each on its own GPU, each writing its shard of the sweep
    for k in (0, 1):
        log = (sweep / f"shard-{k}.log").read_text()
        assert f"CVD_PROBE={k}" in log
        assert "ZLBENCH_AUTOTUNE run_name=softmax mode=record" in log
        assert json.loads((sweep / f"shard-{k}.json").read_text())
    assert "[sweep 1/2 gpu=1]" in out.out

    # softmax has 2 shapes in the shape file: the cost model deals shapes (issue 30), each
    # child runs its row part with every config; the merged record is every key of
    # every child, each key tuned by one child only (picked on one GPU's timings)
    merged = json.loads((run_dir / "autotune_records" / "softmax.json").read_text())["kernels"]
    assert merged
    keys_of = []
    for k in (0, 1):
        child_file = sweep / f"shard-{k}" / "autotune_records" / "softmax.json"
        child = json.loads(child_file.read_text())["kernels"]
        keys_of.append({(kn, key) for kn, keys in child.items() for key in keys})
    assert keys_of[0] and keys_of[1] and not keys_of[0] & keys_of[1]
    assert keys_of[0] | keys_of[1] == {(kn, key) for kn, keys in merged.items() for key in keys}
    trust = json.loads((sweep / "trust.json").read_text())
    nkeys = sum(len(keys) for keys in merged.values())
    assert trust["keys"] == nkeys and trust["differing"] == trust["close"] == 0
    assert trust["measured"]["deal"] == {"shapes": 2, "configs": 1}
    assert [c["gpu"] for c in trust["children"]] == ["0", "1"]
    line = f"ZLBENCH_SWEEP keys={nkeys} differing={trust['differing']} close={trust['close']}"
    assert line in out.out

    # the measurement: one process on the first GPU, replaying the merged record
    log = (run_dir / "run.log").read_text()
    assert "CVD_PROBE=0" in log and "CVD_PROBE=1" not in log
    assert "mode=replay" in log and "bench_calls=0" in log
    assert "AUTOTUNE_REPLAY_FALLBACK" not in log and log.rstrip().endswith(line)
    assert trust["measured"]["replay_fallbacks"] == 0 and trust["measured"]["gpu"] == "0"
    res = load_json_model(run_dir / "result.json", RunResult)
    assert (res.status.value, res.mode, res.replay_from) == ("PASS", "record", None)
    assert res.rows and not [m for m in res.markers if m.kind is MarkerKind.REPLAY_FALLBACK]
    assert "configs from a 2-GPU sweep (0,1, shapes dealt 2 way(s) x configs 1)" in out.out


def test_sweep_with_replay_from_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    argv = ["run", "--op", "softmax", "--flaggems-dir", str(BENCHPKG)]
    rc = main([*argv, "--sweep-gpus", "0,1", "--replay-from", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--replay-from" in err[0], err
    assert not (tmp_path / "runs").exists()


def test_sweep_gpus_must_be_inside_inherited_visible_devices(capsys, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    rc = main(["run", "--op", "softmax", "--flaggems-dir", str(BENCHPKG), "--sweep-gpus", "0,5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "0 not in the inherited" in err[0], err
    assert check_sweep_gpus(["5", "4"], "4,5") == ["5", "4"]
    assert check_sweep_gpus(["7"], None) == ["7"]
    with pytest.raises(ZlbenchError, match="duplicate"):
        check_sweep_gpus(["1", "1"], None)


def _cfg(b: int) -> dict:
    return {"kwargs": {"B": b}, "num_warps": 4}


def test_merge_keeps_untimed_child_keys_and_overlays_shard_winners():
    single = {"single:k": {"[8]": _cfg(1)}}
    records = [{**single, "tuned:k": {"[8]": _cfg(16)}}, {**single, "tuned:k": {"[8]": _cfg(32)}}]
    shards = [
        {"tuned:k": {"[8]": {"config": _cfg(16), "ms": 2.0}}},
        {"tuned:k": {"[8]": {"config": _cfg(32), "ms": 1.0}}},
    ]
    merged, stats = merge_children(records, shards)
    assert merged == {"single:k": {"[8]": _cfg(1)}, "tuned:k": {"[8]": _cfg(32)}}
    assert (stats.keys, stats.differing, stats.close) == (1, 1, 0)


def _child(tmp_path: Path, k: int, code: str) -> Child:
    argv = [sys.executable, "-c", code]
    return Child(k, 2, str(k), argv, dict(os.environ), log=tmp_path / f"shard-{k}.log")


def test_interrupt_kills_every_child_group(tmp_path, monkeypatch):
    # each child starts a grandchild in its group: killing the group must reach it too
    code = "import subprocess, time; subprocess.Popen(['sleep', '60']); print('up', flush=True)"
    children = [_child(tmp_path, k, code + "; time.sleep(60)") for k in (0, 1)]
    calls = []

    def interrupt():  # once both children (and their grandchildren) are up
        calls.append(1)
        logs = [tmp_path / f"shard-{k}.log" for k in (0, 1)]
        if all(p.is_file() and "up" in p.read_text() for p in logs) or len(calls) > 400:
            raise KeyboardInterrupt
        time.sleep(0.02)

    monkeypatch.setattr(sweep_children, "_pause", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_group(children, grace_s=2)
    for child in children:
        assert child.rc is not None and child.rc < 0
        # no live member left in its group (the killed grandchild may linger as a
        # zombie until init reaps it)
        assert not group_alive(child.proc.pid)


def test_children_run_together_and_keep_their_logs(tmp_path):
    children = [
        _child(tmp_path, k, f"print('hello {k}'); raise SystemExit({k * 3})") for k in (0, 1)
    ]
    lines: list[str] = []
    run_group(children, sink=lines.append)
    assert [c.rc for c in children] == [0, 3]
    assert (tmp_path / "shard-1.log").read_text() == "hello 1\n"
    assert "[sweep 1/2 gpu=1] hello 1" in lines


def test_timeout_kills_a_child_and_marks_it(tmp_path):
    children = [_child(tmp_path, 0, "import time; time.sleep(60)")]
    run_group(children, timeout_s=0.5, grace_s=1)
    assert children[0].timed_out and children[0].rc is not None and children[0].rc < 0
