"""zlbench.gitinfo.git_state: which checkout's commit a path belongs to. A copy kept in
an ignored or untracked folder of another repo (the device's `git archive` snapshot, a
FlagGems copy) is not that repo's code; ZLBENCH_COMMIT, when set, names the snapshot and wins."""

from __future__ import annotations

import subprocess
import types

import pytest

from zlbench.gitinfo import git_state


def _git(repo, *args) -> str:
    cmd = ["git", "-C", str(repo), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / ".gitignore").write_text("snap/\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    (tmp_path / "snap" / "pkg").mkdir(parents=True)
    return tmp_path


def _head(repo) -> str:
    return _git(repo, "rev-parse", "HEAD")


def test_a_tracked_dir_gives_its_checkouts_head(repo):
    head = _head(repo)
    assert git_state(repo / "pkg") == (head, False)
    (repo / "pkg" / "a.py").write_text("x = 2\n")
    assert git_state(repo / "pkg") == (head, True)


def test_a_dir_the_enclosing_checkout_ignores_has_no_commit(repo):
    assert git_state(repo / "snap" / "pkg") == (None, None)


def test_an_untracked_copy_inside_a_checkout_has_no_commit(repo):
    """A snapshot in a folder the checkout neither tracks nor ignores (a device's copy of
    a working tree whose .git/info/exclude stayed behind) is not the checkout's code."""
    (repo / "copy" / "pkg").mkdir(parents=True)
    (repo / "copy" / "pkg" / "a.py").write_text("x = 3\n")
    assert git_state(repo / "copy" / "pkg") == (None, None)
    assert git_state(repo / "copy" / "pkg" / "a.py") == (None, None)
    assert git_state(repo / "pkg" / "a.py") == (_head(repo), False)


def test_the_probe_falls_back_to_zlbench_commit_outside_a_checkout(repo, monkeypatch):
    from zlbench.plugins import environment

    monkeypatch.setattr(environment, "__file__", str(repo / "snap" / "pkg" / "environment.py"))
    monkeypatch.setattr(environment, "_gpu", lambda: (None, None, None, None))
    monkeypatch.setenv("ZLBENCH_COMMIT", "c0ffee")
    env = environment.probe(types.ModuleType("flag_gems"), "cudagraph", "core")
    assert env.zlbench_commit == "c0ffee"
    monkeypatch.setattr(environment, "__file__", str(repo / "pkg" / "environment.py"))
    # the variable names the snapshot that runs: it wins over a (possibly stale) checkout
    assert environment.probe(None, None, None).zlbench_commit == "c0ffee"
    monkeypatch.delenv("ZLBENCH_COMMIT")
    assert environment.probe(None, None, None).zlbench_commit == _head(repo)
