"""Shipped data (examples/, baselines/) names no machine's paths: device checkouts,
work dirs and home dirs are rewritten (<FLAGGEMS_DIR>, <WORK>, <GATE_DIR>, repo-relative)
before they are committed (examples/README.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.trees import shipped_dirs

REPO = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w<>.-])/(?:work|root|home|tmp)/")


def tracked(*dirs: str) -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", *dirs], cwd=REPO, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / p for p in out.decode().split("\0") if p]


def test_no_shipped_file_names_a_machines_path():
    found = []
    packed = [p for d in ("examples", "baselines") for p in shipped_dirs(d).values()]
    unpacked = [p for d in packed if not d.is_relative_to(REPO) for p in d.rglob("*")]
    for path in tracked("examples", "baselines") + [p for p in unpacked if p.is_file()]:
        if path.suffix in {".gz", ".xz", ".tgz"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if m := MACHINE_PATH.search(text):
            line = text.count("\n", 0, m.start()) + 1
            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            found.append(f"{shown}:{line}")
    assert not found, f"machine-specific paths: {found[:10]}"


def test_the_check_finds_such_a_path():
    # the machine paths are built, so that this file does not hold one itself
    root = "/" + "work"
    assert MACHINE_PATH.search(f'"replay_from": "{root}/main/baselines/v3"')
    assert MACHINE_PATH.search("cd " + "/" + "tmp/w/aafull-pr-1")
    assert not MACHINE_PATH.search('"replay_from": "baselines/v3/main/abs"')
    assert not MACHINE_PATH.search("<WORK>/triton/base and <GATE_DIR>/results")
