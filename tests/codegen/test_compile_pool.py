"""The CPU compile pool (zlbench.codegen.pool) and its line protocol
(zlbench.protocol.compile_lines), with a tiny stand-in worker (no triton): per-item
results, the workers' environment, retries of a dead worker's items, the probe,
progress, timeouts, stop and the kill of a worker's whole group."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from zlbench.codegen import pool
from zlbench.errors import ZlbenchError
from zlbench.protocol import compile_lines as lines

END = "ZLWORKER_END"
WORKER = """
import json, os, signal, subprocess, sys, time
from zlbench.protocol.compile_lines import write_end, write_item

ids = json.loads(open(sys.argv[1]).read())
keep = ("PYTHONHASHSEED", "FLAGGEMS_CACHE_DIR", "PYTHONPATH")
open(sys.argv[2], "w").write(json.dumps({k: os.environ.get(k) for k in keep}))
if os.environ.get("ZLWORKER_BROKEN"):
    sys.exit("cannot import the compiler")
for i in ids:
    if i == "crash-always" or (i.startswith("crash") and len(ids) > 1):
        print("dying on " + i, file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    if i.startswith("sleep"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(sys.argv[2] + ".child", "w").write(str(child.pid))
        if i == "sleep-stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
    write_item(i, "compile failed: Boom:\\nsecond line" if i.startswith("fail") else None)
write_end("ZLWORKER_END", kernels=len(ids), failed=0)
"""


@pytest.fixture
def spec(tmp_path) -> pool.PoolSpec:
    (tmp_path / "zlworker.py").write_text(WORKER)
    return pool.PoolSpec(
        python=sys.executable,
        module="zlworker",
        end=END,
        env={**os.environ, "PYTHONPATH": "/elsewhere"},
        pythonpath=[str(tmp_path)],
        jobs=2,
    )


def prepare(job: pool.Job) -> list[str]:
    (job.dir / "in.json").write_text(json.dumps(job.ids))
    return [str(job.dir / "in.json"), str(job.dir / "env.json")]


def _alive(pid: int, within_s: float = 10.0) -> bool:
    """Whether ``pid`` still runs ``within_s`` after (a signalled process may take a
    moment to exit on a loaded machine; a zombie does not run)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state == "Z":
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def test_the_line_protocol_round_trips_and_ignores_other_lines():
    text = [
        "some output",
        lines.item_line("a"),
        lines.item_line("b", "compile failed: X:\nmore"),
        lines.end_line(lines.PRECOMPILE_END, kernels=2, failed=1, seconds="0.50"),
        "ZLBENCH_COMPILED c maybe",
    ]
    assert text[2] == "ZLBENCH_COMPILED b failed compile failed: X: more"
    report = lines.read_lines(text, lines.PRECOMPILE_END)
    assert report.items == {"a": None, "b": "compile failed: X: more"}
    assert report.end == {"kernels": "2", "failed": "1", "seconds": "0.50"}
    assert lines.read_lines(text, lines.REBUILD_END).end is None  # another worker's end


def test_each_item_has_its_result_and_each_job_its_progress_call(spec, tmp_path):
    calls = []
    out = pool.run_pool(
        spec,
        [["a", "fail-b"], ["c"]],
        tmp_path / "work",
        prepare,
        on_done=lambda n, ended, got: calls.append((n, ended.ids, dict(got))),
    )
    assert out.results == {"a": None, "fail-b": "compile failed: Boom: second line", "c": None}
    assert out.died == [] and out.lost == {}
    assert sorted(calls) == [
        (2, ["a", "fail-b"], {"a": None, "fail-b": "compile failed: Boom: second line"}),
        (2, ["c"], {"c": None}),
    ]
    env = json.loads((tmp_path / "work" / "chunk-0" / "env.json").read_text())
    assert env["PYTHONHASHSEED"] == "0"
    assert env["FLAGGEMS_CACHE_DIR"] == str(tmp_path / "work" / "chunk-0" / "flaggems_cache")
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path), "/elsewhere"])


def test_a_dead_workers_items_are_retried_one_per_process(spec, tmp_path):
    out = pool.run_pool(
        spec, [["a", "crash-x", "b"], ["crash-always"]], tmp_path / "w", prepare, retry_lost=True
    )
    assert len(out.died) == 2 and all(e.rc == -11 for e in out.died)
    assert out.results == {"a": None, "crash-x": None, "b": None}  # a was done before
    assert list(out.lost) == ["crash-always"]
    why = pool.why(out.lost["crash-always"], "test")
    assert why == "test worker exited with signal SIGSEGV: dying on crash-always"
    solos = sorted(p.name for p in (tmp_path / "w").glob("solo-*"))
    assert solos == ["solo-0", "solo-1", "solo-2"]  # not a: its line came before the crash


def test_without_retries_a_dead_workers_items_are_lost(spec, tmp_path):
    out = pool.run_pool(spec, [["a", "crash-x", "b"]], tmp_path / "w", prepare)
    assert out.results == {"a": None} and sorted(out.lost) == ["b", "crash-x"]


def test_a_worker_that_cannot_run_is_one_error_not_failed_items(spec, tmp_path):
    spec.env = {**spec.env, "ZLWORKER_BROKEN": "1"}
    with pytest.raises(ZlbenchError, match="the test worker cannot run: test worker exited "):
        pool.run_pool(spec, [["a"], ["b"]], tmp_path / "w", prepare, probe="test")
    spec.python = str(tmp_path / "no-python")
    out = pool.run_pool(spec, [["a"]], tmp_path / "w2", prepare)
    assert out.died[0].rc is None and "No such file" in out.died[0].start_error
    assert pool.why(out.died[0], "test").startswith("test worker failed to start: [Errno 2]")


def test_a_worker_past_its_timeout_is_ended_with_its_whole_group(spec, tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "GRACE_S", 0.5)
    spec.timeout_s = 1.0
    t0 = time.monotonic()
    out = pool.run_pool(spec, [["sleep-stubborn"], ["a"]], tmp_path / "w", prepare)
    assert time.monotonic() - t0 < 20
    assert out.results == {"a": None}
    (ended,) = out.died
    assert ended.killed == pool.TIMED_OUT and ended.rc == -9  # SIGTERM ignored: SIGKILL
    assert not _alive(int((tmp_path / "w" / "chunk-0" / "env.json.child").read_text()))


def test_stop_ends_the_running_workers_and_starts_no_more(spec, tmp_path):
    spec.jobs = 1
    stop = threading.Event()
    spec.stop = stop
    child = tmp_path / "w" / "chunk-0" / "env.json.child"
    threading.Thread(target=lambda: (_wait_for(child), stop.set()), daemon=True).start()
    out = pool.run_pool(spec, [["sleep-a"], ["b"]], tmp_path / "w", prepare)
    assert [(e.ids, e.killed) for e in out.died] == [(["sleep-a"], "stopped"), (["b"], "stopped")]
    assert out.results == {} and not (tmp_path / "w" / "chunk-1").exists()
    assert not _alive(int(child.read_text()))


def test_an_interrupt_ends_every_running_worker(spec, tmp_path):
    child = tmp_path / "w" / "chunk-0" / "env.json.child"

    def interrupt(n, ended, got):
        _wait_for(child)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pool.run_pool(spec, [["sleep-a"], ["b"]], tmp_path / "w", prepare, on_done=interrupt)
    assert not _alive(int(child.read_text()))


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
