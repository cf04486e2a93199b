"""benchmarks/v6_assemble.sh refuses, in one line and exit 2 and before it writes
anything, what would make a v6 of the wrong inputs: a scratch dir that exists (two
passes mixed), a record pass without packs, no FlagGems dir."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "v6_assemble.sh"


@pytest.fixture
def src(tmp_path):
    s = tmp_path / "screen"
    (s / "records").mkdir(parents=True)
    (s / "full.tgz").write_bytes(b"")
    (s / "shapes.yaml").write_text("abs: {shapes: [[1]]}\n")
    (s / "records" / "2026-12-02-a.tar.xz").write_bytes(b"")
    fg = tmp_path / "fg"
    fg.mkdir()
    return s, fg


def _run(tmp_path, *args, src=None, fg=None, shapes=None, **extra: str):
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHON": sys.executable}
    env.update(extra)
    if shapes is not None:
        env["SHAPES"] = str(shapes)
    if src is not None:
        env["SRC"] = str(src)
    if fg is not None:
        env["ZLBENCH_FLAGGEMS_DIR"] = str(fg)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_no_scratch_dir_is_the_usage_and_exit_2(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"usage: {SCRIPT} SCRATCH [JOBS]"


def test_a_scratch_dir_that_exists_is_refused_untouched(tmp_path, src):
    s, fg = src
    old = tmp_path / "old"
    old.mkdir()
    (old / "keep.txt").write_text("an earlier pass")
    done = _run(tmp_path, str(old), src=s, fg=fg)
    assert done.returncode == 2
    assert done.stderr.strip() == f"v6_assemble: {old} exists; give a new dir"
    assert [p.name for p in old.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    "what, line",
    [
        ("full.tgz", "v6_assemble: no {s}/full.tgz"),
        ("records/2026-12-02-a.tar.xz", "v6_assemble: no packs in {s}/records"),
        ("fg", "v6_assemble: ZLBENCH_FLAGGEMS_DIR is not a dir"),
        ("shapes.yaml", "v6_assemble: no shape file {s}/shapes.yaml"),
    ],
)
def test_a_missing_input_is_one_line_and_nothing_written(tmp_path, src, what, line):
    s, fg = src
    (fg.rmdir() if what == "fg" else (s / what).unlink())
    done = _run(tmp_path, str(tmp_path / "v6"), src=s, fg=fg, shapes=s / "shapes.yaml")
    assert done.returncode == 2
    assert done.stderr.strip() == line.format(s=s)
    assert not (tmp_path / "v6").exists()


def test_a_failing_step_stops_the_run_with_its_code_and_keeps_its_log(tmp_path, src):
    s, fg = src  # the pack is no xz archive: the unpack step fails (bad input: exit 2)
    done = _run(tmp_path, str(tmp_path / "v6"), src=s, fg=fg)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"v6_assemble: step unpack failed (rc=2), see {tmp_path / 'v6'}/unpack.log"
    )
    rows = (tmp_path / "v6" / "steps.tsv").read_text().splitlines()
    assert rows[0] == "step\twall_s\trc"
    assert rows[1].startswith("unpack\t") and rows[1].endswith("\t2")
    assert len(rows) == 2 and not (tmp_path / "v6" / "v6-full").exists()  # nothing after it
    assert (tmp_path / "v6" / "unpack.log").read_text()


FAKE_PY = """#!/bin/bash
# every call's argv, one line each; `full_records.py unpack PACKS... DIR` makes DIR/main
echo "$*" >> "$ARGV_LOG"
[ "$2" = unpack ] && mkdir -p "${@: -1}/main"
exit 0
"""


@pytest.mark.parametrize("reuse", [None, "baselines/v6"])
def test_reuse_and_name_reach_compact_and_the_last_steps(tmp_path, src, reuse):
    """REUSE=<earlier version> makes the compact step share its packs (what a further
    version adds in git is then measured, docs/baselines.md); unset, compact packs anew.
    NAME names the baseline the digests step writes and verify reads (default v6)."""
    s, fg = src
    with tarfile.open(s / "full.tgz", "w:gz"):
        pass  # an empty pass: the work step unpacks it
    fake = tmp_path / "fakepy"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    log = tmp_path / "argv.log"
    extra = {"PYTHON": str(fake), "ARGV_LOG": str(log)}
    if reuse:
        extra.update(REUSE=reuse, NAME="v7")
    done = _run(
        tmp_path, str(tmp_path / "v7"), "2", src=s, fg=fg, shapes=s / "shapes.yaml", **extra
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    (compact,) = [c for c in calls if c.startswith("-m zlbench baseline compact")]
    assert compact.endswith(f"--out {tmp_path}/v7/v6c" + (f" --reuse {reuse}" if reuse else ""))
    assert [c for c in calls if "--reuse" in c] == ([compact] if reuse else [])
    (digests,) = [c for c in calls if c.startswith("-m zlbench baseline code-digests")]
    name = "v7" if reuse else "v6"  # NAME: the baseline's dir, so its manifest's name
    assert f"--out {tmp_path}/v7/{name} " in digests
    (verify,) = [c for c in calls if c.startswith("-m zlbench baseline verify")]
    assert verify.endswith(f"/v7/{name}")
