"""Precompile: recorded kernels compiled on CPU processes into one triton cache, which
a later benchmark process then hits for every kernel (real sm_90 compiles of the
benchpkg kernels under the stand-in driver); dealing, collecting, batch wiring."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

import zlbench.runner.batch.run as run_mod  # noqa: E402
from tests.support.batch_fakes import FakeExecutor, batch_config_factory  # noqa: E402
from tests.support.codegen import (  # noqa: E402
    RECORD_SCRIPT,
    TARGET,
    load_index,
    record_benchpkg,
    subprocess_env,
)
from zlbench.errors import ZlbenchError  # noqa: E402
from zlbench.models import CodegenIndex  # noqa: E402
from zlbench.protocol.cache import SHARED_CACHE_READY_VAR, wait_ready  # noqa: E402
from zlbench.runner.batch.config import BatchConfig  # noqa: E402
from zlbench.runner.batch.precompile import (  # noqa: E402
    collect_records,
    compile_seconds,
    deal_records,
    precompile,
)
from zlbench.runner.batch.run import run_batch  # noqa: E402
from zlbench.runner.execute.worker import SHARED_TRITON_CACHE, process_env  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A replay root whose op ``main/bench`` recorded the benchpkg kernels."""
    root = tmp_path_factory.mktemp("root")
    cg = record_benchpkg(root / "rec")
    shutil.copytree(cg, root / "main" / "bench" / "codegen")
    return root


def _rerun_with_cache(root: Path, cache: Path, tmp: Path) -> CodegenIndex:
    """The benchpkg kernels launched again by a fresh process whose triton cache is ``cache``."""
    env = subprocess_env(tmp, root / "rec" / "helpers")
    env["TRITON_CACHE_DIR"] = str(cache)
    out = tmp / "codegen"
    script = RECORD_SCRIPT.format(target=TARGET, sass=True)
    cmd = [sys.executable, "-c", script, str(out), str(root / "rec" / "gencache")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return load_index(out)


def test_after_precompile_every_kernel_the_op_launches_is_a_cache_hit(recorded, tmp_path):
    records, missing = collect_records(recorded, ["main/bench", "main/none"])
    assert len(records) == 12 and missing == ["main/none"]
    cache = tmp_path / "cache"
    env = subprocess_env(tmp_path / "pc", recorded / "rec" / "helpers")
    # the test's own records: their generated kernel's source may run
    outcome = precompile(records, cache, 2, env, exec_generated=True)
    assert (outcome.kernels, outcome.failed, outcome.worker_errors) == (12, {}, [])
    assert outcome.processes == 2
    again = _rerun_with_cache(recorded, cache, tmp_path / "again")
    hits = {r.request.kernel.name: r.result.cache_hit for r in again.records}
    assert len(again.records) == 12 and all(hits.values()), hits


def test_without_precompile_the_same_run_compiles_every_kernel(recorded, tmp_path):
    again = _rerun_with_cache(recorded, tmp_path / "empty-cache", tmp_path / "again")
    assert not any(r.result.cache_hit for r in again.records)


def test_a_kernel_that_cannot_load_is_reported_and_the_others_compile(recorded, tmp_path):
    records, _ = collect_records(recorded, ["main/bench"])
    broken = records[0].model_copy(deep=True)
    broken.request.kernel.module = "no_such_module_zl"
    broken.request.kernel.generated_source = None
    broken.id = "broken0000000000"
    env = subprocess_env(tmp_path / "pc", recorded / "rec" / "helpers")
    outcome = precompile([broken, *records[1:3]], tmp_path / "cache", 1, env)
    assert list(outcome.failed) == ["broken0000000000"]
    assert outcome.failed["broken0000000000"].startswith("load failed: ModuleNotFoundError")
    assert outcome.worker_errors == []


def test_a_worker_that_cannot_run_is_one_error_line(recorded, tmp_path):
    assert precompile([], tmp_path / "c", 2, {}).processes == 0  # nothing to do: no process
    records, _ = collect_records(recorded, ["main/bench"])
    outcome = precompile(records[:1], tmp_path / "c", 1, {}, python=str(tmp_path / "nopython"))
    assert len(outcome.worker_errors) == 1
    assert outcome.worker_errors[0].startswith("precompile worker failed: [Errno 2]")
    env = {"PATH": "", "PYTHONPATH": ""}
    outcome = precompile(records[:1], tmp_path / "c", 1, env, python="/bin/false")
    assert outcome.worker_errors == ["precompile worker failed: exit code 1"]


def test_records_are_dealt_longest_compile_first(recorded):
    records, _ = collect_records(recorded, ["main/bench"])
    chunks = deal_records(records, 3)
    assert sorted(r.id for c in chunks for r in c) == sorted(r.id for r in records)
    loads = [sum(compile_seconds(r) for r in c) for c in chunks]
    assert max(loads) - min(loads) <= max(compile_seconds(r) for r in records)
    assert len(deal_records(records[:2], 8)) == 2  # no empty process


def test_process_env_uses_the_shared_cache_when_given(tmp_path):
    fresh = process_env({}, flaggems_dir=tmp_path, tmp_dir=tmp_path / "p")
    assert fresh["TRITON_CACHE_DIR"] == str(tmp_path / "p" / "triton_cache")
    shared = process_env(
        {SHARED_TRITON_CACHE: str(tmp_path / "s")}, flaggems_dir=tmp_path, tmp_dir=tmp_path / "p"
    )
    assert shared["TRITON_CACHE_DIR"] == str(tmp_path / "s")


def test_a_replay_batch_with_precompile_runs_every_process_on_the_shared_cache(
    recorded, tmp_path, monkeypatch
):
    config = batch_config_factory(tmp_path, ["bench", "other"])
    seen_env = []
    fake = FakeExecutor()

    def executor(plan, **kw):
        seen_env.append(kw["env"])
        return fake(plan, **kw)

    monkeypatch.setenv("PYTHONPATH", str(recorded / "rec" / "helpers"))
    progress = io.StringIO()
    env = subprocess_env(tmp_path / "env", recorded / "rec" / "helpers")
    out = run_batch(
        config(executor, replay_root=recorded, precompile_jobs=2, progress=progress, env=env)
    )
    assert out.exit_code == 0
    assert "main: precompile: 12 kernels" in progress.getvalue()
    assert "0 failed, 1 op(s) without records" in progress.getvalue()
    caches = {env[SHARED_TRITON_CACHE] for env in seen_env}
    assert len(caches) == 1 and not Path(caches.pop()).exists()  # shared, removed after
    # every process was told where the precompile's end is marked (it waits for it)
    assert {env[SHARED_CACHE_READY_VAR] for env in seen_env} == {
        str(Path(seen_env[0][SHARED_TRITON_CACHE]) / ".zlbench-precompiled")
    }


def test_the_processes_start_while_the_precompile_runs_and_wait_for_its_end(
    recorded, tmp_path, monkeypatch
):
    """The executor is called before the precompile has ended; the marker appears when
    it ends, so a process waiting on it before its first op sees every kernel."""
    import threading

    config = batch_config_factory(tmp_path, ["bench"])
    fake, seen = FakeExecutor(), {}
    release = threading.Event()
    real = run_mod.warm_shared_cache

    def slow_warm(*a, **kw):
        release.wait(30)  # held until the executor has been called
        return real(*a, **kw)

    def executor(plan, **kw):
        ready = kw["env"][SHARED_CACHE_READY_VAR]
        seen["before"] = Path(ready).exists()
        release.set()
        seen["waited"] = wait_ready(ready, timeout_s=120)
        seen["after"] = Path(ready).exists()
        return fake(plan, **kw)

    monkeypatch.setattr(run_mod, "warm_shared_cache", slow_warm)
    env = subprocess_env(tmp_path / "env", recorded / "rec" / "helpers")
    out = run_batch(config(executor, replay_root=recorded, precompile_jobs=1, env=env))
    assert out.exit_code == 0
    assert seen["before"] is False and seen["after"] is True and seen["waited"] > 0


def test_wait_ready_returns_when_the_marker_appears_or_the_time_is_up(tmp_path):
    import threading

    marker = tmp_path / "ready"
    assert wait_ready(None) == 0.0
    assert wait_ready(str(marker), timeout_s=0.2) >= 0.2  # never written: the timeout
    threading.Timer(0.3, marker.write_text, args=("done",)).start()
    waited = wait_ready(str(marker), timeout_s=30)
    assert 0.2 < waited < 10 and marker.exists()


@pytest.mark.slow
def test_replay_batch_with_precompile_launches_only_cached_kernels(tmp_path):
    """The real runner end to end on the benchpkg suite, kernels compiled for sm_90 by
    the stand-in driver: record, then replay with and without --precompile-jobs."""
    import os

    from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

    fg = tmp_path / "fg"
    bench = Path(__file__).resolve().parents[1] / "benchpkg"
    shutil.copytree(bench, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "GEMS_VENDOR")}
    extra = ["--iter", "1", "--zl-replays", "2", "--zl-warmup-ms", "1",
             "--zl-timing-backend", "cpu", "--zl-codegen-standin", "cuda:90"]  # fmt: skip

    def batch(name: str, **kw) -> tuple[Path, str]:
        progress = io.StringIO()
        out = run_batch(
            BatchConfig(
                out_dir=tmp_path / name,
                flaggems_dirs={"main": fg},
                ops_dir=tmp_path / "ops",
                ops=["add", "mm", "softmax"],
                dtypes=["float32"],
                timing="kernel",
                env=env,
                progress=progress,
                extra_pytest_args=extra,
                **kw,
            )  # fmt: skip
        )
        assert out.exit_code == 0, progress.getvalue()
        return out.out_dir, progress.getvalue()

    rec, _ = batch("rec")
    warm, text = batch("warm", replay_root=rec, precompile_jobs=2)
    cold, _ = batch("cold", replay_root=rec)
    assert "main: precompile: " in text and " 0 failed, 0 op(s) without records" in text
    for op in ("add", "mm", "softmax"):
        hits = [r.result.cache_hit for r in load_index(warm / "main" / op / "codegen").records]
        assert hits and all(hits), op
        cold_hits = [r.result.cache_hit for r in load_index(cold / "main" / op / "codegen").records]
        assert cold_hits and not any(cold_hits), op


def test_a_batch_in_another_interpreter_precompiles_with_that_interpreter(recorded, tmp_path):
    config = batch_config_factory(tmp_path, ["bench"])
    calls = tmp_path / "calls"
    side = tmp_path / "side-python"
    side.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 3\n')
    side.chmod(0o755)
    progress = io.StringIO()
    run_batch(
        config(
            FakeExecutor(),
            replay_root=recorded,
            precompile_jobs=1,
            progress=progress,
            python=str(side),
        )
    )
    assert calls.read_text().startswith("-m zlbench.plugins.precompile ")
    assert "main: precompile worker failed: exit code 3" in progress.getvalue()


def test_an_ab_side_with_its_own_interpreter_precompiles_with_it(tmp_path):
    from zlbench.runner.ab.env import CompilerEnv, side_config

    config = BatchConfig(out_dir=tmp_path, flaggems_dirs={}, ops_dir=tmp_path)
    side = side_config(config, CompilerEnv("v", python="/v/bin/python"))
    assert side.python == "/v/bin/python"
    assert side_config(config, CompilerEnv("s", front=("/s",))).python is None


def test_a_batch_that_fails_while_the_precompile_runs_stops_its_workers(
    recorded, tmp_path, monkeypatch
):
    """The precompile's workers (here a stand-in interpreter that writes its pid and
    sleeps) are killed when the batch fails first; the failure is the batch's own,
    no thread dies with a traceback (filterwarnings=error would fail this test)."""
    import time

    config = batch_config_factory(tmp_path, ["bench"])
    pids = tmp_path / "pids"
    sleeper = tmp_path / "sleepy-python"
    sleeper.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 60\n")
    sleeper.chmod(0o755)

    def boom(self):
        deadline = time.monotonic() + 30
        while not pids.exists() and time.monotonic() < deadline:  # a worker is running
            time.sleep(0.05)
        raise RuntimeError("the batch failed")

    monkeypatch.setattr(run_mod.BatchRun, "run", boom)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="the batch failed"):
        run_batch(
            config(FakeExecutor(), replay_root=recorded, precompile_jobs=2, python=str(sleeper))
        )
    assert time.monotonic() - t0 < 30  # not the workers' 60 s
    for pid in map(int, pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped


def test_a_broken_codegen_index_in_the_replay_root_is_one_error_before_anything_runs(
    recorded, tmp_path
):
    root = tmp_path / "root"
    shutil.copytree(recorded, root)
    (root / "main" / "bench" / "codegen" / "index.json").write_text("{not json")
    config = batch_config_factory(tmp_path, ["bench"])
    fake = FakeExecutor()
    with pytest.raises(ZlbenchError):
        run_batch(config(fake, replay_root=root, precompile_jobs=1))
    assert fake.calls == []


def test_precompile_never_executes_recorded_source_unless_told(recorded, tmp_path):
    """A replay root that is not a verified baseline: its generated kernel's recorded
    module text is not executed (the benchmark process generates its own)."""
    records, _ = collect_records(recorded, ["main/bench"])
    env = subprocess_env(tmp_path / "pc", recorded / "rec" / "helpers")
    outcome = precompile(records, tmp_path / "cache", 1, env)
    generated = {r.id for r in records if r.request.kernel.generated_source}
    assert generated and set(outcome.failed) == generated
    assert all("load failed" in e for e in outcome.failed.values())
    assert outcome.kernels == 12 and not outcome.worker_errors
