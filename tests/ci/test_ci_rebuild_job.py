"""The sharded codegen rebuild in flagtree-gate.yml (docs/codegen.md, "Sharded rebuild"):
the screen_shards input and its check in the setup job, the `rebuild` matrix of CPU
jobs (skipped for 1), the `screen` job's needs/if and its download of every rebuild
artifact, and the two scripts: ci/run_rebuild.sh (`codegen --shard K/N`) and
ci/run_screen.sh (`gate --screen-only --rebuilt DIR ...`, a missing shard refused)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_workflows import load, step_named

REPO = Path(__file__).resolve().parents[2]

COUNT = "${{ needs.setup.outputs.screen_shard_count }}"


@pytest.fixture(scope="module")
def gate() -> dict:
    return load("flagtree-gate.yml")


def plan_step(gate) -> dict:
    return next(s for s in gate["jobs"]["setup"]["steps"] if s.get("id") == "rebuild_plan")


def evaluate(expr: str, **results: str) -> bool:
    """A job's `if:` as Actions evaluates it, for the results given (``setup="success"``,
    ``count="3"``: the setup job's screen_shard_count): only the operators it uses."""
    body = expr.strip()
    assert body.startswith("${{") and body.endswith("}}"), expr
    body = body[3:-2]
    assert set(re.findall(r"[a-z_]+\(\)", body)) <= {"cancelled()"}, body
    py = body.replace("!cancelled()", "(not cancelled)").replace("&&", " and ")
    py = py.replace("||", " or ")
    assert "!" not in py.replace("!=", ""), py
    count = results.pop("count", "")
    cancelled = results.pop("cancelled", False)
    needs = {
        job: SimpleNamespace(result=result, outputs=SimpleNamespace(screen_shard_count=count))
        for job, result in results.items()
    }
    return bool(eval(py, {"__builtins__": {}}, {"needs": SimpleNamespace(**needs),
                                                 "cancelled": cancelled}))  # fmt: skip


# --------------------------------------------------------------------------- the input


def test_screen_shards_is_an_input_of_every_trigger(gate):
    for trigger in ("workflow_call", "workflow_dispatch"):
        spec = gate["on"][trigger]["inputs"]["screen_shards"]
        assert spec["type"] == "string" and spec["default"] == "1", trigger
    env = plan_step(gate)["env"]["IN_SCREEN_SHARDS"]
    assert env == "${{ inputs.screen_shards || github.event.client_payload.screen_shards }}"
    outputs = gate["jobs"]["setup"]["outputs"]
    assert outputs["screen_shards"] == "${{ steps.rebuild_plan.outputs.screen_shards }}"
    assert outputs["screen_shard_count"] == ("${{ steps.rebuild_plan.outputs.screen_shard_count }}")


def run_plan(gate, sandbox, given: str | None):
    env = {} if given is None else {"IN_SCREEN_SHARDS": given}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", plan_step(gate)["run"]],
        env={**sandbox.env, **env},
        cwd=REPO,  # `source ci/lib.sh`, as in the job's zlbench checkout
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "given,count",
    [(None, 1), ("", 1), ("1", 1), ("3", 3), (" 4\n", 4), ("32", 32)],
)
def test_setup_plans_the_rebuild_matrix(gate, sandbox, given, count):
    proc = run_plan(gate, sandbox, given)
    assert proc.returncode == 0, proc.stderr
    out = sandbox.outputs()
    assert json.loads(out["screen_shards"]) == list(range(1, count + 1))
    assert out["screen_shard_count"] == str(count)  # "1" exactly: the rebuild's if


@pytest.mark.parametrize("given", ["0", "33", "100", "-1", "2.5", "auto", "1 2", "x3"])
def test_setup_refuses_a_bad_screen_shards_in_one_line(gate, sandbox, given):
    proc = run_plan(gate, sandbox, given)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: screen_shards must be an integer from 1 to 32, got '{given}'"]
    assert "screen_shards must be an integer from 1 to 32" in sandbox.summary_text()
    assert sandbox.outputs() == {}


# --------------------------------------------------------------------------- the job graph


def test_the_rebuild_matrix_comes_from_the_setup_job(gate):
    rebuild = gate["jobs"]["rebuild"]
    assert rebuild["needs"] == ["setup", "build"]
    assert rebuild["strategy"]["matrix"] == {
        "shard": "${{ fromJSON(needs.setup.outputs.screen_shards) }}"
    }
    assert rebuild["runs-on"] == gate["jobs"]["screen"]["runs-on"]  # the CPU runners
    assert rebuild["permissions"] == {"contents": "read"}
    run = step_named(rebuild, "ci/run_rebuild.sh")
    assert run["run"] == 'bash ci/run_rebuild.sh "$RUNNER_TEMP/rebuild"'
    assert run["env"]["ZL_REBUILD_INDEX"] == "${{ matrix.shard }}"
    assert run["env"]["ZL_REBUILD_COUNT"] == COUNT


@pytest.mark.parametrize("count,runs", [("1", False), ("2", True), ("32", True)])
def test_the_rebuild_jobs_run_only_for_more_than_one_shard(gate, count, runs):
    expr = gate["jobs"]["rebuild"]["if"]
    assert evaluate(expr, setup="success", build="success", count=count) is runs


def test_the_rebuild_job_installs_what_the_screen_job_installs(gate):
    """The same wheel and FlagGems, the same way: the screen refuses shards rebuilt by
    another compiler, and every kernel must be found as the screen would find it."""
    rebuild, screen = gate["jobs"]["rebuild"], gate["jobs"]["screen"]
    run = step_named(rebuild, "ci/run_rebuild.sh")
    head = rebuild["steps"][: rebuild["steps"].index(run)]
    screen_head = [  # less the rebuilt shards' download and the base build (the PR's side only)
        s
        for s in screen["steps"]
        if "rebuild" not in s.get("with", {}).get("pattern", "")
        and "base" not in s.get("with", {}).get("name", "") + s.get("id", "")
    ]
    assert head == screen_head[: len(head)]
    assert screen_head[len(head)] == step_named(screen, "ci/run_screen.sh")
    measure = step_named(screen, "ci/run_screen.sh")
    for var in ("ZL_BASELINE", "ZLBENCH_FLAGGEMS_DIR", "ZLBENCH_FLAGGEMS_VLLM_DIR"):
        assert run["env"][var] == measure["env"][var], var


@pytest.mark.parametrize(
    "results,runs",
    [
        ({"setup": "success", "build": "success", "rebuild": "skipped", "count": "1"}, True),
        ({"setup": "success", "build": "success", "rebuild": "success", "count": "3"}, True),
        ({"setup": "success", "build": "success", "rebuild": "failure", "count": "3"}, False),
        ({"setup": "success", "build": "success", "rebuild": "cancelled", "count": "3"}, False),
        ({"setup": "success", "build": "success", "rebuild": "skipped", "count": "3"}, False),
        ({"setup": "success", "build": "failure", "rebuild": "skipped", "count": "1"}, False),
        ({"setup": "failure", "build": "skipped", "rebuild": "skipped", "count": ""}, False),
        (
            {
                "setup": "success",
                "build": "success",
                "rebuild": "skipped",
                "count": "1",
                "cancelled": True,
            },
            False,
        ),  # fmt: skip
    ],
)
def test_the_screen_runs_after_the_rebuild_or_without_it(gate, results, runs):
    screen = gate["jobs"]["screen"]
    assert screen["needs"] == ["setup", "build", "rebuild"]
    assert evaluate(screen["if"], **results) is runs


@pytest.mark.parametrize("screen,runs", [("success", True), ("failure", False), ("skipped", False)])
def test_the_shards_run_after_a_screen_whose_rebuild_was_skipped(gate, screen, runs):
    """The default success() of a job also counts its needs' skipped needs (the rebuild,
    for screen_shards 1): the shard job says what it waits for."""
    expr = gate["jobs"]["shard"]["if"]
    assert evaluate(expr, setup="success", build="success", screen=screen, count="1") is runs


def test_every_rebuild_artifact_reaches_the_screen_as_a_rebuilt_dir(gate, sandbox):
    rebuild, screen = gate["jobs"]["rebuild"], gate["jobs"]["screen"]
    (upload,) = [s for s in rebuild["steps"] if s.get("uses", "").startswith("actions/upload")]
    assert upload["with"]["path"] == "${{ runner.temp }}/rebuild"
    assert upload["with"]["if-no-files-found"] == "error"
    [download] = [s for s in screen["steps"] if "pattern" in s.get("with", {})]
    wheel = next(s for s in screen["steps"] if s.get("with", {}).get("name") == "flagtree-wheel")
    assert download["uses"] == wheel["uses"]  # the pinned download-artifact
    assert download["if"] == "needs.setup.outputs.screen_shard_count != '1'"
    assert "merge-multiple" not in download["with"]  # one dir per artifact, by its name
    measure = step_named(screen, "ci/run_screen.sh")
    steps = screen["steps"]
    assert steps.index(download) < steps.index(measure)
    assert measure["env"]["ZL_REBUILT"] == download["with"]["path"]
    assert measure["env"]["ZL_REBUILD_COUNT"] == COUNT
    # Render the names as Actions does for 3 shards: the pattern takes them all, and
    # run_screen.sh finds them where download-artifact puts them (PATH/NAME/).
    names = [
        upload["with"]["name"].replace("${{ matrix.shard }}", str(k)).replace(COUNT, "3")
        for k in (1, 2, 3)
    ]
    pattern = download["with"]["pattern"].replace(COUNT, "3")
    assert all(fnmatch.fnmatchcase(n, pattern) for n in names)
    assert not fnmatch.fnmatchcase("zlbench-rebuild-1-of-13", pattern)
    assert not fnmatch.fnmatchcase("zlbench-screen", pattern)
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    for n in names:
        (sandbox.tmp / "rb" / n).mkdir(parents=True)
    proc = sandbox.run("run_screen.sh", "out", ZL_BASELINE="bl", ZL_REBUILD_COUNT="3",
                       ZL_REBUILT="rb")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    argv = sandbox.calls("zlbench")[0]["argv"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--rebuilt"] == [
        f"rb/{n}" for n in names
    ]


# --------------------------------------------------------------------------- run_rebuild.sh


@pytest.fixture
def rebuild_env(sandbox):
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    return {"ZL_BASELINE": "bl", "ZL_REBUILD_INDEX": "2", "ZL_REBUILD_COUNT": "3"}


def test_run_rebuild_rebuilds_its_shard(sandbox, rebuild_env):
    proc = sandbox.run("run_rebuild.sh", "out", ZL_REBUILD_JOBS="4", **rebuild_env)
    assert proc.returncode == 0, proc.stderr
    [call] = sandbox.calls("zlbench")
    assert call["argv"] == [
        "codegen", "--baseline", "bl", "--shard", "2/3", "--out", "out", "--jobs", "4"
    ]  # fmt: skip
    assert not call["summary_visible"]
    assert json.loads((sandbox.tmp / "out" / "rebuilt.json").read_text()) == {"shard": "2/3"}


def test_run_rebuild_uses_every_cpu_by_default(sandbox, rebuild_env):
    proc = sandbox.run("run_rebuild.sh", "out", **rebuild_env)
    assert proc.returncode == 0, proc.stderr
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    assert sandbox.calls("zlbench")[0]["argv"][-2:] == ["--jobs", nproc]


@pytest.mark.parametrize(
    "env,why",
    [
        ({"ZL_BASELINE": "nope"}, "baseline dir 'nope' does not exist"),
        ({"ZL_REBUILD_INDEX": "4"}, "bad rebuild shard '4/3'"),
        ({"ZL_REBUILD_INDEX": "0"}, "bad rebuild shard '0/3'"),
        ({"ZL_REBUILD_INDEX": ""}, "bad rebuild shard '/3'"),
        ({"ZL_REBUILD_COUNT": "x"}, "bad rebuild shard '2/x'"),
        ({"ZL_REBUILD_JOBS": "0"}, "bad ZL_REBUILD_JOBS '0'"),
    ],
)
def test_run_rebuild_bad_inputs(sandbox, rebuild_env, env, why):
    proc = sandbox.run("run_rebuild.sh", "out", **{**rebuild_env, **env})
    assert proc.returncode == 2 and why in proc.stderr
    assert sandbox.calls("zlbench") == []


def test_run_rebuild_fails_with_zlbench(sandbox, rebuild_env):
    proc = sandbox.run("run_rebuild.sh", "out", FAKE_CODEGEN_RC="2", **rebuild_env)
    assert proc.returncode == 2
    assert "rebuild shard 2/3 could not run" in sandbox.summary_text()


def test_run_rebuild_refuses_an_unstamped_shard(sandbox, rebuild_env):
    """A shard dir without rebuilt.json is refused by the screen: fail here, by name."""
    proc = sandbox.run("run_rebuild.sh", "out", FAKE_CODEGEN_NO_STAMP="1", **rebuild_env)
    assert proc.returncode == 2 and "rebuild shard 2/3 wrote no out/rebuilt.json" in proc.stderr


# --------------------------------------------------------------------------- run_screen.sh


@pytest.fixture
def screen_env(sandbox):
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    return {"ZL_BASELINE": "bl"}


def make_shards(sandbox, n: int, ks) -> None:
    for k in ks:
        (sandbox.tmp / "rb" / f"zlbench-rebuild-{k}-of-{n}").mkdir(parents=True)


UNSHARDED = ["gate", "--baseline", "bl", "--screen-only", "--out", "out/screen"]


@pytest.mark.parametrize("env", [{}, {"ZL_REBUILD_COUNT": "1", "ZL_REBUILT": "gone"}])
def test_run_screen_with_one_rebuild_shard_rebuilds_itself(sandbox, screen_env, env):
    """screen_shards 1: no rebuild job ran and none is downloaded; as before."""
    proc = sandbox.run("run_screen.sh", "out", **screen_env, **env)
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"] == UNSHARDED


def test_run_screen_passes_every_rebuild_shard(sandbox, screen_env):
    make_shards(sandbox, 2, [2, 1])
    proc = sandbox.run("run_screen.sh", "out", ZL_REBUILD_COUNT="2", ZL_REBUILT="rb",
                       ZL_TIME="changed", **screen_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sandbox.calls("zlbench")[0]["argv"] == [
        *UNSHARDED, "--time", "changed",
        "--rebuilt", "rb/zlbench-rebuild-1-of-2", "--rebuilt", "rb/zlbench-rebuild-2-of-2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "ks,why",
    [
        ([1, 3], "rebuild shard 2/3 is missing: no artifact zlbench-rebuild-2-of-3 in rb"),
        ([2, 3], "rebuild shard 1/3 is missing: no artifact zlbench-rebuild-1-of-3 in rb"),
        ([1, 2], "rebuild shard 3/3 is missing: no artifact zlbench-rebuild-3-of-3 in rb"),
    ],
)
def test_run_screen_names_a_missing_rebuild_shard(sandbox, screen_env, ks, why):
    make_shards(sandbox, 3, ks)
    proc = sandbox.run("run_screen.sh", "out", ZL_REBUILD_COUNT="3", ZL_REBUILT="rb",
                       **screen_env)  # fmt: skip
    assert proc.returncode == 2
    assert [line for line in proc.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {why}"
    ]
    assert why in sandbox.summary_text()
    assert sandbox.calls("zlbench") == []


def test_run_screen_refuses_shards_it_was_not_told_of(sandbox, screen_env):
    make_shards(sandbox, 2, [1, 2, "x"])
    proc = sandbox.run("run_screen.sh", "out", ZL_REBUILD_COUNT="2", ZL_REBUILT="rb",
                       **screen_env)  # fmt: skip
    assert proc.returncode == 2
    assert "expected 2 rebuild shard dirs in rb, found 3" in proc.stderr
    assert sandbox.calls("zlbench") == []


@pytest.mark.parametrize(
    "env,why",
    [
        ({"ZL_REBUILD_COUNT": "2"}, "rebuild dir '' (ZL_REBUILT) does not exist"),
        ({"ZL_REBUILD_COUNT": "2", "ZL_REBUILT": "gone"}, "rebuild dir 'gone' (ZL_REBUILT)"),
        ({"ZL_REBUILD_COUNT": "0"}, "bad rebuild count '0'"),
        ({"ZL_REBUILD_COUNT": "two"}, "bad rebuild count 'two'"),
    ],
)
def test_run_screen_bad_rebuild_inputs(sandbox, screen_env, env, why):
    proc = sandbox.run("run_screen.sh", "out", **screen_env, **env)
    assert proc.returncode == 2 and why in proc.stderr
    assert sandbox.calls("zlbench") == []
