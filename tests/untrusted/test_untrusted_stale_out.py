"""A gate killed while it writes its reports leaves its temp dir (``.zlbench-out.*``, a
whole report set) in ``--out`` (issue 26: 22): the next write into that dir removes
the temp dirs of every dead writer, so kills never pile them up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from zlbench.runner.claim import TMP_PREFIX, write_file_set

FILES = {"report.md": "# r\n", "verdict.json": "{}\n"}

# Writes a set into argv[1] and hangs in its fsync after the first file: killed there.
HANG = textwrap.dedent(
    """
    import os, sys, time
    from zlbench.runner import claim
    real = os.fsync
    def hang(fd):
        real(fd)
        print("writing", flush=True)
        time.sleep(600)
    claim.os.fsync = hang
    files = {"report.md": "x" * 1000, "verdict.json": "{}"}
    claim.write_file_set(sys.argv[1], files, "verdict.json")
    """
)


def temp_dirs(out):
    return sorted(p.name for p in out.iterdir() if p.name.startswith(TMP_PREFIX))


def killed_mid_write(out) -> None:
    """A writer process SIGKILLed (by its own pid) while its temp dir holds a report."""
    proc = subprocess.Popen([sys.executable, "-c", HANG, str(out)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"writing"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


def test_temp_dirs_of_killed_writers_are_removed_by_the_next_write(tmp_path):
    out = tmp_path / "out"
    for _ in range(3):
        killed_mid_write(out)
        assert len(temp_dirs(out)) == 1  # a kill leaves one; the next writer removed it
    write_file_set(out, FILES, "verdict.json")
    assert temp_dirs(out) == []
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "verdict.json"]


def test_old_style_and_odd_leftovers_are_removed_too(tmp_path):
    """Temp dirs named before the writer's pid was in the name (``.zlbench-out.<rand>``),
    a file or a link with the prefix: no live writer can own them while the dir is held."""
    out = tmp_path / "out"
    (out / f"{TMP_PREFIX}abc123").mkdir(parents=True)
    (out / f"{TMP_PREFIX}abc123" / "report.md").write_text("stale")
    (out / f"{TMP_PREFIX}file").write_text("stale")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (out / f"{TMP_PREFIX}link").symlink_to(outside)
    write_file_set(out, FILES, "verdict.json")
    assert temp_dirs(out) == []
    assert (outside / "keep").read_text() == "keep"  # a link is removed, never followed


def test_a_temp_dir_of_this_process_is_left_alone(tmp_path):
    """Another thread of this process may be writing it."""
    out = tmp_path / "out"
    mine = out / f"{TMP_PREFIX}{os.getpid()}.inflight"
    mine.mkdir(parents=True)
    write_file_set(out, FILES, "verdict.json")
    assert temp_dirs(out) == [mine.name]
