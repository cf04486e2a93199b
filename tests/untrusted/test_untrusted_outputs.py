"""I/O errors never look like a verdict (issue 16): the gate's reports are written as
one set (verdict.json last, nothing on a failure), --out and batch dirs are claimed
atomically, and every I/O failure is one line with exit 2, never a traceback."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main

S = "[1024]"
SET = ("junit.xml", "report.md", "comment.md", "report.html", "verdict.json")  # the gate writes


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A FlagGems checkout in the environment: a measuring gate checks for one first."""
    (tmp_path / "fg" / "benchmark").mkdir(parents=True)
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path / "fg"))


@pytest.fixture
def passing(tmp_path):
    return write_results(tmp_path / "pass", [run_result("add", [crow("add", S, 1.0)])])


@pytest.fixture
def failing(tmp_path):
    return write_results(tmp_path / "fail", [run_result("add", [crow("add", S, 0.5)])])


def judge(bl, results, out, *more) -> int:
    return main(
        ["gate", "--baseline", str(bl), "--results", str(results), "--out", str(out), *more]
    )


def report_set(out: Path) -> dict[str, str | None]:
    return {n: (out / n).read_text() if (out / n).exists() else None for n in SET}


def no_stray_files(out: Path) -> None:
    assert not [p.name for p in out.iterdir() if p.name.startswith(".zlbench-out.")]


# --------------------------------------------------------------------------- bad --out


def test_judge_out_on_an_existing_file_is_one_line(tmp_path, bl, passing, capsys):
    out = tmp_path / "out"
    out.write_text("not a dir\n")
    assert judge(bl, passing, out) == 2
    assert "not a directory" in one_error_line(capsys)


def test_measuring_gate_out_on_an_existing_file_is_one_line(tmp_path, bl, checkout, capsys):
    out = tmp_path / "out"
    out.write_text("not a dir\n")
    assert main(["gate", "--baseline", str(bl), "--out", str(out)]) == 2
    assert "not a directory" in one_error_line(capsys)
    assert not (tmp_path / "out-2").exists()  # nothing claimed, nothing measured


def test_gate_out_inside_the_baseline_is_refused(bl, passing, capsys):
    assert judge(bl, passing, bl / "out") == 2
    assert "inside the baseline" in one_error_line(capsys)
    assert not (bl / "out").exists()


def test_read_only_out_dir_is_one_line(tmp_path, bl, passing, capsys, monkeypatch):
    def denied(*a, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", kw.get("dir"))

    # the tests run as root, where chmod does not deny: deny the temp files instead
    monkeypatch.setattr(tempfile, "mkstemp", denied)
    monkeypatch.setattr(tempfile, "mkdtemp", denied)
    out = tmp_path / "out"
    assert judge(bl, passing, out) == 2
    assert "Permission denied" in one_error_line(capsys)
    assert report_set(out) == dict.fromkeys(SET)


def test_non_utf8_ops_file_is_one_line(tmp_path, bl, passing, capsys):
    ops = tmp_path / "ops.txt"
    ops.write_bytes(b"add\n\xff\xfe caf\xe9\n")
    assert judge(bl, passing, tmp_path / "out", "--ops-file", str(ops)) == 2
    assert "UTF-8" in one_error_line(capsys)


# --------------------------------------------------------------------------- full disk


def fail_nth(monkeypatch, module, name, n):
    real = getattr(module, name)
    calls = []

    def wrapper(*a, **kw):
        calls.append(1)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*a, **kw)

    monkeypatch.setattr(module, name, wrapper)


@pytest.mark.parametrize("n", range(1, len(SET) + 1))
def test_full_disk_while_writing_leaves_no_report_without_its_verdict(
    tmp_path, bl, passing, capsys, monkeypatch, n
):
    out = tmp_path / "out"
    fail_nth(monkeypatch, os, "fsync", n)
    assert judge(bl, passing, out) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert report_set(out) == dict.fromkeys(SET)  # no PASS report.md / junit.xml alone
    no_stray_files(out)


@pytest.mark.parametrize("n", range(1, len(SET) + 1))
def test_full_disk_on_a_rerun_keeps_one_whole_set(
    tmp_path, bl, passing, failing, capsys, monkeypatch, n
):
    out = tmp_path / "out"
    assert judge(bl, passing, out) == 0
    before = report_set(out)
    capsys.readouterr()
    fail_nth(monkeypatch, os, "fsync", n)
    assert judge(bl, failing, out) == 2
    one_error_line(capsys)
    assert report_set(out) in (before, dict.fromkeys(SET))  # never FAIL files + PASS verdict


@pytest.mark.parametrize("n", range(1, len(SET) + 1))
def test_a_failed_rename_leaves_no_part_of_the_set(
    tmp_path, bl, passing, failing, capsys, monkeypatch, n
):
    out = tmp_path / "out"
    assert judge(bl, passing, out) == 0
    capsys.readouterr()
    fail_nth(monkeypatch, os, "replace", n)
    assert judge(bl, failing, out) == 2
    one_error_line(capsys)
    assert report_set(out) == dict.fromkeys(SET)


def test_full_disk_while_measuring_is_one_line(tmp_path, bl, checkout, capsys, monkeypatch):
    import zlbench.runner.batch.run as batch_run

    def no_space(config):
        raise OSError(errno.ENOSPC, "No space left on device", str(config.out_dir))

    monkeypatch.setattr(batch_run, "run_batch", no_space)
    out = tmp_path / "out"
    assert main(["gate", "--baseline", str(bl), "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert "No space left on device" in line and "Errno" not in line
    assert report_set(out) == dict.fromkeys(SET)


# --------------------------------------------------------------------------- two writers


def test_a_second_writer_into_a_held_out_refuses(tmp_path, bl, passing, capsys):
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(out)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert judge(bl, passing, out) == 2
        assert "another zlbench process" in one_error_line(capsys)
        assert report_set(out) == dict.fromkeys(SET)
    finally:
        holder.kill()
        holder.communicate()
    assert judge(bl, passing, out) == 0  # the lock died with its process


def test_concurrent_judges_into_one_out_leave_one_verdicts_files(tmp_path, bl, passing, failing):
    out = tmp_path / "out"
    code = "import sys; from zlbench.cli import main; sys.exit(main(sys.argv[1:]))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, "gate", "--baseline", str(bl),
             "--results", str(passing if i % 2 else failing), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]  # fmt: skip
    codes = []
    for p in procs:
        err = p.communicate(timeout=120)[1]
        codes.append(p.returncode)
        assert "Traceback" not in err
        if p.returncode == 2:
            assert "another zlbench process" in err
    assert set(codes) <= {0, 1, 2} and set(codes) & {0, 1}
    files = report_set(out)
    word = json.loads(files["verdict.json"])["verdict"]
    assert word in ("PASS", "FAIL")
    other = {"PASS": "FAIL", "FAIL": "PASS"}[word]
    head = files["report.md"][:400]
    assert word in head and other not in head, head
    assert f"/{word.lower()}`" in head  # report.md judged the same results dir
    assert ('failures="0"' in files["junit.xml"]) == (word == "PASS")
    no_stray_files(out)


# --------------------------------------------------------------------------- batch dirs


def _claim(path: str, barrier, queue) -> None:
    from zlbench.runner.claim import claim_batch_dir

    barrier.wait()
    queue.put(str(claim_batch_dir(Path(path), resume=False)))


def test_racing_batches_never_share_an_empty_existing_dir(tmp_path):
    ctx = multiprocessing.get_context("fork")
    racers = 8
    for i in range(10):
        path = tmp_path / f"b{i}"
        path.mkdir()  # empty and existing: the case that raced
        barrier, queue = ctx.Barrier(racers), ctx.Queue()
        procs = [
            ctx.Process(target=_claim, args=(str(path), barrier, queue)) for _ in range(racers)
        ]
        for p in procs:
            p.start()
        got = [queue.get(timeout=60) for _ in procs]
        for p in procs:
            p.join()
        assert len(set(got)) == racers, sorted(got)
        assert str(path) in got
