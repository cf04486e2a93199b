"""run_batch fails fast and honestly (issue 15): no dtype rescue in replay, shared
failures are not retried and are named once, a PASS without (all) rows is not a
PASS, a runner bug costs one op, a time budget, and the seed's columns."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.support.batch_fakes import FakeExecutor, batch_config_factory, dtypes_per_call
from zlbench.models import RunStatus, read_ops_status
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.run import run_batch

OPS = ["abs", "add", "mul", "softmax"]
LAUNCH_SIG = "SystemError in triton/backends/nvidia/driver.py:328"


@pytest.fixture
def setup(tmp_path):
    return batch_config_factory(tmp_path, OPS)


runs_of = dtypes_per_call


def baseline_dir(tmp_path, rows: dict[str, int]):
    root = tmp_path / "baseline"
    for name, n in rows.items():
        d = root / "main" / name
        d.mkdir(parents=True)
        data = {"rows": [{"op": name, "dtype": "float16", "shape": f"[{i}]"} for i in range(n)]}
        (d / "result.json").write_text(json.dumps(data))
    root.mkdir(exist_ok=True)
    return root


def test_replay_never_rescues_with_another_dtype(setup, tmp_path):
    fake = FakeExecutor({"abs": ["CRASH:-11"]})
    root = baseline_dir(tmp_path, {})
    out = run_batch(setup(fake, ops=["abs"], dtypes=["bfloat16"], replay_root=root))
    assert runs_of(fake, "abs") == [("bfloat16",), ("bfloat16",)]  # first + one retry
    st = out.statuses[0]
    assert st.status is RunStatus.CRASH and "rescue" not in st.note


def test_shared_failure_is_not_retried_and_is_named_once(setup):
    fake = FakeExecutor(default="LAUNCH")
    progress = io.StringIO()
    out = run_batch(setup(fake, progress=progress, max_retries=2))
    attempts = sorted(len(runs_of(fake, op)) for op in OPS)
    # the first two failures were retried before the third made it systemic; not after
    assert attempts == [1, 1, 2, 2], attempts
    assert all(s.signature == LAUNCH_SIG for s in out.statuses)
    info = read_batch_info(out.out_dir)
    assert [f.signature for f in info.systemic] == [LAUNCH_SIG]
    assert info.systemic[0].ops == [f"main/{op}" for op in sorted(OPS)]
    assert info.systemic[0].line.startswith("4 ops fail the same way")
    text = progress.getvalue()
    assert f"SYSTEMIC: 4 ops fail the same way under the compiler under test: {LAUNCH_SIG}" in text
    assert "failing ops (4):" in text and "  FAIL    main/softmax  SystemError" in text


def test_different_failures_are_still_retried(setup):
    fake = FakeExecutor({"abs": ["FAIL", "PASS"], "add": ["CRASH:-6", "PASS"]})
    out = run_batch(setup(fake, ops=["abs", "add"]))
    assert [s.status for s in out.statuses] == [RunStatus.PASS] * 2
    assert read_batch_info(out.out_dir).systemic == []


def test_pass_without_rows_is_a_failure(setup):
    out = run_batch(setup(FakeExecutor({"abs": ["NOROWS"]}), ops=["abs", "add"]))
    st = {s.run_name: s for s in out.statuses}
    assert st["abs"].status is RunStatus.FAIL and "measured no row" in st["abs"].note
    assert st["add"].status is RunStatus.PASS and out.exit_code == 1


def test_fewer_rows_than_the_baseline_is_partial_skip(setup, tmp_path):
    root = baseline_dir(tmp_path, {"abs": 3, "add": 2})
    out = run_batch(setup(FakeExecutor(default="PASS:2"), ops=["abs", "add"], replay_root=root))
    st = {s.run_name: s for s in out.statuses}
    assert st["abs"].status is RunStatus.FAIL
    assert "partial_skip=1: 2 of the baseline's 3 rows measured" in st["abs"].note
    assert st["add"].status is RunStatus.PASS


def test_record_pass_with_skipped_tests_is_noted_partial_skip(setup):
    # issue 30: the seed's partial_skip=N for an op whose tests partly skip
    out = run_batch(setup(FakeExecutor({"abs": ["PARTSKIP:3"]}), ops=["abs", "add"]))
    st = {s.run_name: s for s in read_ops_status(out.out_dir / "ops_status.csv")}
    assert st["abs"].status is RunStatus.PASS and out.exit_code == 0
    assert st["abs"].note == "partial_skip=3: 3 test(s) skipped"
    assert st["add"].note == ""


def test_a_runner_bug_fails_one_op_and_the_batch_goes_on(setup):
    fake = FakeExecutor({"add": ["BUG"]})
    out = run_batch(setup(fake))
    st = {s.run_name: s for s in out.statuses}
    assert st["add"].status is RunStatus.ERROR
    assert st["add"].note.startswith("internal runner error: KeyError")
    assert all(st[op].status is RunStatus.PASS for op in ("abs", "mul", "softmax"))
    log = (out.out_dir / "main" / "add" / "run.log").read_text()
    assert "Traceback" in log and "runner bug at add" in log


def test_time_budget_is_passed_on_and_stops_retries(setup):
    fake = FakeExecutor({"abs": ["CRASH:-11", "PASS"]})
    out = run_batch(setup(fake, ops=["abs"], budget_s=1e-9))
    assert fake.calls[0]["more"]["budget_s"] == 1e-9
    assert len(runs_of(fake, "abs")) == 1 and out.statuses[0].status is RunStatus.CRASH
    assert read_batch_info(out.out_dir).budget_s == 1e-9


def test_op_timeout_zero_is_no_limit(setup):
    fake = FakeExecutor()
    run_batch(setup(fake, ops=["abs"], op_timeout_s=0))
    assert fake.calls[0]["op_timeout_s"] is None


def test_ops_status_and_summary_have_the_seeds_columns(setup):
    out = run_batch(setup(FakeExecutor(default="PASS:3"), ops=["abs"]))
    st = read_ops_status(out.out_dir / "ops_status.csv")[0]
    assert (st.op_file, st.success_rows, st.replay_fallbacks, st.no_cudagraph) == (
        "test_abs.py",
        3,
        0,
        0,
    )
    header = next(csv.reader((out.out_dir / "summary.csv").read_text().splitlines()))
    assert {"tflops", "gbps", "error"} <= set(header)


def test_undated_dismissal_is_a_skip_row_and_recheck_runs_left_out_ops(tmp_path):
    config = batch_config_factory(tmp_path, ["abs", "add", "mul"], skip={"mul": "needs two GPUs"})
    (tmp_path / "ops" / "dismiss.txt").write_text("abs  # flaky on H200\n")

    def batch(out: str, **kw):
        fake = FakeExecutor()
        return run_batch(config(fake, out_dir=tmp_path / out, **kw)), fake

    out, fake = batch("plain")
    st = {s.run_name: s for s in out.statuses}
    assert (
        st["abs"].status is RunStatus.SKIP and st["abs"].note == "dismissed undated: flaky on H200"
    )
    assert st["mul"].status is RunStatus.SKIP and runs_of(fake, "abs") == runs_of(fake, "mul") == []
    out, fake = batch("recheck", recheck_left_out=True)
    assert all(s.status is RunStatus.PASS for s in out.statuses)
    assert len(runs_of(fake, "abs")) == len(runs_of(fake, "mul")) == 1


def test_budget_from_recorded_durations(setup):
    fake = FakeExecutor()
    durations = {"main/abs": 10.0, "main/add": 20.0}
    cfg = setup(fake, ops=["abs", "add"], dtypes=["float16"], durations=durations)
    cfg.budget_factor = 2.0
    out = run_batch(cfg)
    # one GPU, one dtype: 2 x (30 s of ops + one 23 s process start) + 23 s of slack
    assert fake.calls[0]["more"]["budget_s"] == 2 * (30 + 23) + 23
    assert read_batch_info(out.out_dir).budget_s == 129


def test_no_recorded_duration_no_budget(setup):
    fake = FakeExecutor()
    run_batch(setup(fake, ops=["abs"], budget_factor=2.0))
    assert "budget_s" not in fake.calls[0]["more"]


def test_use_flagtune_is_set_explicitly_in_every_process(setup, tmp_path):
    cases = [({"PATH": "/bin"}, None, "0"), ({"USE_FLAGTUNE": "1"}, None, "1")]
    cases.append(({"USE_FLAGTUNE": "1"}, "0", "0"))  # the gate passes its baseline's
    for i, (env, asked, used) in enumerate(cases):
        fake = FakeExecutor()
        cfg = setup(fake, ops=["abs"], env=env, use_flagtune=asked, out_dir=tmp_path / f"{i}")
        run_batch(cfg)
        assert fake.calls[0]["env"]["USE_FLAGTUNE"] == used, (env, asked)


def test_a_failure_shared_across_shards_is_systemic_in_the_merge(tmp_path):
    """Two ops fail one way in each of two shards: 2 < 3 per shard, 4 merged."""
    from zlbench.runner.batch.merge import merge_batches

    ops = ["a1", "a2", "a3", "a4", "a5", "a6", "ok1", "ok2"]  # a1-a4 fail: 2 per shard
    config = batch_config_factory(tmp_path, ops)
    fake = FakeExecutor({op: ["LAUNCH"] for op in ops[:4]})
    shards = []
    for k in (1, 2):
        cfg = config(fake, out_dir=tmp_path / f"s{k}", shard=(k, 2))
        shards.append(run_batch(cfg).out_dir)
    per_shard = [len(read_batch_info(s).systemic) for s in shards]
    out, _, _ = merge_batches(shards, tmp_path / "merged")
    (merged,) = read_batch_info(out).systemic
    assert merged.signature == LAUNCH_SIG and merged.ops == [f"main/{op}" for op in ops[:4]]
    assert per_shard == [0, 0]  # two of them in each shard: below the threshold there


def test_replay_starts_an_op_with_its_baseline_dtypes_when_the_asked_one_is_not_among_them(
    setup, tmp_path
):
    """embedding rejects bfloat16 and its baseline rows are float16: on the H200 every
    replay failed it once and fell back to its defaults; now it starts right."""
    fake = FakeExecutor({"abs": ["PASS:2"], "add": ["PASS:1"]})
    root = baseline_dir(tmp_path, {"abs": 2})  # float16 rows; add has no result.json
    out = run_batch(setup(fake, ops=["abs", "add"], dtypes=["bfloat16"], replay_root=root))
    assert runs_of(fake, "abs") == [("float16",)]
    assert runs_of(fake, "add") == [("bfloat16",)]  # unknown baseline: as asked
    assert all(s.attempts == 1 for s in out.statuses)


def test_first_dtypes_keeps_the_asked_ones_unless_the_baseline_shares_none():
    from zlbench.runner.batch.attempts import first_dtypes

    assert first_dtypes(("bfloat16",), ("float32", "float16")) == ("float32", "float16")
    assert first_dtypes(("bfloat16", "float16"), ("float16",)) == ("bfloat16", "float16")
    assert first_dtypes((), ("float16",)) == ()  # the op's defaults asked (record mode)
    assert first_dtypes(("bfloat16",), ()) == ("bfloat16",)
    # rows of a dtype FlagGems' --dtypes cannot name (scaled_mm's float8): its own dtypes
    assert first_dtypes(("bfloat16",), ("float8_e4m3fn",)) == ()


def test_only_dtypes_flaggems_can_name_are_asked_for():
    from zlbench.runner.batch.attempts import nameable

    assert nameable(("float16", "bfloat16")) == ("float16", "bfloat16")
    assert nameable(("int32", "bool", "complex64")) == ("int32", "bool", "complex64")
    assert nameable(("float8_e4m3fn",)) == () and nameable(("float16", "float8_e5m2")) == ()
