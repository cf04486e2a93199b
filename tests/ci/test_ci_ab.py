"""The A/B parts of the gate's CI scripts (docs/ci.md "A/B against the base compiler"):
ci/build_base.sh resolves the base (explicit ref, or the PR's merge base; none:
no A/B) and reuses the wheel cached for its commit; ci/run_shard.sh and ci/judge.sh
pass the base compiler, the mode and the accept list to the gate."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def two_commits(sandbox):
    """A FlagTree-like repo: base commit, then the PR's commit on top."""
    src = sandbox.tmp / "flagtree"
    (src / "python").mkdir(parents=True)
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    shas = []
    for i in (1, 2):
        (src / "python" / "setup.py").write_text(f"raise SystemExit({i})\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"c{i}"], check=True)
        out = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
        shas.append(out.stdout.strip())
    return src, shas[0], shas[1]


def cache_wheel(sandbox, sha):
    cached = sandbox.tmp / "cache" / "flagtree-wheels" / sha
    cached.mkdir(parents=True)
    (cached / "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl").write_text(sha)


@pytest.mark.parametrize(
    "env", [{"ZL_AB_MODE": "off", "ZL_BASE_REF": "HEAD"}, {"ZL_AB_MODE": "suspects"}]
)
def test_no_base_means_no_ab(sandbox, two_commits, env):
    src, _, _ = two_commits
    proc = sandbox.run("build_base.sh", str(src), "base-wheel", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sandbox.outputs()["base_sha"] == ""
    assert not (sandbox.tmp / "base-wheel").exists()


def test_the_merge_base_is_built_or_reused_by_commit(sandbox, two_commits):
    src, base, head = two_commits
    cache_wheel(sandbox, base)
    job = str(sandbox.fake("python-job"))
    proc = sandbox.run("build_base.sh", str(src), "base-wheel", ZL_PR_BASE_SHA=base, ZL_PYTHON=job)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reusing" in proc.stdout and sandbox.calls() == []
    assert sandbox.outputs()["base_sha"] == base
    [wheel] = (sandbox.tmp / "base-wheel").glob("flagtree-*.whl")
    assert wheel.read_text() == base


@pytest.mark.parametrize(
    ("env", "text"),
    [
        ({"ZL_AB_MODE": "sometimes"}, "not one of changed, full, off"),
        ({"ZL_BASE_REF": "no-such-ref"}, "base 'no-such-ref' not found"),
    ],
)
def test_build_base_bad_input_is_one_message(sandbox, two_commits, env, text):
    src, _, _ = two_commits
    proc = sandbox.run("build_base.sh", str(src), "base-wheel", **env)
    assert proc.returncode == 2 and text in proc.stderr


def test_run_shard_measures_a_b_against_the_base_site(sandbox, shard_env):
    (sandbox.tmp / "accept.yaml").write_text("accept: []\n")
    env = {"ZL_BASE_COMPILER": "site", "ZL_AB_MODE": "full", "ZL_ACCEPT": "accept.yaml"}
    proc = sandbox.run("run_shard.sh", "out", **env, **shard_env)
    assert proc.returncode == 0, proc.stderr
    argv = sandbox.calls("zlbench")[0]["argv"]
    assert argv[-5:] == ["--base-compiler", "site", "--full-ab", "--accept", "accept.yaml"]


def test_run_shard_without_a_base_measures_no_a_b(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", ZL_AB_MODE="full", **shard_env)
    assert proc.returncode == 0, proc.stderr
    assert "--base-compiler" not in sandbox.calls("zlbench")[0]["argv"]


def test_a_missing_accept_list_fails_before_measuring(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", ZL_ACCEPT="nope.yaml", **shard_env)
    assert proc.returncode == 2 and "accept list 'nope.yaml' does not exist" in proc.stderr
    assert sandbox.calls("zlbench") == []
