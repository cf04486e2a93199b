"""run_batch with a scripted fake execute_plan: retry, dtype fallback, rescue, resume,
.complete, dismissed/skipped ops, GPU dealing, exit codes."""

from __future__ import annotations

import csv
import json

import pytest

from tests.support.batch_fakes import (
    FakeExecutor,
    batch_config_factory,
    dtypes_per_call,
    make_inventory,
)
from zlbench.errors import ZlbenchError
from zlbench.models import RunStatus, read_ops_status
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.plan import EmptyShardError, plan_selection
from zlbench.runner.batch.run import run_batch
from zlbench.runner.batch.shard import assign_gpus, shard

OPS = ["abs", "add", "mul", "softmax", "mm@test_mm.py", "mm@test_mm_perf.py", "skipme"]


@pytest.fixture
def setup(tmp_path):
    return batch_config_factory(tmp_path, OPS, skip={"skipme": "needs two GPUs"})


attempts_of = dtypes_per_call


def by_name(outcome):
    return {s.run_name: s for s in outcome.statuses}


def test_all_pass_on_two_gpus(setup):
    fake = FakeExecutor()
    cfg = setup(fake, gpus=["0", "1"], per_process=3, op_timeout_s=12.5)
    out = run_batch(cfg)
    assert out.exit_code == 0
    st = by_name(out)
    ran = ["abs", "add", "mm__at__test_mm.py", "mm__at__test_mm_perf.py", "mul", "softmax"]
    assert sorted(n for n, s in st.items() if s.note != "unconditional skip: needs two GPUs") == ran
    assert st["skipme"].status is RunStatus.SKIP and st["skipme"].run_dir == ""
    assert out.counts["PASS"] == 6 and out.counts["SKIP"] == 1
    assert out.summary_rows == 12
    # GPU dealing follows the stable hash; every op ran once on its GPU
    dealt = assign_gpus([f"main/{n}" for n in ran], ["0", "1"])
    for call in fake.calls:
        assert [f"main/{e[0]}" for e in call["entries"]] == dealt[call["gpu"]]
        assert call["per_process"] == 3 and call["op_timeout_s"] == 12.5
    for name in ran:
        assert (out.out_dir / "main" / name / ".complete").is_file()
        assert st[name].gpu in ("0", "1") and st[name].run_dir == f"main/{name}"
    assert read_ops_status(out.out_dir / "ops_status.csv") == out.statuses
    with open(out.out_dir / "summary.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 12
    info = read_batch_info(out.out_dir)
    assert info.mode == "record" and info.counts["PASS"] == 6 and info.rows == 12
    assert info.skipped == ["main/skipme"] and info.environments["main"].gpu_model
    lines = cfg.progress.getvalue().splitlines()
    done = [ln for ln in lines if ln.startswith("[")]
    assert len(done) == 6 and done[-1].startswith("[6/6] PASS")
    assert "rows=2" in done[0] and "ETA" in done[0]
    assert lines[-1].startswith("total       7   rows=12")


def test_crash_is_retried_and_previous_attempt_kept(setup):
    fake = FakeExecutor({"abs": ["CRASH:-11", "PASS"]})
    out = run_batch(setup(fake, ops=["abs", "add"]))
    st = by_name(out)["abs"]
    assert (st.status, st.attempts) == (RunStatus.PASS, 2)
    assert "CRASH rc=-11" in st.note and "retry PASS" in st.note
    assert (out.out_dir / ".attempts" / "main" / "abs" / "1" / "run.log").is_file()
    assert (out.out_dir / "main" / "abs" / ".complete").is_file()
    assert out.exit_code == 0


def test_same_rc_twice_stops_then_dtype_rescue(setup):
    fake = FakeExecutor({"add": ["FAIL", "FAIL", "PASS:1"]})
    cfg = setup(fake, ops=["add"], dtypes=["bfloat16"])
    out = run_batch(cfg)
    # the seed's rescue (issue 30): the op's own default dtypes
    assert attempts_of(fake, "add") == [("bfloat16",), ("bfloat16",), ()]
    st = by_name(out)["add"]
    assert st.status is RunStatus.PASS and st.dtype_used == "float16" and st.attempts == 3
    assert "rescue PASS [(defaults)]" in st.note
    assert "main/add -> rescue [defaults] (nothing passed (same rc 1 twice))" in (
        cfg.progress.getvalue()
    )


def test_unsupported_dtype_falls_back_to_op_defaults(setup):
    fake = FakeExecutor({"softmax": ["UNSUPPORTED", "PASS:3"]})
    cfg = setup(fake, ops=["softmax"], dtypes=["bfloat16"])
    out = run_batch(cfg)
    assert attempts_of(fake, "softmax") == [("bfloat16",), ()]
    st = by_name(out)["softmax"]
    assert (st.status, st.rows, st.dtype_used) == (RunStatus.PASS, 3, "float16")
    assert st.note.startswith("FAIL rc=1 [bfloat16]; fallback PASS [(defaults)]")
    assert "fallback [defaults] (dtype bfloat16 not supported by the op)" in cfg.progress.getvalue()


def test_timeout_is_not_retried(setup):
    fake = FakeExecutor({"mul": ["TIMEOUT"]})
    out = run_batch(setup(fake, ops=["mul", "abs"]))
    assert attempts_of(fake, "mul") == [()]
    st = by_name(out)["mul"]
    assert st.status is RunStatus.TIMEOUT and st.attempts == 1
    assert not (out.out_dir / "main" / "mul" / ".complete").exists()
    assert out.exit_code == 1


def test_persistent_crash_retries_then_rescue_then_fails(setup):
    fake = FakeExecutor({"abs": ["CRASH:-11"]})
    out = run_batch(setup(fake, ops=["abs", "add"]))
    assert attempts_of(fake, "abs") == [(), (), ("float32",)]
    st = by_name(out)["abs"]
    assert (st.status, st.rc, st.attempts) == (RunStatus.CRASH, -11, 3)
    assert sorted(p.name for p in (out.out_dir / ".attempts/main/abs").iterdir()) == ["1", "2"]
    assert out.exit_code == 1


def test_resume_skips_complete_ops_and_reruns_failed(setup):
    first = run_batch(setup(FakeExecutor({"abs": ["FAIL"], "mul": ["TIMEOUT"]}), max_retries=0))
    assert first.exit_code == 1
    fake = FakeExecutor()
    again = run_batch(setup(fake, resume=True))
    assert again.out_dir == first.out_dir
    assert sorted(e[0] for c in fake.calls for e in c["entries"]) == ["abs", "mul"]
    st = by_name(again)
    assert all(s.status in (RunStatus.PASS, RunStatus.SKIP) for s in st.values())
    assert st["add"] == by_name(first)["add"]  # kept as it was
    assert (again.out_dir / ".attempts/main/abs/previous/run.log").is_file()
    assert again.exit_code == 0 and again.summary_rows == 12
    # resuming a finished batch runs nothing and measures nothing new, still exit 0
    fake3 = FakeExecutor()
    third = run_batch(setup(fake3, resume=True))
    assert fake3.calls == [] and third.exit_code == 0 and third.summary_rows == 12


def test_resume_keep_failed_moves_on_past_failed_and_timed_out_ops(setup):
    """A screen resumed across sessions: --keep-failed keeps FAIL/TIMEOUT/CRASH as they
    ended (not run again, their run dirs untouched); ops never finished still run."""
    script = {"abs": ["FAIL"], "mul": ["TIMEOUT"], "add": ["CRASH:-11"]}
    first = run_batch(setup(FakeExecutor(script), max_retries=0, ops=["abs", "mul", "add"]))
    before = by_name(first)
    assert {n: s.status for n, s in before.items()} == {
        "abs": RunStatus.FAIL,
        "mul": RunStatus.TIMEOUT,
        "add": RunStatus.CRASH,
    }
    fake = FakeExecutor()
    again = run_batch(
        setup(fake, resume=True, keep_failed=True, ops=["abs", "mul", "add", "softmax"])
    )
    assert sorted(e[0] for c in fake.calls for e in c["entries"]) == ["softmax"]
    st = by_name(again)
    assert {n: st[n] for n in ("abs", "mul", "add")} == before
    assert st["softmax"].status is RunStatus.PASS
    assert (again.out_dir / "main" / "abs").is_dir()  # left where it was, not archived
    assert not (again.out_dir / ".attempts" / "main" / "abs" / "previous").exists()
    assert again.exit_code == 1  # the kept failures still fail the batch
    # without --keep-failed the same resume runs them again
    fake3 = FakeExecutor()
    run_batch(setup(fake3, resume=True, ops=["abs", "mul", "add", "softmax"]))
    assert sorted(e[0] for c in fake3.calls for e in c["entries"]) == ["abs", "add", "mul"]


def test_out_dir_is_claimed_not_reused(setup):
    a = run_batch(setup(FakeExecutor(), ops=["abs"]))
    b = run_batch(setup(FakeExecutor(), ops=["abs"]))
    assert b.out_dir.name == a.out_dir.name + "-2"


def test_nothing_measured_exits_2(setup):
    out = run_batch(setup(FakeExecutor(default="NOROWS"), ops=["abs"]))
    assert out.exit_code == 2 and out.summary_rows == 0


def test_replay_mode_points_at_records(setup, tmp_path):
    root = tmp_path / "baseline"
    root.mkdir()
    fake = FakeExecutor()
    out = run_batch(setup(fake, ops=["mm@test_mm.py"], replay_root=root, timing="kernel"))
    (name, _, mode, records) = fake.calls[0]["entries"][0]
    assert (name, mode) == ("mm__at__test_mm.py", "replay")
    assert records == str(root.resolve() / "main" / "mm__at__test_mm.py" / "autotune_records")
    assert fake.calls[0]["timing"] == "kernel"
    assert read_batch_info(out.out_dir).mode == "replay"


def test_dismissed_ops_are_skip_rows_and_not_run(setup, tmp_path):
    (tmp_path / "ops" / "dismiss.txt").write_text("add  # 2025-01-02 hangs at 4096\n")
    fake = FakeExecutor()
    out = run_batch(setup(fake))
    assert "add" not in [e[0] for c in fake.calls for e in c["entries"]]
    st = by_name(out)["add"]
    assert st.status is RunStatus.SKIP and st.note == "dismissed 2025-01-02: hangs at 4096"
    info = read_batch_info(out.out_dir)
    assert [d.key for d in info.dismissed] == ["main/add"]


def test_sharded_batches_cover_the_selection(setup, tmp_path):
    seen = []
    for k in (1, 2, 3):
        fake = FakeExecutor()
        run_batch(setup(fake, shard=(k, 3), out_dir=tmp_path / f"s{k}"))
        seen += [e[0] for c in fake.calls for e in c["entries"]]
    assert len(seen) == len(set(seen)) == 6


def test_ops_status_is_complete_after_every_op(setup, tmp_path):
    inner = FakeExecutor()
    snapshots = []

    def executor(plan, **kw):
        def on_done(entry, status, result):
            kw_done(entry, status, result)
            snapshots.append(read_ops_status(tmp_path / "out" / "ops_status.csv"))

        kw_done = kw.pop("on_op_done")
        return inner(plan, on_op_done=on_done, **kw)

    run_batch(setup(executor, ops=["abs", "add", "mul"]))
    assert [len(s) for s in snapshots] == [1, 2, 3]


@pytest.mark.parametrize(
    "kw,text",
    [
        ({"ops": ["nosuch"]}, "unknown op 'nosuch'"),
        ({"ops": ["mm"]}, "mm@test_mm.py"),
        ({"ops": ["abs"], "repos": ["vllm"]}, "inventory_vllm.csv is missing"),
        ({"ops": ["vllm:abs"]}, "inventory_vllm.csv is missing"),
        ({"ops": ["abs"], "restrict_to": {"main/add"}}, "empty selection"),
        ({"ops": ["skipme"]}, "1 skipped unconditionally"),
        ({"ops": ["abs"], "shape_file": "/nonexistent.yaml"}, "shape file not found"),
        ({"ops": ["abs"], "all_ops": True}, "exactly one of"),
        ({"ops": ["abs", "add"], "shard": (3, 3)}, "shard 3/3 has no op"),
    ],
)
def test_bad_input_is_one_line(setup, kw, text):
    with pytest.raises(ZlbenchError) as e:
        run_batch(setup(FakeExecutor(), **kw))
    assert text in str(e.value) and "\n" not in str(e.value)


def test_restrict_to_intersects(setup):
    fake = FakeExecutor()
    out = run_batch(setup(fake, restrict_to={"main/abs", "main/softmax", "main/gone"}))
    assert sorted(s.run_name for s in out.statuses) == ["abs", "softmax"]
    assert json.loads((out.out_dir / "batch.json").read_text())["selection"]["restricted"]


def test_ctrl_c_reaches_every_worker(setup):
    """SIGINT lands in the main thread; each worker thread's executor is interrupted
    too (so the real execute_plan kills its pytest process group)."""
    import os
    import signal
    import threading
    import time

    interrupted = []
    started = threading.Semaphore(0)

    def executor(plan, **kw):
        started.release()
        try:
            while True:
                time.sleep(0.01)
        except KeyboardInterrupt:
            interrupted.append(threading.current_thread().name)
            raise

    sent = threading.Event()

    def ctrl_c() -> None:  # once both workers run: a fixed delay raced a loaded machine
        for _ in range(2):
            assert started.acquire(timeout=60)
        time.sleep(0.05)
        sent.set()
        os.kill(os.getpid(), signal.SIGINT)

    def only_ours(signum, frame):  # a stray SIGINT/SIGTERM of an earlier test: ignored
        if sent.is_set():
            raise KeyboardInterrupt

    old = {sig: signal.signal(sig, only_ours) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        timer = threading.Thread(target=ctrl_c, daemon=True)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run_batch(setup(executor, gpus=["0", "1"]))
        timer.join()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    assert sorted(interrupted) == ["gpu-0", "gpu-1"]


def test_resume_refuses_a_different_measurement(setup):
    first = run_batch(setup(FakeExecutor({"abs": ["FAIL"]}), ops=["abs"], dtypes=["bfloat16"]))
    with pytest.raises(ZlbenchError, match=r"cannot resume .*dtypes=\['bfloat16'\], this run"):
        run_batch(setup(FakeExecutor(), ops=["abs"], resume=True))
    with pytest.raises(ZlbenchError, match="timing='cudagraph'"):
        run_batch(
            setup(FakeExecutor(), ops=["abs"], resume=True, dtypes=["bfloat16"], timing="kernel")
        )
    again = run_batch(setup(FakeExecutor(), ops=["abs"], resume=True, dtypes=["bfloat16"]))
    assert again.out_dir == first.out_dir and again.exit_code == 0


# --------------------------------------------------------------------------- plan_selection


@pytest.fixture
def few_runnable(tmp_path):
    """Two runnable ops, four dismissed, two skipped unconditionally."""
    ops_dir = tmp_path / "ops"
    ops = ["abs", "add", "d1", "d2", "d3", "d4", "s1", "s2"]
    make_inventory(ops_dir, "main", ops, skip={"s1": "no", "s2": "no"})
    (ops_dir / "dismiss.txt").write_text(
        "".join(f"{d}  # 2025-01-02 broken\n" for d in ("d1", "d2", "d3", "d4"))
    )

    def plan(k, n):
        return plan_selection(
            BatchConfig(
                out_dir=tmp_path / "o",
                flaggems_dirs={},
                ops_dir=ops_dir,
                all_ops=True,
                shard=(k, n),
            )
        )

    return plan


@pytest.mark.parametrize("n", [1, 2])
def test_every_shard_gets_a_runnable_op_and_left_out_ops_once(few_runnable, n):
    """Runnable ops are sharded on their own: with 6 left-out ops among 8, dealing them
    all together could give a shard nothing but dismissed/skipped ops."""
    plans = [few_runnable(k, n) for k in range(1, n + 1)]
    assert all(p.ops for p in plans)
    assert sorted(o.run_name for p in plans for o in p.ops) == ["abs", "add"]
    dismissed = sorted(o.run_name for p in plans for o, _ in p.dismissed)
    assert dismissed == ["d1", "d2", "d3", "d4"]  # each in exactly one shard
    assert sorted(o.run_name for p in plans for o in p.skipped) == ["s1", "s2"]
    runnable = sorted(f"main/{op}" for op in ("abs", "add"))
    assert [sorted(o.key for o in p.ops) for p in plans] == [
        sorted(shard(runnable, k, n)) for k in range(1, n + 1)
    ]


def test_shards_beyond_the_runnable_ops_are_empty(few_runnable):
    """N = 4 > 2 runnable ops: shards 1-2 measure and carry every left-out op (SKIP
    rows there); shards 3-4 have no op at all, an EmptyShardError (a ZlbenchError)."""
    plans = [few_runnable(k, 4) for k in (1, 2)]
    assert [len(p.ops) for p in plans] == [1, 1]
    assert sum(len(p.dismissed) + len(p.skipped) for p in plans) == 6
    for k in (3, 4):
        with pytest.raises(EmptyShardError, match=f"shard {k}/4 has no op to run .2 runnable"):
            few_runnable(k, 4)
    assert issubclass(EmptyShardError, ZlbenchError)


def test_left_out_ops_of_a_shard_are_skip_rows(setup, tmp_path):
    (tmp_path / "ops" / "dismiss.txt").write_text("add  # 2025-01-02 hangs at 4096\n")
    statuses = []
    for k in (1, 2, 3):
        out = run_batch(setup(FakeExecutor(), shard=(k, 3), out_dir=tmp_path / f"s{k}"))
        assert [s for s in out.statuses if s.status is RunStatus.PASS], k
        statuses += out.statuses
    names = sorted(s.run_name for s in statuses)
    assert names == sorted({s.run_name for s in statuses})  # no op in two shards
    skips = {s.run_name: s.note for s in statuses if s.status is RunStatus.SKIP}
    assert skips == {
        "add": "dismissed 2025-01-02: hangs at 4096",
        "skipme": "unconditional skip: needs two GPUs",
    }


def test_batch_json_records_the_shape_file_sha256(setup, tmp_path):
    import hashlib

    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("abs:\n  shapes:\n  - [4, 8]\n")
    out = run_batch(setup(FakeExecutor(), ops=["abs"], shape_file=str(shapes)))
    want = hashlib.sha256(shapes.read_bytes()).hexdigest()
    assert read_batch_info(out.out_dir).shape_file_sha256 == want
    plain = run_batch(setup(FakeExecutor(), ops=["abs"], out_dir=tmp_path / "plain"))
    assert read_batch_info(plain.out_dir).shape_file_sha256 is None
