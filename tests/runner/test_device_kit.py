"""benchmarks/device_kit.sh: the FlagGems kit is a git checkout at the commit asked for
(so every result names it), a commit the repo lacks is one line and exit 2, and the
sizes are checked against the device's 64 MiB; device_park.sh parks the shipped dirs a
call does not need and puts them back whole; device_env.sh, on the device, exports what
the kit holds."""

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


def test_the_kit_names_the_commit_it_snapshot(world):
    fg, first, zl = world
    assert _run(zl, str(fg), first).returncode == 0
    assert (zl / ".cache" / "snap" / "COMMIT").read_text().strip() == _git(zl, "rev-parse", "HEAD")


# ------------------------------------------------------------------ device_park.sh

PARK = SCRIPT.parent / "device_park.sh"


def _park(zl: Path, *args: str):
    return subprocess.run(["bash", str(PARK), *args], cwd=zl, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})  # fmt: skip


@pytest.fixture
def shipped(world):
    """A checkout with three examples dirs and two baselines, all committed."""
    zl = world[2]
    for d in ("examples/full", "examples/gate-a", "examples/gate-b", "baselines/v1",
              "baselines/v2"):  # fmt: skip
        (zl / d).mkdir(parents=True)
        (zl / d / "f.json").write_text(d)
    _git(zl, "add", ".")
    _git(zl, "commit", "-q", "-m", "shipped")
    return zl


def test_park_moves_all_but_the_kept_dirs_and_unpark_restores_them(shipped):
    zl = shipped
    done = _park(zl, "park", "examples/full", "baselines/v2/")
    assert done.returncode == 0, done.stderr
    assert "3 dir(s) parked" in done.stdout
    assert sorted(p.name for p in (zl / "examples").iterdir()) == ["full"]
    assert sorted(p.name for p in (zl / "baselines").iterdir()) == ["v2"]
    assert (zl / ".cache" / "parked" / "examples" / "gate-a" / "f.json").read_text() == (
        "examples/gate-a"
    )
    status = _park(zl, "status")
    assert status.returncode == 1 and "examples/gate-b" in status.stdout
    assert _park(zl, "unpark").returncode == 0
    assert _git(zl, "status", "--porcelain") == ""  # every file back where it was
    assert _park(zl, "status").returncode == 0


def test_nothing_parked_yet_is_said_with_exit_0(shipped):
    for verb in ("status", "unpark"):
        done = _park(shipped, verb)
        assert done.returncode == 0, (verb, done.stderr)
        assert done.stdout.startswith("device_park: nothing parked")


def test_park_refuses_twice_and_a_missing_keep(shipped):
    zl = shipped
    bad = _park(zl, "park", "examples/nope")
    assert bad.returncode == 2 and bad.stderr.strip() == "device_park: KEEP examples/nope is no dir"
    assert _git(zl, "status", "--porcelain") == ""  # nothing moved
    assert _park(zl, "park", "examples/full").returncode == 0
    again = _park(zl, "park")
    assert again.returncode == 2 and "unpark first" in again.stderr
    assert (zl / "examples" / "full").is_dir()  # the second park moved nothing


def test_unpark_moves_nothing_where_a_place_is_taken(shipped):
    zl = shipped
    assert _park(zl, "park").returncode == 0
    (zl / "examples" / "gate-b").mkdir()  # made again while parked
    done = _park(zl, "unpark")
    assert done.returncode == 2
    assert done.stderr.strip() == "device_park: examples/gate-b exists; nothing moved back"
    assert not (zl / "examples" / "full").exists()  # still parked, not half moved back


# ------------------------------------------------------------------ device_env.sh

ENV = SCRIPT.parent / "device_env.sh"


def test_device_env_exports_the_kit_and_runs_the_command(world, tmp_path):
    fg, first, zl = world
    assert _run(zl, str(fg), first).returncode == 0
    (zl / ".whl").mkdir()  # no wheels: nothing to install
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "DEVICE_TMP": str(tmp_path / "dev")}  # fmt: skip
    show = 'echo "$PYTHONPATH|$ZLBENCH_FLAGGEMS_DIR|$ZLBENCH_COMMIT|$GEMS_VENDOR"'
    for _ in range(2):  # a warm machine: what is there is not made again
        done = subprocess.run(["bash", str(ENV), "bash", "-c", show], cwd=zl, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
    head, line = done.stdout.strip().splitlines()
    dev = tmp_path / "dev"
    commit = _git(zl, "rev-parse", "HEAD")
    assert head.startswith("device_env: ")  # then the GPU: none here, one on a runner
    assert head.endswith(f"; zlbench {commit[:7]}; FlagGems {first[:12]}")
    assert line == (f"{dev}/site:{zl}/.cache/snap:{dev}/fg/flaggems/src|{dev}/fg/flaggems|"
                    f"{commit}|nvidia")  # fmt: skip


def test_device_env_refuses_a_working_tree_whose_zlbench_is_not_the_snapshots(world, tmp_path):
    """`python3 -m zlbench` from the repo root imports the working tree's zlbench/, not
    the snapshot's: an uncommitted edit would run under the snapshot's commit."""
    fg, first, zl = world
    assert _run(zl, str(fg), first).returncode == 0
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "DEVICE_TMP": str(tmp_path / "dev")}  # fmt: skip
    check = subprocess.run(["bash", str(ENV), "--check"], cwd=zl, env=env,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert check.returncode == 0 and "the kit is whole" in check.stdout
    assert not (tmp_path / "dev").exists()  # the check installs and unpacks nothing
    (zl / "zlbench" / "f.txt").write_text("edited, not committed")
    done = subprocess.run(["bash", str(ENV), "echo", "ran"], cwd=zl, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "ran" not in done.stdout
    assert done.stderr.startswith("device_env: zlbench/ here is not the snapshot's")
    check = subprocess.run(["bash", str(ENV), "--check"], cwd=zl, env=env,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert check.returncode == 2 and check.stdout == ""
    assert check.stderr.startswith("device_env: zlbench/ here is not the snapshot's")
    (zl / "zlbench" / "f.txt").write_text("zlbench")  # as committed: runs
    (zl / "zlbench" / "__pycache__").mkdir()  # bytecode is not code that differs
    done = subprocess.run(["bash", str(ENV), "echo", "ran"], cwd=zl, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip().endswith("ran"), done.stderr


def test_device_env_without_the_kit_is_one_line_and_exit_2(world, tmp_path):
    zl = world[2]
    done = subprocess.run(["bash", str(ENV), "true"], cwd=zl, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "DEVICE_TMP": str(tmp_path)})  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().startswith("device_env: no .cache/kit/flaggems.tgz")
