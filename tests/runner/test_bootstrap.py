"""`zlbench baseline bootstrap --tier NAME --out baselines/RUNNER` (issue 48 item 3):
a tier refreshed, verified, and only then put where the gate reads it; a bootstrap
that fails, does not verify or is killed mid-record leaves nothing at --out."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory, write_one_row_pass
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import VerifyReport, verify
from zlbench.models import (
    BaselineManifest,
    BatchInfo,
    Environment,
    OpStatus,
    RunStatus,
    load_yaml_model,
)
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.refresh import (
    RefreshConfig,
    bootstrap,
    refresh,
    sweep_stale_stages,
    tier_file,
)

REPO = Path(__file__).resolve().parents[2]
ENV = Environment(gpu_model="Test GPU", triton_dist="triton", triton_version="3.6.0")
OPS = ["a", "b", "c"]


def _pass(d: Path, ops: list[str]) -> BatchOutcome:
    """A batch dir of ``ops``, each a one-row PASS (record or replay by its name)."""
    statuses = []
    for op in ops:
        mode = "record" if d.name == "record" else "replay"
        write_one_row_pass(d / "main" / op, op, mode, ENV)
        statuses.append(
            OpStatus(
                repo="main", op=op, run_name=op, status=RunStatus.PASS, rows=1, run_dir=f"main/{op}"
            )
        )
    write_ops_status(d, statuses)
    write_batch_info(d, BatchInfo(created="2026-01-01T10:00:00Z", finished="2026-01-01T10:05:00Z"))
    return BatchOutcome(out_dir=d, statuses=statuses, counts={}, summary_rows=len(ops), exit_code=0)


@pytest.fixture
def ops_dir(tmp_path) -> Path:
    """An inventory of a, b, c and the tiers pr (a, b) and nightly (a, b, c)."""
    d = tmp_path / "ops"
    make_inventory(d, "main", OPS)
    (d / "tiers").mkdir()
    (d / "tiers" / "pr.txt").write_text("# tier pr\na\nb   # gate core\n")
    (d / "tiers" / "nightly.txt").write_text("a\nb\nc\n")
    (tmp_path / "fg").mkdir()
    return d


@pytest.fixture
def work(tmp_path) -> Path:
    """An earlier refresh's --keep-work: record + 2 replay passes of a, b, c."""
    w = tmp_path / "wk"
    for name in ("record", "replay-1", "replay-2"):
        _pass(w / name, OPS)
    return w


def _cfg(tmp_path: Path, ops_dir: Path, out: Path, **kw) -> RefreshConfig:
    batch = BatchConfig(
        out_dir=tmp_path / "unused",
        flaggems_dirs={"main": tmp_path / "fg"},
        ops_dir=ops_dir,
        ops_file=tier_file(ops_dir, "pr"),
    )
    return RefreshConfig(out=out, batch=batch, repeats=2, zlbench_commit="abc", **kw)


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.is_dir() else []


def _cli(tmp_path, monkeypatch, *argv):
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path / "fg"))
    return main(["baseline", "bootstrap", "--ops-dir", str(tmp_path / "ops"), *argv])


# --------------------------------------------------------------------------- the command


def test_bootstrap_records_the_tier_verifies_it_and_says_what_to_run_next(
    tmp_path, ops_dir, work, monkeypatch, capsys
):
    out = tmp_path / "baselines" / "h100"
    argv = ["--tier", "pr", "--out", str(out), "--repeats", "2", "--from-work", str(work)]
    assert _cli(tmp_path, monkeypatch, *argv) == 0
    m = load_yaml_model(out / "manifest.yaml", BaselineManifest)
    assert m.name == "h100"  # named after --out, not after its stage
    assert m.ops == ["main/a", "main/b"]  # the tier's ops, not c
    assert verify(out, m).ok
    assert _leftovers(out.parent) == ["h100"]  # no stage beside it
    text = capsys.readouterr().out
    assert "verified: 2 ops, 2 rows: OK (tier pr:" in text
    assert f"  zlbench gate --baseline {out} --out out/gate-h100\n" in text
    assert f"  zlbench pack {out} --archive-dir " in text


def test_the_hint_other_commands_print_is_this_commands_spelling(
    tmp_path, ops_dir, work, monkeypatch
):
    """gate/env.py refuses a foreign baseline with `zlbench baseline bootstrap --tier pr
    --out baselines/<runner>`: exactly that parses (and runs) here."""
    monkeypatch.chdir(tmp_path)
    argv = ["--tier", "pr", "--out", "baselines/h100", "--repeats", "2", "--from-work", str(work)]
    assert _cli(tmp_path, monkeypatch, *argv) == 0
    assert (tmp_path / "baselines" / "h100" / "manifest.yaml").is_file()


def test_an_existing_out_or_its_packed_lock_is_refused(
    tmp_path, ops_dir, work, monkeypatch, capsys
):
    out = tmp_path / "baselines" / "h100"
    out.mkdir(parents=True)
    argv = ["--tier", "pr", "--out", str(out), "--repeats", "2", "--from-work", str(work)]
    assert _cli(tmp_path, monkeypatch, *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err
    assert _leftovers(out) == []
    out.rmdir()
    (tmp_path / "baselines" / "h100.lock").write_text("{}\n")
    assert _cli(tmp_path, monkeypatch, *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "h100.lock is a packed baseline" in err
    assert _leftovers(out.parent) == ["h100.lock"]


@pytest.mark.parametrize("tier", ["nope", "../pr", "PR", ""])
def test_an_unknown_tier_is_one_line_naming_the_tiers(
    tmp_path, ops_dir, work, monkeypatch, capsys, tier
):
    out = tmp_path / "baselines" / "h100"
    argv = ["--tier", tier, "--out", str(out), "--from-work", str(work)]
    assert _cli(tmp_path, monkeypatch, *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tiers: nightly, pr)" in err
    assert not out.exists()


def test_the_shipped_tiers_resolve():
    assert tier_file(REPO / "ops", "pr") == REPO / "ops" / "tiers" / "pr.txt"
    with pytest.raises(ZlbenchError, match="moe_dsv4, nightly, pr"):
        tier_file(REPO / "ops", "weekly")


# --------------------------------------------------------------------------- nothing half-written


def test_a_refresh_that_dies_mid_record_leaves_nothing_at_out(tmp_path, ops_dir):
    """The fake batch seam: the record pass writes its ops, then the run is stopped
    (Ctrl-C / SIGTERM, as the CLI reads it) before the replay passes."""
    seen = []

    def batch_runner(cfg: BatchConfig) -> BatchOutcome:
        if cfg.replay_root is not None:
            raise KeyboardInterrupt
        seen.append(_pass(cfg.out_dir, ["a", "b"]).out_dir)
        return BatchOutcome(
            out_dir=cfg.out_dir, statuses=[], counts={}, summary_rows=2, exit_code=0
        )

    out = tmp_path / "baselines" / "h100"
    with pytest.raises(KeyboardInterrupt):
        bootstrap(_cfg(tmp_path, ops_dir, out, batch_runner=batch_runner), ops_dir / "tiers/pr.txt")
    assert seen and not seen[0].exists()  # the record pass ran, and is gone
    assert _leftovers(out.parent) == []


def test_a_baseline_that_does_not_verify_is_not_put_at_out(tmp_path, ops_dir, work):
    out = tmp_path / "baselines" / "h100"
    cfg = _cfg(tmp_path, ops_dir, out, from_work=work)
    checked = []

    def bad_verify(root, manifest):
        checked.append(root)
        return VerifyReport(problems=["main/a: result.json: sha256 mismatch"])

    with pytest.raises(ZlbenchError, match="does not verify .*nothing was written at"):
        bootstrap(cfg, ops_dir / "tiers/pr.txt", verify_fn=bad_verify)
    assert checked and checked[0].name == "h100" and checked[0].parent != out.parent
    assert _leftovers(out.parent) == []


def test_an_out_that_appears_while_recording_is_never_written_over(tmp_path, ops_dir, work):
    out = tmp_path / "baselines" / "h100"

    def racing_refresh(cfg):
        done = refresh(cfg)
        out.mkdir()  # another bootstrap finished first
        return done

    with pytest.raises(ZlbenchError, match="already exists"):
        bootstrap(_cfg(tmp_path, ops_dir, out, from_work=work), ops_dir, refresh_fn=racing_refresh)
    assert _leftovers(out.parent) == ["h100"] and _leftovers(out) == []


def test_stale_stages_of_dead_bootstraps_are_removed_live_ones_kept(tmp_path):
    pid = int(Path("/proc/sys/kernel/pid_max").read_text())  # no process has it
    parent = tmp_path / "baselines"
    (parent / f".h100.bootstrap-{pid}" / "h100").mkdir(parents=True)
    (parent / f".h100.bootstrap-{os.getpid()}").mkdir()  # alive: this process
    (parent / f".a100.bootstrap-{pid}").mkdir()  # another runner's name
    gone = sweep_stale_stages(parent, "h100")
    assert [p.name for p in gone] == [f".h100.bootstrap-{pid}"]
    assert _leftovers(parent) == sorted(
        [f".h100.bootstrap-{os.getpid()}", f".a100.bootstrap-{pid}"]
    )


SCRIPT = textwrap.dedent(
    """
    import sys
    from tests.support.batch_fakes import FakeExecutor
    from zlbench.cli import main
    from zlbench.runner.batch import workers

    workers.default_executor = lambda: FakeExecutor(delay_s=0.3)
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.proc
def test_sigterm_mid_record_leaves_nothing_where_the_gate_reads(tmp_path, ops_dir):
    """A CI job cancelled mid-record: the bootstrap process gets SIGTERM while its
    record pass runs; it exits 130 and leaves neither --out nor its stage."""
    (tmp_path / "fg" / "benchmark").mkdir(parents=True)
    make_inventory(ops_dir, "main", [f"op{i}" for i in range(30)])
    (ops_dir / "tiers" / "pr.txt").write_text("".join(f"op{i}\n" for i in range(30)))
    out = tmp_path / "baselines" / "h100"
    argv = ["baseline", "bootstrap", "--tier", "pr", "--out", str(out), "--ops-dir", str(ops_dir)]
    argv += ["--gpus", "0", "--repeats", "1"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZLBENCH_FLAGGEMS_DIR": str(tmp_path / "fg")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    log = tmp_path / "bootstrap.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, *argv], env=env, stdout=f, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if list(out.parent.glob(".h100.bootstrap-*/.h100.tmp-*/_work/record/main/op*/run.log")):
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        else:
            pytest.fail("the record pass never started: " + log.read_text())
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, log.read_text()
    assert "interrupted" in log.read_text()
    assert _leftovers(out.parent) == []


def test_bootstrap_passes_the_refresh_config_through_with_the_stage_as_out(tmp_path, ops_dir, work):
    got = []

    def spy(cfg):
        got.append(cfg)
        return refresh(cfg)

    out = tmp_path / "baselines" / "h100"
    cfg = _cfg(tmp_path, ops_dir, out, from_work=work)
    done = bootstrap(cfg, ops_dir / "tiers/pr.txt", refresh_fn=spy)
    [seen] = got
    assert seen.out.name == "h100" and seen.out.parent.name == f".h100.bootstrap-{os.getpid()}"
    assert dataclasses.replace(seen, out=cfg.out) == cfg
    assert done.out == out and done.refreshed.out == out and done.verified.ok


def test_a_bootstrap_stopped_with_work_resumes_there_and_measures_no_pass_twice(tmp_path, ops_dir):
    """--work DIR (a device call's or a job's time limit cuts a 20-minute bootstrap): the
    first call records, then is stopped in replay pass 1 (nothing at --out, the record
    pass kept in DIR); the same command again resumes: the record pass and the cut
    replay pass resumed where they stopped (complete ops kept, failed ops kept), replay
    pass 2 measured fresh, the baseline verified and put at --out."""
    work = tmp_path / "work"
    calls: list[tuple[str, bool, bool]] = []
    stop = {"replay-1"}

    def batch_runner(cfg: BatchConfig) -> BatchOutcome:
        calls.append((cfg.out_dir.name, cfg.resume, cfg.keep_failed))
        if cfg.out_dir.name in stop:
            stop.clear()
            _pass(cfg.out_dir, ["a"])  # one op measured, then the stop
            raise KeyboardInterrupt
        return _pass(cfg.out_dir, ["a", "b"])

    out = tmp_path / "baselines" / "h100"
    cfg = _cfg(tmp_path, ops_dir, out, batch_runner=batch_runner, work=work)
    with pytest.raises(KeyboardInterrupt):
        bootstrap(cfg, ops_dir / "tiers/pr.txt")
    assert _leftovers(out.parent) == [] and _leftovers(work) == ["record", "replay-1"]
    assert calls == [("record", False, False), ("replay-1", False, False)]
    calls.clear()
    done = bootstrap(cfg, ops_dir / "tiers/pr.txt")
    assert calls == [("record", True, True), ("replay-1", True, True), ("replay-2", False, False)]
    assert done.verified.ok and done.refreshed.manifest.ops == ["main/a", "main/b"]
    assert _leftovers(out.parent) == ["h100"]
    assert _leftovers(work) == ["record", "replay-1", "replay-2"]  # kept: the user's dir


def test_work_is_not_with_from_work_or_keep_work(tmp_path, ops_dir, work, monkeypatch, capsys):
    out = str(tmp_path / "baselines" / "h100")
    for other in ("--from-work", "--keep-work"):
        argv = ["--tier", "pr", "--out", out, "--work", str(tmp_path / "w"), other, str(work)]
        assert _cli(tmp_path, monkeypatch, *argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--work keeps the passes where they are" in err[0]
