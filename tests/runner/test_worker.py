"""execute_plan against a fake pytest (tests/runner/fake_pytest.py), no plugins."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from zlbench.models import PlanEntry, RunStatus, WorkerPlan
from zlbench.runner.execute.worker import _chunks, build_pytest_argv, execute_plan

FAKE = Path(__file__).with_name("fake_pytest.py")


@pytest.fixture
def fake_python(tmp_path: Path) -> str:
    """An executable that stands for ``python``: it runs the fake pytest."""
    exe = tmp_path / "fake-python"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    d = tmp_path / "flaggems"
    (d / "benchmark").mkdir(parents=True)
    (d / "src").mkdir()
    return d


def _plan(tmp_path: Path, ops: list[str], dtypes: list[str] | None = None) -> WorkerPlan:
    entries = [
        PlanEntry(
            op=op,
            run_name=f"{i}_{op}",
            run_dir=str(tmp_path / "runs" / f"{i}_{op}"),
            nodeids=[f"benchmark/test_{op}.py::test_{op}"],
            dtypes=dtypes or [],
        )
        for i, op in enumerate(ops)
    ]
    return WorkerPlan(timing="kernel", entries=entries)


def _run(plan, checkout, fake_python, **kw):
    done = []
    statuses = execute_plan(
        plan,
        flaggems_dir=checkout,
        python=fake_python,
        grace_s=0.5,
        on_op_done=lambda e, s, r: done.append((e.run_name, s.status, r is not None)),
        **kw,
    )
    return statuses, done


def _pids(plan: WorkerPlan) -> list[int]:
    return [json.loads((Path(e.run_dir) / "env.json").read_text())["pid"] for e in plan.entries]


def test_all_pass_in_one_process(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok", "fail", "skip"])
    statuses, done = _run(plan, checkout, fake_python)
    assert [s.status for s in statuses] == [RunStatus.PASS, RunStatus.FAIL, RunStatus.SKIP]
    assert [s.rc for s in statuses] == [0, 1, 0]
    assert [s.rows for s in statuses] == [1, 1, 1]
    assert [d[0] for d in done] == ["0_ok", "1_fail", "2_skip"]
    assert len(set(_pids(plan))) == 1
    # Each run.log holds its own op's lines only; the pytest header goes to the first.
    logs = [(Path(e.run_dir) / "run.log").read_text() for e in plan.entries]
    assert "test session starts" in logs[0]
    assert "measuring 0_ok" in logs[0] and "measuring 1_fail" not in logs[0]
    assert "measuring 1_fail" in logs[1] and "ZLBENCH_OP_END run_name=1_fail" in logs[1]
    assert "1 passed" in logs[2]  # trailing summary goes to the op that ended last
    assert all((Path(e.run_dir) / "plan.json").exists() for e in plan.entries)


def test_result_json_read_once_per_ended_op(tmp_path, checkout, fake_python, monkeypatch):
    from zlbench.runner.execute import worker

    reads: list[str] = []
    real = worker._read_result

    def counting(run_dir):
        reads.append(Path(run_dir).name)
        return real(run_dir)

    monkeypatch.setattr(worker, "_read_result", counting)
    plan = _plan(tmp_path, ["ok", "fail", "skip"])
    statuses, _ = _run(plan, checkout, fake_python)
    assert [s.status for s in statuses] == [RunStatus.PASS, RunStatus.FAIL, RunStatus.SKIP]
    assert reads == ["0_ok", "1_fail", "2_skip"]


def test_per_process_one(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok", "ok", "ok"])
    statuses, _ = _run(plan, checkout, fake_python, per_process=1)
    assert [s.status for s in statuses] == [RunStatus.PASS] * 3
    assert len(set(_pids(plan))) == 3


@pytest.mark.parametrize(
    ("op", "status", "rc", "note"),
    [
        ("segv", RunStatus.CRASH, -11, "signal 11"),
        ("exit3", RunStatus.CRASH, 3, "exit code 3"),
        ("exit0", RunStatus.CRASH, 0, "exit code 0 before ZLBENCH_OP_END"),
        ("fault", RunStatus.CRASH, None, "device fault: RuntimeError: CUDA error"),
    ],
)
def test_death_mid_list_loses_only_the_op_in_flight(
    tmp_path, checkout, fake_python, op, status, rc, note
):
    plan = _plan(tmp_path, ["ok", op, "ok", "fail"])
    statuses, done = _run(plan, checkout, fake_python)
    assert [s.status for s in statuses] == [
        RunStatus.PASS,
        status,
        RunStatus.PASS,
        RunStatus.FAIL,
    ]
    assert statuses[1].rc == rc
    assert note in statuses[1].note
    pids = _pids(plan)
    assert pids[0] == pids[1] != pids[2] == pids[3]  # the rest ran in one fresh process
    assert [d[0] for d in done] == ["0_ok", f"1_{op}", "2_ok", "3_fail"]
    crashed_log = (Path(plan.entries[1].run_dir) / "run.log").read_text()
    assert f"measuring 1_{op}" in crashed_log and f"status={status.value}" in crashed_log


def test_timeout_from_begin_kills_and_continues(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok", "hang", "ok"])
    statuses, _ = _run(plan, checkout, fake_python, op_timeout_s=1.5)
    assert [s.status for s in statuses] == [RunStatus.PASS, RunStatus.TIMEOUT, RunStatus.PASS]
    assert statuses[1].rc is None and "timed out after 1.5 s" in statuses[1].note
    assert statuses[1].seconds >= 1.5


def test_never_started_ops_are_isolated_then_error(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["noend", "noend"])
    statuses, _ = _run(plan, checkout, fake_python)
    assert [s.status for s in statuses] == [RunStatus.ERROR] * 2
    assert "before the op began" in statuses[0].note
    # Each was retried alone before giving up, and its log shows the output.
    assert len(set(_pids(plan))) == 2
    assert "test session starts" in (Path(plan.entries[0].run_dir) / "run.log").read_text()


def test_run_log_has_no_ansi(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["color"])
    seen: list[str] = []
    execute_plan(plan, flaggems_dir=checkout, python=fake_python, sink=seen.append)
    log = (Path(plan.entries[0].run_dir) / "run.log").read_text()
    assert "red text plain" in log and "\x1b" not in log
    assert any("\x1b[31m" in line for line in seen)  # the terminal sink gets them


def test_process_environment(tmp_path, checkout, fake_python, monkeypatch):
    plan = _plan(tmp_path, ["ok", "ok"])
    _run(
        plan,
        checkout,
        fake_python,
        per_process=1,
        env={"PYTHONPATH": "/x", "PATH": os.environ["PATH"]},
    )
    envs = [json.loads((Path(e.run_dir) / "env.json").read_text()) for e in plan.entries]
    assert envs[0]["TRITON_CACHE_DIR"] != envs[1]["TRITON_CACHE_DIR"]
    assert envs[0]["FLAGGEMS_DB_URL"].startswith("sqlite:///")
    assert envs[0]["FLAGGEMS_DB_URL"].endswith(".db")
    assert envs[0]["FLAGGEMS_CACHE_DIR"] in envs[0]["FLAGGEMS_DB_URL"]
    assert envs[0]["PYTHONHASHSEED"] == "0" and envs[0]["PYTHONUNBUFFERED"] == "1"
    assert envs[0]["PYTHONPATH"] == os.pathsep.join([str((checkout / "src").resolve()), "/x"])
    for env in envs:  # temp dirs are removed after the process
        assert not Path(env["TRITON_CACHE_DIR"]).exists()


def test_own_dtypes_share_a_process_defaults_get_their_own_and_argv(
    tmp_path, checkout, fake_python
):
    """Entries with other dtypes share one process (the shapes plugin hands each its
    own); an entry on the op's defaults must not see their ``--dtypes``."""
    a = _plan(tmp_path / "a", ["ok"], dtypes=["bfloat16"])
    b = _plan(tmp_path / "b", ["skip"], dtypes=["float32"])
    b.entries[0].run_name = "other"
    c = _plan(tmp_path / "c", ["fail"], dtypes=[])
    c.entries[0].run_name = "defaults"
    plan = WorkerPlan(timing="kernel", entries=a.entries + b.entries + c.entries)
    statuses, _ = _run(plan, checkout, fake_python)
    assert [s.status for s in statuses] == [RunStatus.PASS, RunStatus.SKIP, RunStatus.FAIL]
    pids = _pids(plan)
    assert pids[0] == pids[1] and pids[2] != pids[0]
    argv = build_pytest_argv("p.json", a)
    assert argv[1:7] == ["-m", "pytest", "-s", "-p", "zlbench.plugins.loader", "--zl-plan"]
    assert argv[argv.index("--dtypes") + 1] == "bfloat16"
    assert argv[argv.index("--mode") + 1] == "kernel"
    assert argv[-1] == "benchmark/test_ok.py::test_ok"


def test_identical_failures_before_any_op_stop_the_plan(tmp_path, checkout, fake_python):
    """A process that cannot even load conftest fails every op the same way: after a
    few identical deaths the rest are NOT MEASURED, not each given its own process."""
    plan = _plan(tmp_path, ["confbad"] * 8)
    for i, e in enumerate(plan.entries):  # 8 tests (one test's entries never share)
        e.nodeids = [f"benchmark/test_confbad.py::test_confbad_{i}"]
    statuses, _ = _run(plan, checkout, fake_python)
    assert all(s.status is RunStatus.ERROR for s in statuses)
    sig = "pytest exit code 4 before the op began: ImportError while loading conftest"
    assert {s.signature for s in statuses} == {f"{sig} 'conftest.py'."}
    not_run = [s for s in statuses if s.note.startswith("NOT MEASURED")]
    # the shared process, then one op per process twice: three identical deaths
    logs = [(Path(e.run_dir) / "run.log").read_text() for e in plan.entries]
    assert ["argv" in log for log in logs] == [True, True] + [False] * 6
    assert len(not_run) == 6 and statuses[2:] == not_run
    assert "the same in 3 processes" in not_run[0].note


def test_pytest_config_is_pinned_to_the_checkout(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok"])
    _run(plan, checkout, fake_python)
    argv = (Path(plan.entries[0].run_dir) / "run.log").read_text().split("argv ", 1)[1]
    words = argv.split()
    assert f"--rootdir={checkout.resolve()}" in words
    ini = Path(words[words.index("-c") + 1])
    assert ini.name == "pytest.ini" and ini.parent != checkout  # no pytest.ini: an empty one
    (checkout / "pytest.ini").write_text("[pytest]\n")
    _run(plan, checkout, fake_python)
    words = (Path(plan.entries[0].run_dir) / "run.log").read_text().split("argv ", 1)[1].split()
    assert words[words.index("-c") + 1] == str((checkout / "pytest.ini").resolve())


def test_op_timeout_zero_means_no_limit(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok", "ok"])
    statuses, _ = _run(plan, checkout, fake_python, op_timeout_s=0)
    assert [s.status for s in statuses] == [RunStatus.PASS] * 2


def test_time_budget_kills_and_leaves_the_rest_not_measured(tmp_path, checkout, fake_python):
    plan = _plan(tmp_path, ["ok", "hang", "ok", "ok"])
    statuses, _ = _run(plan, checkout, fake_python, budget_s=1.5)
    assert statuses[0].status is RunStatus.PASS
    rest = statuses[1:]
    assert all(s.status is RunStatus.ERROR for s in rest)
    assert all(s.note.startswith("NOT MEASURED") and "budget of 1.5 s" in s.note for s in rest)
    assert "ran out during the op" in rest[0].note
    assert not (Path(plan.entries[2].run_dir) / "env.json").exists()  # never started


def test_two_entries_of_one_test_never_share_a_process():
    """Row parts of one op run the same test: pytest would run it once, for one of them."""

    def entry(name, nodeid, dtypes=("float16",)):
        return PlanEntry(op=name, run_name=name, run_dir=f"/r/{name}", nodeids=[nodeid],
                         dtypes=list(dtypes))  # fmt: skip

    a1, a2 = entry("a~1of2", "b/test_a.py::test_a"), entry("a~2of2", "b/test_a.py::test_a")
    b, c = entry("b", "b/test_b.py::test_b"), entry("c", "b/test_c.py::test_c", ())
    chunks = [[e.run_name for e in ch] for ch in _chunks([a1, b, a2, c], None)]
    assert chunks == [["a~1of2", "b"], ["a~2of2"], ["c"]]
    assert [[e.run_name for e in ch] for ch in _chunks([a1, b, a2], 1)] == [
        ["a~1of2"],
        ["b"],
        ["a~2of2"],
    ]
