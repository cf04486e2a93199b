"""--reuse-tuning-db (issue 30 item 5): a record run may keep FlagGems' persistent
tuning DB instead of a fresh one per process; off by default, refused by baseline
refresh, with a replay and with a sweep, and recorded in batch.json."""

from __future__ import annotations

import io

import pytest

from tests.support.batch_fakes import FakeExecutor, batch_cli, batch_config_factory
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.runner import run as run_mod
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.run import run_batch
from zlbench.runner.execute.worker import REUSE_TUNING_DB, process_env
from zlbench.runner.refresh import RefreshConfig, refresh
from zlbench.runner.run import RunRequest, prepare

DB_VARS = ("FLAGGEMS_CACHE_DIR", "FLAGGEMS_DB_URL")


def test_each_process_gets_a_fresh_db_unless_reuse_is_asked(tmp_path):
    base = {"FLAGGEMS_DB_URL": "sqlite:////home/u/tuned.db"}
    fresh = process_env(base, flaggems_dir=tmp_path, tmp_dir=tmp_path / "p1")
    assert (
        fresh["FLAGGEMS_DB_URL"] == f"sqlite:///{tmp_path / 'p1' / 'flaggems_cache'}/TunedConfig.db"
    )
    assert fresh["FLAGGEMS_CACHE_DIR"] == str(tmp_path / "p1" / "flaggems_cache")
    kept = process_env({**base, REUSE_TUNING_DB: "1"}, flaggems_dir=tmp_path, tmp_dir=tmp_path)
    assert kept["FLAGGEMS_DB_URL"] == "sqlite:////home/u/tuned.db"
    assert "FLAGGEMS_CACHE_DIR" not in kept  # FlagGems' default (~/.flaggems) applies
    assert kept["TRITON_CACHE_DIR"] == str(tmp_path / "triton_cache")  # still per process


@pytest.fixture
def config(tmp_path):
    return batch_config_factory(tmp_path, ["abs", "add"])


def test_a_record_batch_passes_it_on_and_records_it(config, monkeypatch):
    monkeypatch.setenv(REUSE_TUNING_DB, "1")  # inherited from a shell: not this batch's choice
    fake = FakeExecutor()
    out = run_batch(config(fake))
    assert all(REUSE_TUNING_DB not in c["env"] for c in fake.calls)
    assert read_batch_info(out.out_dir).reuse_tuning_db is False
    fake = FakeExecutor()
    out = run_batch(config(fake, reuse_tuning_db=True, out_dir=out.out_dir.parent / "r"))
    assert [c["env"][REUSE_TUNING_DB] for c in fake.calls] == ["1"]
    assert read_batch_info(out.out_dir).reuse_tuning_db is True


def test_a_replay_never_reuses_it(config, tmp_path):
    (tmp_path / "records").mkdir()
    fake = FakeExecutor()
    out = run_batch(config(fake, reuse_tuning_db=True, replay_root=tmp_path / "records"))
    assert all(REUSE_TUNING_DB not in c["env"] for c in fake.calls)
    assert read_batch_info(out.out_dir).reuse_tuning_db is False


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    return batch_cli(tmp_path, monkeypatch, capsys, ["abs"])


def test_batch_flag_is_off_by_default_and_reaches_the_processes(cli):
    rc, _, err, fakes = cli("--ops", "abs", "--gpus", "0")
    assert rc == 0, err
    assert REUSE_TUNING_DB not in fakes[-1].calls[0]["env"]
    rc, _, err, fakes = cli("--ops", "abs", "--gpus", "0", "--reuse-tuning-db")
    assert rc == 0, err
    assert fakes[-1].calls[0]["env"][REUSE_TUNING_DB] == "1"


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["--replay-root", "r"], "--reuse-tuning-db is for record runs; --replay-root pins"),
        (["--sweep-gpus", "0,1"], "--reuse-tuning-db cannot be combined with --sweep-gpus"),
    ],
)
def test_batch_refuses_it_with_a_replay_or_a_sweep(cli, argv, text):
    rc, _, err, fakes = cli("--ops", "abs", "--reuse-tuning-db", *argv)
    assert rc == 2 and err.count("\n") == 1 and text in err
    assert not fakes


def test_baseline_refresh_refuses_it_and_says_why(tmp_path, capsys):
    batch = BatchConfig(
        out_dir=tmp_path / "w", flaggems_dirs={}, ops_dir=tmp_path, reuse_tuning_db=True
    )
    with pytest.raises(ZlbenchError, match="a baseline is recorded from a cold tuning DB"):
        refresh(RefreshConfig(out=tmp_path / "v9", batch=batch, batch_runner=pytest.fail))
    argv = ["baseline", "refresh", "--out", str(tmp_path / "v9"), "--ops", "abs"]
    assert main([*argv, "--ops-dir", str(tmp_path), "--reuse-tuning-db"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cold tuning DB" in err
    assert not (tmp_path / "v9").exists()


def test_refresh_from_work_refuses_a_record_pass_that_reused_it(config, tmp_path):
    work = tmp_path / "work"
    run_batch(config(FakeExecutor(), reuse_tuning_db=True, out_dir=work / "record"))
    run_batch(config(FakeExecutor(), replay_root=work / "record", out_dir=work / "replay-1"))
    batch = BatchConfig(
        out_dir=tmp_path / "x", flaggems_dirs={}, ops_dir=tmp_path / "ops", all_ops=True
    )
    cfg = RefreshConfig(out=tmp_path / "v9", batch=batch, repeats=1, from_work=work,
                        progress=io.StringIO())  # fmt: skip
    with pytest.raises(ZlbenchError, match="record: recorded with --reuse-tuning-db"):
        refresh(cfg)


def test_help_says_off_by_default_and_why_refresh_refuses_it(capsys):
    for argv in (["batch", "--help"], ["baseline", "refresh", "--help"], ["run", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert "--reuse-tuning-db" in text and "off by default" in text
        assert "Refused by baseline refresh (a baseline holds what the compiler" in text


def test_run_passes_it_on_in_record_mode_and_refuses_it_with_a_replay(tmp_path, monkeypatch):
    bench = tmp_path / "fg" / "benchmark"
    bench.mkdir(parents=True)
    (bench / "test_ok.py").write_text(
        "import pytest\n\n@pytest.mark.ok\ndef test_ok():\n    pass\n"
    )
    seen = []
    monkeypatch.setattr(run_mod, "execute_plan", lambda plan, **kw: seen.append(kw["env"]) or [0])
    req = RunRequest(op="ok", flaggems_dir=str(tmp_path / "fg"), out=str(tmp_path / "r"),
                     reuse_tuning_db=True)  # fmt: skip
    plan, fg = prepare(req)
    run_mod.run_plan(plan, fg, reuse_tuning_db=True)
    run_mod.run_plan(plan, fg)
    assert [e.get(REUSE_TUNING_DB) for e in seen] == ["1", None]
    bad = RunRequest(op="ok", flaggems_dir=str(tmp_path / "fg"), replay_from=str(tmp_path),
                     reuse_tuning_db=True)  # fmt: skip
    with pytest.raises(ZlbenchError, match="--replay-from pins the recorded configs"):
        prepare(bad)


def test_merge_refuses_shards_that_disagree_on_it(config, tmp_path):
    from zlbench.runner.batch.merge import merge_batches

    a = run_batch(config(FakeExecutor(), shard=(1, 2), out_dir=tmp_path / "a")).out_dir
    b = run_batch(config(FakeExecutor(), shard=(2, 2), out_dir=tmp_path / "b",
                         reuse_tuning_db=True)).out_dir  # fmt: skip
    with pytest.raises(ZlbenchError, match="reuse_tuning_db is"):
        merge_batches([a, b], tmp_path / "m")
    assert not (tmp_path / "m").exists()
