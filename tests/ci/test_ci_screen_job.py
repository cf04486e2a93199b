"""The codegen screen's CPU job in flagtree-gate.yml (docs/ci.md): the job graph
(setup → build → screen on a CPU runner → shards on GPU runners → judge), the artifact
handed from the screen job to every shard, the flags each side passes
(ci/run_screen.sh: `gate --screen-only`; ci/run_shard.sh: `gate --screen`), and the
setup job's labels for the screen's runner."""

from __future__ import annotations

import json

import pytest
from test_ci_pyscripts import CALLED, setup_root  # noqa: F401 (fixture)
from test_workflows import load, step_named

GPU = "${{ fromJSON(needs.setup.outputs.runner_labels) }}"


@pytest.fixture(scope="module")
def gate() -> dict:
    return load("flagtree-gate.yml")


def uses(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").startswith(f"actions/{action}@")]


def test_the_screen_runs_on_a_cpu_runner_after_the_build_and_before_every_shard(gate):
    jobs = gate["jobs"]
    screen = jobs["screen"]
    assert screen["needs"] == ["setup", "build", "rebuild"]  # the wheel under test, its shards
    assert screen["runs-on"] == "${{ fromJSON(needs.setup.outputs.screen_runner_labels) }}"
    assert screen["runs-on"] != GPU
    runs = " ".join(s.get("run", "") for s in screen["steps"])
    assert "ci/check_gpu.sh" not in runs  # no GPU needed, none asked for
    assert "--with-torch" in step_named(screen, "ci/prepare_venv.sh")["run"]  # FlagGems imports
    assert screen["permissions"] == {"contents": "read"}
    assert "screen" in jobs["shard"]["needs"] and jobs["shard"]["runs-on"] == GPU
    setup = jobs["setup"]
    assert setup["outputs"]["screen_runner_labels"] == (
        "${{ steps.plan.outputs.screen_runner_labels }}"
    )
    env = step_named(setup, "python ci/gate_setup.py")["env"]["IN_SCREEN_RUNNER_LABELS"]
    assert "inputs.screen_runner_labels" in env
    assert "github.event.client_payload.screen_runner_labels" in env
    for trigger in ("workflow_call", "workflow_dispatch"):
        spec = gate["on"][trigger]["inputs"]["screen_runner_labels"]
        assert "gpu" not in json.loads(spec["default"])


def test_the_screen_job_rebuilds_with_the_measured_wheel_and_the_baselines_flaggems(gate):
    jobs = gate["jobs"]
    screen, shard = jobs["screen"], jobs["shard"]
    wheels = [s["with"]["name"] for s in uses(screen, "download-artifact") if "name" in s["with"]]
    assert wheels == ["flagtree-wheel", "flagtree-base-wheel"]  # what the shards install too
    assert any(s["with"]["name"] == "flagtree-wheel" for s in uses(shard, "download-artifact"))
    assert (
        step_named(screen, "ci/install_flagtree.sh")["run"]
        == (step_named(shard, "ci/install_flagtree.sh")["run"])
    )
    gems = [s for s in uses(screen, "checkout") if s["with"].get("path") == "_deps/flaggems"]
    assert gems[0]["with"]["ref"] == "${{ needs.setup.outputs.flaggems_commit }}"


def test_the_screen_and_the_shards_plan_the_same_op_set_and_time_mode(gate):
    """The shard refuses a screen of another op set or time mode: both get them from
    the same outputs."""
    run = step_named(gate["jobs"]["screen"], "ci/run_screen.sh")
    measure = step_named(gate["jobs"]["shard"], "ci/run_shard.sh")
    for var in ("ZL_BASELINE", "ZL_OPS_FILE", "ZL_TIME", "ZL_AB_MODE"):
        assert run["env"][var] == measure["env"][var], var
    for var in ("ZLBENCH_FLAGGEMS_DIR", "ZLBENCH_FLAGGEMS_VLLM_DIR"):
        assert run["env"][var] == measure["env"][var], var
    assert run["env"]["ZL_BASE_SHA"] == "${{ needs.build.outputs.base_sha }}"


def test_the_screen_artifact_reaches_every_shard_as_its_screen_dir(gate):
    screen, shard = gate["jobs"]["screen"], gate["jobs"]["shard"]
    run = step_named(screen, "ci/run_screen.sh")
    assert run["run"] == 'bash ci/run_screen.sh "$RUNNER_TEMP/screen"'
    (upload,) = uses(screen, "upload-artifact")
    assert upload["with"]["path"] == "${{ runner.temp }}/screen"
    assert upload["with"]["if-no-files-found"] == "error"
    steps = shard["steps"]
    (download,) = [s for s in uses(shard, "download-artifact")
                   if s["with"]["name"] == upload["with"]["name"]]  # fmt: skip
    measure = step_named(shard, "ci/run_shard.sh")
    assert steps.index(download) < steps.index(measure)
    # run_screen.sh writes `gate --screen-only --out OUT/screen`: the shard's --screen
    assert measure["env"]["ZL_SCREEN"] == download["with"]["path"] + "/screen"
    assert "if" not in download  # every shard takes the screen, none screens on its own


def test_the_judge_names_a_failed_screen_job(gate):
    judge = gate["jobs"]["judge"]
    assert "screen" in judge["needs"]
    check = next(s for s in judge["steps"] if s.get("name") == "Check the screen job")
    assert check["env"]["ZL_SCREEN_RESULT"] == "${{ needs.screen.result }}"
    assert "zl_fail 2" in check["run"]
    names = [s.get("name") for s in judge["steps"]]
    assert names.index("Check the screen job") < names.index("Check shard artifacts")


# --------------------------------------------------------------------------- run_screen.sh


@pytest.fixture
def screen_env(sandbox):
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    return {"ZL_BASELINE": "bl"}


def test_run_screen_runs_the_screen_only(sandbox, screen_env):
    proc = sandbox.run("run_screen.sh", "out", **screen_env)
    assert proc.returncode == 0, proc.stderr
    [call] = sandbox.calls("zlbench")
    assert call["argv"] == ["gate", "--baseline", "bl", "--screen-only", "--out", "out/screen"]
    assert not call["summary_visible"]
    assert json.loads((sandbox.tmp / "out" / "screen.json").read_text()) == {"exit_code": 0}


@pytest.mark.parametrize(
    "env,tail",
    [
        ({"ZL_TIME": "changed"}, ["--time", "changed"]),
        ({"ZL_TIME": "all"}, ["--time", "all"]),
        ({"ZL_AB_MODE": "full", "ZL_BASE_SHA": "c" * 40}, ["--time", "all"]),  # --full-ab
        ({"ZL_AB_MODE": "full"}, []),  # no base build: no A/B
        ({"ZL_TIME_BUDGET": "600"}, ["--time-budget", "600"]),
        ({"ZL_BASE_COMPILER": "."}, ["--base-compiler", "."]),  # PR vs base screen
    ],
)
def test_run_screen_plans_as_the_shards_time(sandbox, screen_env, env, tail):
    proc = sandbox.run("run_screen.sh", "out", **screen_env, **env)
    assert proc.returncode == 0, proc.stderr
    argv = sandbox.calls("zlbench")[0]["argv"]
    assert argv[6:] == tail


def test_the_screen_job_diffs_against_the_base_build_when_there_is_one(gate):
    """The screen job installs the base wheel as the shards do and hands its site dir to
    run_screen.sh (--base-compiler): the plan is decided PR vs base."""
    steps = gate["jobs"]["screen"]["steps"]
    install = next(s for s in steps if s.get("id") == "base_env")
    assert "ci/install_base.sh" in install["run"] and "base_sha != ''" in install["if"]
    run = next(s for s in steps if "run_screen.sh" in s.get("run", ""))
    assert run["env"]["ZL_BASE_COMPILER"] == "${{ steps.base_env.outputs.site }}"
    names = [s.get("name", "") for s in steps]
    assert names.index(install["name"]) < names.index(run["name"])


def test_run_screen_takes_a_packed_baseline(sandbox, screen_env):
    (sandbox.tmp / "packed.lock").write_text("{}")
    proc = sandbox.run("run_screen.sh", "out", ZL_BASELINE="packed")
    assert proc.returncode == 0, proc.stderr
    proc = sandbox.run("run_screen.sh", "out", ZL_BASELINE="nothing")
    assert proc.returncode == 2 and "nor its lock" in proc.stderr


def test_run_screen_with_ops_file(sandbox, screen_env):
    (sandbox.tmp / "ops.txt").write_text("add\n")
    proc = sandbox.run("run_screen.sh", "out", ZL_OPS_FILE="ops.txt", **screen_env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--ops-file", "ops.txt"]


@pytest.mark.parametrize("given,seen", [(None, "nvidia"), ("mthreads", "mthreads")])
def test_run_screen_names_flaggems_vendor(sandbox, screen_env, given, seen):
    """Without a device FlagGems finds no vendor and every kernel would be missing."""
    fake = sandbox.bin / "zlbench"
    fake.write_text('#!/usr/bin/env bash\necho "$GEMS_VENDOR" >vendor.txt\n')
    fake.chmod(0o755)
    env = {} if given is None else {"GEMS_VENDOR": given}
    proc = sandbox.run("run_screen.sh", "out", **screen_env, **env)
    assert proc.returncode == 0, proc.stderr
    assert (sandbox.tmp / "vendor.txt").read_text().strip() == seen


@pytest.mark.parametrize("rc,ok", [(0, True), (1, True), (2, False)])
def test_run_screen_passes_a_compile_failure_on_and_fails_when_it_cannot_screen(
    sandbox, screen_env, rc, ok
):
    """Exit 1 (a kernel no longer compiles) is the shards' and the judge's to report:
    the job succeeds so that they run; exit 2 fails here, at the step that found it."""
    proc = sandbox.run("run_screen.sh", "out", FAKE_GATE_RC=str(rc), **screen_env)
    assert (proc.returncode == 0) is ok
    assert json.loads((sandbox.tmp / "out" / "screen.json").read_text()) == {"exit_code": rc}
    assert sandbox.outputs()["exit_code"] == str(rc)
    if not ok:
        assert proc.returncode == 2 and "could not run" in sandbox.summary_text()


@pytest.mark.parametrize(
    "env,why",
    [
        ({"ZL_BASELINE": "nope"}, "baseline dir 'nope' does not exist"),
        ({"ZL_TIME": "some"}, "bad time mode 'some'"),
        ({"ZL_OPS_FILE": "missing.txt"}, "ops file 'missing.txt' does not exist"),
    ],
)
def test_run_screen_bad_inputs(sandbox, screen_env, env, why):
    proc = sandbox.run("run_screen.sh", "out", **{**screen_env, **env})
    assert proc.returncode == 2 and why in proc.stderr
    assert sandbox.calls("zlbench") == []


# --------------------------------------------------------------------------- run_shard.sh


def test_run_shard_takes_the_screen_dir(sandbox, shard_env):
    (sandbox.tmp / "screen").mkdir()
    proc = sandbox.run("run_shard.sh", "out", ZL_SCREEN="screen", **shard_env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--screen", "screen"]


def test_run_shard_refuses_a_missing_screen_dir(sandbox, shard_env):
    proc = sandbox.run("run_shard.sh", "out", ZL_SCREEN="gone", **shard_env)
    assert proc.returncode == 2 and "screen dir 'gone' does not exist" in proc.stderr
    assert sandbox.calls("zlbench") == []


# --------------------------------------------------------------------------- gate_setup.py


def test_setup_gives_the_screen_job_cpu_labels(ci_module, setup_root):  # noqa: F811
    setup = ci_module("gate_setup")
    out = setup.resolve(CALLED, setup_root)
    assert json.loads(out["screen_runner_labels"]) == ["self-hosted", "linux", "x64", "cpu"]
    given = setup.resolve({**CALLED, "IN_SCREEN_RUNNER_LABELS": "self-hosted,cpu,big"}, setup_root)
    assert json.loads(given["screen_runner_labels"]) == ["self-hosted", "cpu", "big"]
    assert json.loads(given["runner_labels"]) == ["self-hosted", "linux", "x64", "gpu"]
    with pytest.raises(setup.CiError, match="runner labels"):
        setup.resolve({**CALLED, "IN_SCREEN_RUNNER_LABELS": "a b"}, setup_root)
