"""BatchRun's collaborators one at a time (runner/batch/: files, resume, workers,
outcomes, partmerge), without a whole batch; the batch tests cover them together."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from tests.support.batch_fakes import FakeExecutor
from zlbench.errors import ZlbenchError
from zlbench.models import OpStatus, RunStatus, read_ops_status
from zlbench.protocol.layout import COMPLETE, GPU_TURNS_CSV, OPS_STATUS, RUN_LOG
from zlbench.protocol.turn import GPU_SHARE_VAR, GPU_TURN_LOG_VAR, GPU_TURN_VAR, TURN_LOG_HEADER
from zlbench.runner.batch.attempts import OpAttempts
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.files import BatchFiles, batch_info
from zlbench.runner.batch.outcomes import AttemptOutcomes
from zlbench.runner.batch.partmerge import PartsMerge
from zlbench.runner.batch.resume import Resume, check_resumable, left_out
from zlbench.runner.batch.retry import NextAttempt
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.batch.workers import SlotWorkers, pass_env
from zlbench.runner.catalog.dismiss import DismissEntry
from zlbench.runner.catalog.select import OpSelection, SelectedOp


def sel(name: str, part=None) -> SelectedOp:
    run_name = f"{name}~{part[0]}of{part[1]}" if part else name
    return SelectedOp("main", name, run_name, (f"t.py::{name}",), part=part,
                      whole=name if part else "")  # fmt: skip


def status(op: SelectedOp, st: RunStatus = RunStatus.PASS, **kw) -> OpStatus:
    return OpStatus(repo=op.repo, op=op.op, run_name=op.run_name, status=st, **kw)


def config(tmp_path: Path, executor=None, **kw) -> BatchConfig:
    kw.setdefault("progress", io.StringIO())
    return BatchConfig(
        out_dir=tmp_path,
        ops_dir=tmp_path,
        flaggems_dirs={"main": tmp_path},
        executor=executor,
        env={},
        **kw,
    )


def track(out: Path, op: SelectedOp) -> OpAttempts:
    return OpAttempts(op, out / op.repo / op.run_name, "0", ("float16",))


# --------------------------------------------------------------------------- files


def test_files_write_a_final_op_its_complete_marker_csv_row_and_done_line(tmp_path):
    stream = io.StringIO()
    files = BatchFiles(tmp_path, stream, time.monotonic())
    files.total = 2
    a, b = sel("a"), sel("b")
    files.op_final(a.key, status(a), tmp_path / "main" / "a")
    files.op_final(b.key, status(b, RunStatus.FAIL, rc=1), tmp_path / "main" / "b")
    assert (tmp_path / "main" / "a" / COMPLETE).read_text() == "PASS\n"
    assert not (tmp_path / "main" / "b").exists()  # no .complete for a FAIL
    assert [s.run_name for s in read_ops_status(tmp_path / OPS_STATUS)] == ["a", "b"]
    assert files.done == 2 and "[2/2]" in stream.getvalue()


def test_files_take_turns_only_when_a_gpu_is_shared(tmp_path):
    files = BatchFiles(tmp_path, None, time.monotonic())
    with files.turns(1) as turn_dir:
        assert turn_dir is None
    assert not (tmp_path / GPU_TURNS_CSV).exists()
    with files.turns(2) as turn_dir:
        assert Path(turn_dir).is_dir()
    assert not Path(turn_dir).exists()  # removed with the workers' end
    assert (tmp_path / GPU_TURNS_CSV).read_text() == TURN_LOG_HEADER + "\n"
    assert files.turn_lines(1, 1.0) == []


# --------------------------------------------------------------------------- resume


def test_left_out_ops_are_skip_rows_with_why():
    d, s = sel("d"), SelectedOp("main", "s", "s", (), skip="needs 2 GPUs")
    entry = DismissEntry(op="d", repo=None, date=None, reason="flaky", line=1)
    rows = left_out(OpSelection(dismissed=[(d, entry)], skipped=[s]))
    assert {k: (r.status, r.note) for k, r in rows.items()} == {
        d.key: (RunStatus.SKIP, f"dismissed {entry.when}: flaky"),
        s.key: (RunStatus.SKIP, "unconditional skip: needs 2 GPUs"),
    }


def test_resume_keeps_complete_and_kept_failed_ops_and_tracks_the_rest(tmp_path):
    a, b, c = sel("a"), sel("b"), sel("c")
    (tmp_path / "main" / "a").mkdir(parents=True)
    (tmp_path / "main" / "a" / COMPLETE).write_text("PASS\n")
    write_ops_status(tmp_path, [status(a, rows=3), status(b, RunStatus.FAIL, rc=1)])
    final: dict[str, OpStatus] = {}
    cfg = config(tmp_path, resume=True, keep_failed=True)
    todo = Resume(cfg, tmp_path, final).tracks({"0": [a, b, c]}, {"0": "0"})
    assert [t.sel.run_name for t in todo["0"]] == ["c"]
    assert (final[a.key].rows, final[b.key].status) == (3, RunStatus.FAIL)
    fresh: dict[str, OpStatus] = {}
    todo = Resume(config(tmp_path), tmp_path, fresh).tracks({"0": [a, b, c]}, {"0": "0"})
    assert [t.sel.run_name for t in todo["0"]] == ["a", "b", "c"] and fresh == {}


def test_resume_runs_the_ops_an_earlier_run_cut_after_the_ops_not_started(tmp_path):
    # the stop of the last call cut b and d in flight (run.log, no .complete): a resumed
    # call starts with the ops it has not tried yet, the cut ones last, in their order
    a, b, c, d, e = (sel(n) for n in "abcde")
    for op in (b, d):
        run_dir = tmp_path / "main" / op.run_name
        run_dir.mkdir(parents=True)
        (run_dir / RUN_LOG).write_text("ZLBENCH_OP_BEGIN\n")
    (tmp_path / "main" / "a").mkdir()
    (tmp_path / "main" / "a" / COMPLETE).write_text("PASS\n")
    (tmp_path / "main" / "a" / RUN_LOG).write_text("ZLBENCH_OP_END\n")
    cfg = config(tmp_path, resume=True, keep_failed=True)
    todo = Resume(cfg, tmp_path, {}).tracks({"0": [a, b, c], "1": [d, e]}, {"0": "0", "1": "0"})
    assert {k: [t.sel.run_name for t in v] for k, v in todo.items()} == {
        "0": ["c", "b"],
        "1": ["e", "d"],
    }
    # without --resume nothing is kept and the order is the deal's
    (tmp_path / "main" / "c").mkdir()
    (tmp_path / "main" / "c" / RUN_LOG).write_text("ZLBENCH_OP_BEGIN\n")
    todo = Resume(config(tmp_path), tmp_path, {}).tracks({"0": [a, b, c]}, {"0": "0"})
    assert [t.sel.run_name for t in todo["0"]] == ["a", "b", "c"]


def test_resume_refuses_a_batch_measured_another_way(tmp_path):
    sel_ = OpSelection(ops=[sel("a")])
    old = batch_info(config(tmp_path, dtypes=["float16"]), sel_)
    check_resumable(None, old, tmp_path)
    check_resumable(old, old, tmp_path)
    new = batch_info(config(tmp_path, dtypes=["float32"]), sel_)
    with pytest.raises(ZlbenchError, match="cannot resume .* dtypes="):
        check_resumable(old, new, tmp_path)


# --------------------------------------------------------------------------- workers


def test_workers_hand_every_attempt_on_and_rerun_the_retried(tmp_path):
    fake = FakeExecutor({"a": ["FAIL", "PASS"]})
    cfg = config(tmp_path, fake)
    seen = []

    def on_attempt(t, st, result):
        seen.append((t.sel.run_name, st.status))
        t.next = None
        if st.status is RunStatus.FAIL:  # one more attempt, as the retry rules would give
            t.attempts.append(object())
            t.next = NextAttempt(("float32",), "retry", "")

    todo = {"0": [track(tmp_path, sel("a")), track(tmp_path, sel("b"))]}
    SlotWorkers(cfg, tmp_path, {"0": "0"}, on_attempt, None, time.monotonic()).run(todo)
    assert seen == [("a", RunStatus.FAIL), ("b", RunStatus.PASS), ("a", RunStatus.PASS)]
    assert [c["entries"][0][:2] for c in fake.calls] == [("a", ("float16",)), ("a", ("float32",))]
    assert (tmp_path / ".attempts" / "main" / "a" / "1").is_dir()  # the first, kept


def test_a_pass_environment_names_its_gpu_share_and_turn(tmp_path):
    env = pass_env(config(tmp_path, gpu_share=2), "3", str(tmp_path / "turns"), tmp_path)
    assert (env["CUDA_VISIBLE_DEVICES"], env[GPU_SHARE_VAR]) == ("3", "2")
    assert env[GPU_TURN_VAR] == str(tmp_path / "turns" / "gpu-3.lock")
    assert GPU_TURN_VAR not in pass_env(config(tmp_path), "", None, tmp_path)


def test_the_turn_log_is_named_absolute_from_a_relative_out(tmp_path, monkeypatch):
    # the processes run in the FlagGems checkout: a relative path would name a file there
    monkeypatch.chdir(tmp_path)
    env = pass_env(config(tmp_path, gpu_share=3), "0", "turns", Path("runs/full"))
    assert env[GPU_TURN_LOG_VAR] == str(tmp_path / "runs" / "full" / GPU_TURNS_CSV)


# --------------------------------------------------------------------------- outcomes


def test_an_attempt_is_retried_or_made_final(tmp_path):
    stream = io.StringIO()
    files = BatchFiles(tmp_path, stream, time.monotonic())
    outcomes = AttemptOutcomes(config(tmp_path), files, None, time.monotonic())
    t = track(tmp_path, sel("a"))
    outcomes.attempt_done(t, status(t.sel, RunStatus.FAIL, rc=1), None)
    assert t.next is not None and files.final == {}  # another attempt: nothing final
    outcomes.attempt_done(t, status(t.sel, RunStatus.PASS, rows=2), None)
    assert t.next is None and files.final[t.sel.key].status is RunStatus.PASS
    assert files.final[t.sel.key].attempts == 2


def test_a_spent_budget_stops_the_retries(tmp_path):
    files = BatchFiles(tmp_path, None, time.monotonic())
    outcomes = AttemptOutcomes(config(tmp_path), files, 1.0, time.monotonic() - 5)
    assert outcomes.spent()
    t = track(tmp_path, sel("a"))
    outcomes.attempt_done(t, status(t.sel, RunStatus.FAIL, rc=1), None)
    assert t.next is None and files.final[t.sel.key].status is RunStatus.FAIL


# --------------------------------------------------------------------------- partmerge


def test_parts_not_all_final_stay_parts(tmp_path):
    p1, p2 = sel("big", (1, 2)), sel("big", (2, 2))
    files = BatchFiles(tmp_path, None, time.monotonic())
    files.final[p1.key] = status(p1)
    PartsMerge([p1, p2, sel("a")], files, None).merge_all()
    assert list(files.final) == [p1.key]
    assert not (tmp_path / "main" / "big").exists()
