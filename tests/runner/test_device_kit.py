"""benchmarks/device_kit.sh: the FlagGems kit is a git checkout at the commit asked for
(so every result names it), a commit the repo lacks is one line and exit 2, and the
sizes are checked against the device's 64 MiB."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "device_kit.sh"


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@pytest.fixture
def world(tmp_path):
    """A FlagGems repo of two commits and a zlbench checkout to make the kit in."""
    fg = tmp_path / "fg"
    fg.mkdir()
    _git(fg, "init", "-q")
    (fg / "src").mkdir()
    (fg / "src" / "a.py").write_text("A = 1\n")
    _git(fg, "add", ".")
    _git(fg, "commit", "-q", "-m", "one")
    first = _git(fg, "rev-parse", "HEAD")
    (fg / "src" / "a.py").write_text("A = 2\n")
    _git(fg, "commit", "-q", "-am", "two")
    zl = tmp_path / "zl"
    for d in ("zlbench", "benchmarks", "ops"):
        (zl / d).mkdir(parents=True)
        (zl / d / "f.txt").write_text(d)
    _git(zl, "init", "-q")
    _git(zl, "add", ".")
    _git(zl, "commit", "-q", "-m", "zl")
    return fg, first, zl


def _run(zl: Path, *args: str):
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "WHEELS": "0"}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=zl, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_the_kit_is_a_checkout_at_the_commit_asked_for(world, tmp_path):
    fg, first, zl = world
    done = _run(zl, str(fg), first)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"FlagGems {first[:12]}" in done.stdout and "of 64 MiB" in done.stdout
    out = tmp_path / "unpacked"
    with tarfile.open(zl / ".cache" / "kit" / "flaggems.tgz") as tar:
        tar.extractall(out, filter="tar")
    assert _git(out / "flaggems", "rev-parse", "HEAD") == first  # not the tip: asked for
    assert (out / "flaggems" / "src" / "a.py").read_text() == "A = 1\n"
    assert _git(out / "flaggems", "status", "--porcelain") == ""  # clean: not dirty
    assert (zl / ".cache" / "snap" / "zlbench" / "f.txt").read_text() == "zlbench"


def test_a_commit_the_repo_lacks_is_one_line_and_exit_2(world):
    fg, _, zl = world
    done = _run(zl, str(fg), "f" * 40)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"device_kit: no commit {'f' * 40} in {fg}"
    assert not (zl / ".cache" / "kit" / "flaggems.tgz").exists()


def test_a_short_commit_is_resolved_in_a_local_repo(world, tmp_path):
    fg, first, zl = world
    done = _run(zl, str(fg), first[:7])
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "unpacked"
    with tarfile.open(zl / ".cache" / "kit" / "flaggems.tgz") as tar:
        tar.extractall(out, filter="tar")
    assert _git(out / "flaggems", "rev-parse", "HEAD") == first


def test_the_size_is_what_the_tree_costs_as_a_tar(world):
    """4,200 one-byte files and a 60 MiB one are 60.0 MiB of data, but 64.1 MiB as the
    tar the device receives (512 bytes of header and one 512-byte block each): too big,
    as the device said of 61.1 MiB of files on 2026-12-02."""
    fg, first, zl = world
    small = zl / "examples" / "many"
    small.mkdir(parents=True)
    for i in range(4200):
        (small / f"{i}.txt").write_text("x")
    (zl / "examples" / "big.bin").write_bytes(b"\0" * (60 * 1024 * 1024))
    _git(zl, "add", ".")
    _git(zl, "commit", "-q", "-m", "examples")
    done = _run(zl, str(fg), first)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "of 64 MiB as a tar: TOO BIG" in done.stdout
    (zl / "examples" / "big.bin").unlink()  # moved out for the calls: fits again
    assert _run(zl, str(fg), first).returncode == 0
