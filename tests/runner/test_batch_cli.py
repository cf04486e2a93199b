"""`zlbench batch` argv -> BatchConfig -> exit code; bad input is one line and exit 2."""

from __future__ import annotations

import pytest

from tests.support.batch_fakes import batch_cli


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    ops = ["abs", "add", "mm@test_mm.py", "mm@test_bmm.py"]
    return batch_cli(tmp_path, monkeypatch, capsys, ops, script={"add": ["TIMEOUT"]})


def test_batch_ok(cli, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    rc, out, err, fakes = cli(
        "--ops",
        "abs",
        "mm@test_mm.py",
        "--per-process",
        "1",
        "--op-timeout",
        "30",
        "--dtypes",
        "bfloat16",
    )
    assert rc == 0, err
    assert sorted(c["gpu"] for c in fakes[0].calls) == ["3", "5"]  # one op per GPU
    assert all(c["per_process"] == 1 and c["op_timeout_s"] == 30 for c in fakes[0].calls)
    entries = [e for c in fakes[0].calls for e in c["entries"]]
    assert sorted(name for name, *_ in entries) == ["abs", "mm__at__test_mm.py"]
    assert all(dtypes == ("bfloat16",) for _, dtypes, *_ in entries)  # --dtypes reached the plan
    assert "[2/2] PASS" in out and "batch dir:" in out


def test_batch_failed_op_exits_1(cli):
    rc, out, err, fakes = cli("--all", "--gpus", "0")
    assert rc == 1
    assert "TIMEOUT main/add" in out
    assert {c["gpu"] for c in fakes[0].calls} == {"0"}


@pytest.mark.parametrize(
    "argv,text",
    [
        (["--all", "--shard", "0/3"], "bad shard spec '0/3': K must be between 1 and 3"),
        (["--all", "--shard", "4/3"], "bad shard spec '4/3': K must be between 1 and 3"),
        (["--all", "--shard", "x"], "bad shard spec 'x'"),
        (["--ops", "nosuch"], "unknown op 'nosuch'"),
        (["--ops", "mm"], "ambiguous"),
        (["--ops", "abs", "--repos", "vllm"], "inventory_vllm.csv is missing"),
        (["--ops", "abs", "--per-process", "0"], "--per-process 0"),
        (["--ops", "abs", "--gpus", ","], "bad GPU list"),
        (["--ops", "abs", "--flaggems-dir", "x=y"], "unknown repo 'x'"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, argv, text):
    rc, out, err, fakes = cli(*argv)
    assert rc == 2
    assert err.startswith("zlbench batch: error: ") and err.count("\n") == 1
    assert text in err
    assert fakes == []


def test_empty_ops_file(cli, tmp_path):
    f = tmp_path / "ops.txt"
    f.write_text("# nothing\n\n")
    rc, _, err, _ = cli("--ops-file", str(f))
    assert rc == 2 and "empty selection" in err


def test_ops_file_with_comments(cli, tmp_path):
    f = tmp_path / "ops.txt"
    f.write_text("# core\nabs  # cheap\n\nmm@test_bmm.py\n")
    rc, out, _, fakes = cli("--ops-file", str(f))
    assert rc == 0
    names = sorted(e[0] for c in fakes[0].calls for e in c["entries"])
    assert names == ["abs", "mm__at__test_bmm.py"]


def test_missing_flaggems_dir(cli, monkeypatch):
    monkeypatch.delenv("ZLBENCH_FLAGGEMS_DIR")
    rc, _, err, _ = cli("--ops", "abs")
    assert rc == 2 and err.strip() == (
        "zlbench batch: error: no FlagGems checkout given: pass --flaggems-dir DIR or set "
        "ZLBENCH_FLAGGEMS_DIR"
    )


def test_recheck_dismissed_runs_left_out_ops_and_op_timeout_zero_is_no_limit(cli, tmp_path):
    (tmp_path / "ops" / "dismiss.txt").write_text("abs  # 2025-01-01 flaky\n")
    rc, out, err, fakes = cli("--ops", "abs", "add", "--gpus", "0")
    assert "abs" not in [name for c in fakes[-1].calls for name, *_ in c["entries"]]
    rc, out, err, fakes = cli("--ops", "abs", "--recheck-dismissed", "--op-timeout", "0")
    assert rc == 0, err
    assert [name for c in fakes[-1].calls for name, *_ in c["entries"]] == ["abs"]
    assert fakes[-1].calls[0]["op_timeout_s"] is None


def test_resume_without_out_is_refused(tmp_path, monkeypatch, capsys):
    # issue 30: the seed refused it; starting a new batch under runs/ was a surprise
    from tests.support.batch_fakes import make_inventory
    from zlbench.cli import main

    make_inventory(tmp_path / "ops", "main", ["abs"])
    (tmp_path / "fg").mkdir()
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path / "fg"))
    monkeypatch.chdir(tmp_path)
    rc = main(["batch", "--ops-dir", "ops", "--ops", "abs", "--resume"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "--resume continues a batch dir: name it with --out DIR" in err
    assert not (tmp_path / "runs").exists()


def test_default_op_timeout_is_longer_when_recording(cli, tmp_path):
    # issue 30: first FlagTune sweeps ran 10+ minutes; a replay keeps 900 s
    rc, _, err, fakes = cli("--ops", "abs", "--gpus", "0")
    assert rc == 0, err
    assert fakes[-1].calls[0]["op_timeout_s"] == 1800
    rc, _, err, fakes = cli("--ops", "abs", "--gpus", "0", "--replay-root", str(tmp_path / "out"))
    assert fakes[-1].calls[0]["op_timeout_s"] == 900
    assert fakes[-1].calls[0]["entries"][0][2] == "replay"
