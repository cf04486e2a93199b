"""No leftovers after a kill (issue 49 item 4): a writer that builds a new dir beside
its ``--out`` (``.<name>.tmp-<pid>``, ``.<name>.bootstrap-<pid>``: refresh, compact,
attribute, code-digests, bootstrap, a batch merge) and is killed with SIGKILL leaves
that stage; the next writer of that name removes the stages of processes that are
gone (``runner/derived.py`` ``stage_beside``), and git ignores them meanwhile, so a
``git add baselines/`` never commits one."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.batch_fakes import FakeExecutor, make_inventory
from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.merge import merge_batches
from zlbench.runner.batch.run import run_batch
from zlbench.runner.derived import stage_beside, sweep_stale_stages

REPO = Path(__file__).resolve().parents[2]
DEAD = int(Path("/proc/sys/kernel/pid_max").read_text())  # no process has this pid


def _killed_stage(parent: Path, name: str, kind: str = "tmp", pid: int = DEAD) -> Path:
    """What a writer killed mid-way leaves: its stage, with a manifest in it."""
    stage = parent / f".{name}.{kind}-{pid}"
    (stage / "main" / "add").mkdir(parents=True)
    (stage / "manifest.yaml").write_text("name: half\n")
    (stage / "main" / "add" / "result.json").write_bytes(b"x" * 4096)
    return stage


def _names(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "baselines" / "v1", {"add": [brow("add", "[1024]", 1.0)]})


def test_compact_removes_the_stages_its_killed_runs_left(bl, capsys):
    parent = bl.parent
    _killed_stage(parent, "v9")  # a compact into v9 killed with SIGKILL
    _killed_stage(parent, "v9", "bootstrap")
    live = _killed_stage(parent, "v9", pid=os.getppid())  # a writer still running
    other = _killed_stage(parent, "v8")  # another name's: not this writer's to judge
    assert main(["baseline", "compact", str(bl), "--out", str(parent / "v9")]) == 0
    assert _names(parent) == sorted(["v1", "v9", live.name, other.name])
    assert (parent / "v9" / "manifest.yaml").is_file()


def test_a_second_compact_after_a_kill_does_not_trip_on_the_stage(bl):
    """The stage of a killed run of this very pid (a reused pid) is replaced too."""
    parent = bl.parent
    _killed_stage(parent, "v9", pid=os.getpid())
    assert main(["baseline", "compact", str(bl), "--out", str(parent / "v9")]) == 0
    assert _names(parent) == ["v1", "v9"]


def test_every_writer_of_a_stage_sweeps_first(tmp_path):
    """The one helper every stage writer calls: dead stages of both kinds go, live ones,
    other names and unrelated dot dirs stay; the stage returned is absent."""
    parent = tmp_path / "baselines"
    for kind in ("tmp", "bootstrap"):
        _killed_stage(parent, "h100", kind)
    keep = [
        _killed_stage(parent, "h100", pid=os.getppid()).name,
        _killed_stage(parent, "a100").name,
        _killed_stage(parent, "h100", "other").name,  # not a stage kind
    ]
    (parent / ".h100.tmp-abc").mkdir()  # not a pid
    keep.append(".h100.tmp-abc")
    stage = stage_beside(parent / "h100", "bootstrap")
    assert stage == parent / f".h100.bootstrap-{os.getpid()}" and not stage.exists()
    assert _names(parent) == sorted(keep)


def test_a_stage_that_is_a_symlink_is_unlinked_never_followed(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    parent = tmp_path / "baselines"
    parent.mkdir()
    (parent / f".v9.tmp-{DEAD}").symlink_to(outside, target_is_directory=True)
    (parent / f".v9.bootstrap-{DEAD}").write_text("a file, not a dir")
    gone = sweep_stale_stages(parent, "v9")
    assert len(gone) == 2 and _names(parent) == []
    assert (outside / "precious").read_text() == "keep me"


def test_batch_merge_removes_the_stages_its_killed_runs_left(tmp_path):
    """A batch merge builds its dir as a stage of the swept kind (it was a random name
    that no one swept)."""
    make_inventory(tmp_path / "ops", "main", ["op1", "op2"])
    shard = run_batch(
        BatchConfig(
            out_dir=tmp_path / "s1",
            flaggems_dirs={"main": tmp_path},
            ops_dir=tmp_path / "ops",
            all_ops=True,
            progress=io.StringIO(),
            executor=FakeExecutor(),
        )
    ).out_dir
    _killed_stage(tmp_path, "merged")
    merge_batches([shard], tmp_path / "merged")
    assert [n for n in _names(tmp_path) if n.startswith(".")] == []


def test_gate_merge_removes_the_stages_its_killed_runs_left(tmp_path):
    """`zlbench merge` of shard gate dirs builds its dir as a stage of the swept kind
    too (it was a random name that no one swept)."""
    from zlbench.workflow.merge import merge_gate_dirs

    make_inventory(tmp_path / "ops", "main", ["op1"])
    gate = tmp_path / "shard-1"
    run_batch(
        BatchConfig(
            out_dir=gate / "results",
            flaggems_dirs={"main": tmp_path},
            ops_dir=tmp_path / "ops",
            all_ops=True,
            progress=io.StringIO(),
            executor=FakeExecutor(),
        )
    )
    _killed_stage(tmp_path, "merged")
    merge_gate_dirs([gate], tmp_path / "merged")
    assert (tmp_path / "merged" / "results").is_dir()
    assert [n for n in _names(tmp_path) if n.startswith(".")] == []


@pytest.mark.proc
@pytest.mark.parametrize(
    "rel",
    [
        "baselines/.v9.tmp-12345/manifest.yaml",
        "baselines/.v9.tmp-12345/main/add/result.json",
        "baselines/.h100.bootstrap-77/h100/manifest.yaml",
        "baselines/.v9.tmp-12345",
        ".v9.tmp-1/x",
    ],
)
def test_stages_are_git_ignored(rel):
    r = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", rel], cwd=REPO, capture_output=True
    )
    assert r.returncode == 0, f"{rel} is not git-ignored"


@pytest.mark.proc
@pytest.mark.parametrize(
    "rel", ["baselines/v9/manifest.yaml", "baselines/v9.lock", "baselines/.v9.tmp-x/a"]
)
def test_baselines_themselves_are_not_ignored(rel):
    r = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", rel], cwd=REPO, capture_output=True
    )
    assert r.returncode == 1, f"{rel} is git-ignored"
