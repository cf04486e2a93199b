"""The ci/*.py helpers: input checks and shard plan, shard collection, the triton
distribution check and the PR comment upsert. Pure logic is called directly; each
script is also run once as the workflow runs it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from zlbench.gate.baselines import content_hashes
from zlbench.models import BaselineManifest, dump_yaml_model

# --------------------------------------------------------------------------- gate_setup.py


@pytest.fixture
def setup_root(tmp_path: Path) -> Path:
    """A zlbench checkout (git) with baselines/v1 and an ops file."""
    op = tmp_path / "baselines" / "v1" / "main" / "add"
    op.mkdir(parents=True)
    (op / "result.json").write_text("{}\n")
    manifest = BaselineManifest(
        name="v1",
        created="2026-01-01T00:00:00Z",
        flaggems={"main": {"package": "flag_gems", "commit": "a" * 40}},
        files=content_hashes(tmp_path / "baselines" / "v1"),
    )
    dump_yaml_model(tmp_path / "baselines" / "v1" / "manifest.yaml", manifest)
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "gate.txt").write_text("add\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    return tmp_path


CALLED = {  # what FlagTree's pull_request run looks like through workflow_call
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_REPOSITORY": "flagos-ai/FlagTree",
    "GITHUB_SHA": "b" * 40,
    "IN_ZLBENCH_REPOSITORY": "org/zlbench",
    "IN_BASELINE": "baselines/v1",
}


def test_setup_plans_one_based_shards(ci_module, setup_root):
    setup = ci_module("gate_setup")
    out = setup.resolve({**CALLED, "IN_SHARDS": "3", "IN_OPS_FILE": "ops/gate.txt"}, setup_root)
    assert json.loads(out["shards"]) == [1, 2, 3]
    assert out["shard_count"] == "3"
    assert out["flagtree_repository"] == "flagos-ai/FlagTree"  # the caller
    assert out["flagtree_ref"] == "b" * 40  # the caller's commit
    assert out["flaggems_commit"] == "a" * 40  # from the manifest
    assert out["flaggems_vllm_commit"] == ""
    assert out["ops_file"] == "ops/gate.txt"
    assert json.loads(out["runner_labels"]) == ["self-hosted", "linux", "x64", "gpu"]
    assert out["zlbench_repository"] == "org/zlbench"
    assert len(out["zlbench_sha"]) == 40
    assert out["time"] == "changed"  # the default (docs/ci.md); "all" passes through
    assert setup.resolve({**CALLED, "IN_TIME": "changed"}, setup_root)["time"] == "changed"
    assert out["time_budget"] == ""  # no budget unless given
    given = setup.resolve({**CALLED, "IN_TIME_BUDGET": " 90 "}, setup_root)
    assert given["time_budget"] == "90"
    with pytest.raises(setup.CiError, match="only with --time changed"):
        setup.resolve({**CALLED, "IN_TIME": "all", "IN_TIME_BUDGET": "90"}, setup_root)


def test_setup_defaults_for_a_dispatch(ci_module, setup_root):
    setup = ci_module("gate_setup")
    env = {"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_REPOSITORY": "org/zlbench"}
    with pytest.raises(setup.CiError, match="no FlagTree ref"):
        setup.resolve({**env, "IN_BASELINE": "baselines/v1"}, setup_root)
    out = setup.resolve(
        {**env, "IN_BASELINE": "baselines/v1", "IN_FLAGTREE_REF": "main"}, setup_root
    )
    assert out["flagtree_repository"] == "flagos-ai/FlagTree"
    assert out["shards"] == "[1]"
    assert out["zlbench_repository"] == "org/zlbench"


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("IN_SHARDS", "0", "shard count"),
        ("IN_SHARDS", "65", "shard count"),
        ("IN_SHARDS", "two", "shard count"),
        ("IN_SHARDS", "-1", "shard count"),
        ("IN_RUNNER_LABELS", '["gpu"', "not a valid JSON list"),
        ("IN_RUNNER_LABELS", "gpu; rm -rf /", "plain names"),
        ("IN_RUNNER_LABELS", "[1, 2]", "plain names"),
        ("IN_BASELINE", "", "no baseline dir"),
        ("IN_BASELINE", "baselines/v9", "does not exist"),
        ("IN_BASELINE", "../baselines/v1", "inside the zlbench checkout"),
        ("IN_BASELINE", "/etc", "inside the zlbench checkout"),
        ("IN_OPS_FILE", "ops/none.txt", "does not exist"),
        ("IN_FLAGTREE_REPOSITORY", "not a repo", "owner/name"),
        ("IN_FLAGTREE_REF", "main;id", "not a valid git ref"),
        ("IN_FLAGTREE_REF", "a..b", "not a valid git ref"),
        ("IN_TIME", "some", "bad time input 'some'"),  # before any runner builds
        ("IN_TIME_BUDGET", "ninety", "bad time_budget input 'ninety': a number"),
        ("IN_TIME_BUDGET", "0", "must be a number of seconds > 0"),
        ("IN_TIME_BUDGET", "-30", "must be a number of seconds > 0"),
        ("IN_TIME_BUDGET", "nan", "must be a number of seconds > 0"),
        ("IN_TIME_BUDGET", "inf", "must be a number of seconds > 0"),
    ],
)
def test_setup_rejects_bad_input(ci_module, setup_root, key, value, match):
    setup = ci_module("gate_setup")
    with pytest.raises(setup.CiError, match=match):
        setup.resolve({**CALLED, key: value}, setup_root)


def test_setup_labels_as_comma_list(ci_module):
    setup = ci_module("gate_setup")
    assert setup.parse_labels("self-hosted, h200 ,linux") == ["self-hosted", "h200", "linux"]


@pytest.mark.parametrize(
    "flaggems,match",
    [
        ({}, "no FlagGems commit for repo 'main'"),
        ({"main": {"commit": None}}, "no FlagGems commit"),
        ({"main": {"commit": "c" * 40}, "vllm": {"commit": "d" * 40}}, "flaggems_vllm_repository"),
    ],
)
def test_setup_checks_the_manifest(ci_module, setup_root, flaggems, match):
    setup = ci_module("gate_setup")
    path = setup_root / "baselines" / "v1" / "manifest.yaml"
    dump_yaml_model(path, BaselineManifest(name="v1", created="x", flaggems=flaggems))
    with pytest.raises(setup.CiError, match=match):
        setup.resolve(CALLED, setup_root)


def test_setup_reads_a_packed_baseline(ci_module, setup_root, tmp_path, monkeypatch):
    """A baseline kept as a lock and an archive (zlbench pack) is unpacked and checked
    like a checked-out one; its output names it as given."""
    import shutil

    from zlbench.models.packed import lock_path, pack_tree

    setup = ci_module("gate_setup")
    v1 = setup_root / "baselines" / "v1"
    lock, _, _ = pack_tree(v1, setup_root / "archive")
    lock_path(v1).write_text(lock.render())
    shutil.rmtree(v1)
    monkeypatch.setenv("ZLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert setup.resolve(CALLED, setup_root)["baseline"] == "baselines/v1"
    (setup_root / "archive" / lock.archives[0]).unlink()
    shutil.rmtree(tmp_path / "cache")
    with pytest.raises(setup.CiError, match="archive missing"):
        setup.resolve(CALLED, setup_root)


# --------------------------------------------------------------------------- checkout paths

CODE = ["/zlbench/", "/ci/", "/ops/", "/pyproject.toml", "/README.md"]


def test_a_job_checks_out_the_code_and_the_one_baseline_dir(ci_module, setup_root):
    setup = ci_module("gate_setup")
    (setup_root / "baselines" / "v2").mkdir()  # another baseline: not checked out
    assert setup.checkout_paths(setup_root, "baselines/v1") == ([*CODE, "/baselines/v1/"], False)
    assert setup.resolve(CALLED, setup_root)["checkout_paths"] == [*CODE, "/baselines/v1/"]


def test_a_packed_baseline_is_its_lock_and_only_the_archives_it_names(
    ci_module, setup_root, tmp_path, monkeypatch
):
    import shutil

    from zlbench.models.packed import lock_path, pack_tree

    setup = ci_module("gate_setup")
    v1 = setup_root / "baselines" / "v1"
    lock, name, _ = pack_tree(v1, setup_root / "archive")
    lock_path(v1).write_text(lock.render())
    shutil.rmtree(v1)
    (setup_root / "archive" / ("f" * 64 + ".tar.xz")).write_bytes(b"another version's")
    paths, packed = setup.checkout_paths(setup_root, "baselines/v1")
    assert packed and paths == [*CODE, "/baselines/v1.lock", f"/archive/{name}"]
    monkeypatch.setenv("ZLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert setup.resolve(CALLED, setup_root)["checkout_paths"] == paths


@pytest.mark.parametrize(
    "baseline,match",
    [("baselines/v9", "does not exist"), ("../x", "inside the zlbench checkout")],
)
def test_checkout_paths_of_a_bad_baseline_is_one_line(ci_module, setup_root, baseline, match):
    setup = ci_module("gate_setup")
    with pytest.raises(setup.CiError, match=match):
        setup.checkout_paths(setup_root, baseline)
    (setup_root / "baselines" / "v3.lock").write_text("{not a lock")
    with pytest.raises(setup.CiError, match="v3.lock"):
        setup.checkout_paths(setup_root, "baselines/v3")


def test_setup_writes_checkout_paths_as_a_multiline_output(setup_root, sandbox):
    """`--checkout-paths` (the setup job's first step) and the plan both write the list
    as GitHub's ``key<<DELIMITER`` output, one pattern a line."""
    proc = sandbox.run(
        "gate_setup.py", "--checkout-paths", cwd=setup_root, IN_BASELINE="baselines/v1"
    )
    assert proc.returncode == 0, proc.stderr
    text = sandbox.output.read_text()
    head, *body = text.splitlines()
    key, delimiter = head.split("<<")
    assert key == "checkout_paths" and delimiter.startswith("ZL_EOF_")
    assert body[: len(CODE) + 2] == [*CODE, "/baselines/v1/", delimiter]
    assert body[len(CODE) + 2 :] == ["packed=false"]


def test_setup_refuses_a_baseline_that_does_not_match_its_manifest(ci_module, setup_root):
    setup = ci_module("gate_setup")
    (setup_root / "baselines" / "v1" / "main" / "add" / "result.json").write_text("{ }\n")
    with pytest.raises(setup.CiError, match="main/add/result.json: content changed"):
        setup.resolve(CALLED, setup_root)


def test_setup_refuses_a_baseline_linked_out_of_the_checkout(ci_module, setup_root, tmp_path):
    setup = ci_module("gate_setup")
    (setup_root / "baselines" / "v2").symlink_to(setup_root / "baselines" / "v1")
    assert setup.resolve({**CALLED, "IN_BASELINE": "baselines/v2"}, setup_root)["baseline"]
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (setup_root / "baselines" / "v3").symlink_to(outside)
    with pytest.raises(setup.CiError, match="must be a path inside the zlbench checkout"):
        setup.resolve({**CALLED, "IN_BASELINE": "baselines/v3"}, setup_root)


def test_setup_script_writes_outputs_or_fails_clearly(sandbox, setup_root):
    proc = sandbox.run("gate_setup.py", cwd=setup_root, **CALLED, IN_SHARDS="2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sandbox.outputs()["shards"] == "[1, 2]"
    assert sandbox.outputs()["checkout_paths"].splitlines() == [*CODE, "/baselines/v1/"]
    proc = sandbox.run("gate_setup.py", cwd=setup_root, **{**CALLED, "IN_BASELINE": "nope"})
    assert proc.returncode == 2
    assert "baseline dir 'nope' does not exist" in sandbox.summary_text()
    assert "::error" in proc.stdout


# --------------------------------------------------------------------------- collect_shards.py


def make_shard(root: Path, k: int, n: int, rc: int = 0) -> Path:
    d = root / f"zlbench-shard-{k}-of-{n}"
    (d / "gate" / "results").mkdir(parents=True, exist_ok=True)
    (d / "shard.json").write_text(json.dumps({"shard": k, "count": n, "exit_code": rc}))
    return d


def test_collect_all_shards_in_order(ci_module, tmp_path):
    collect = ci_module("collect_shards")
    for k in (3, 1, 2):
        make_shard(tmp_path, k, 3, rc=1 if k == 2 else 0)
    dirs = collect.collect(tmp_path, 3)
    # the gate dirs themselves: `zlbench merge` carries their confirm/<i>/ passes too
    assert dirs == [tmp_path / f"zlbench-shard-{k}-of-3" / "gate" for k in (1, 2, 3)]


def test_collect_single_shard_extracted_in_place(ci_module, tmp_path):
    """download-artifact extracts a pattern's only match without a subfolder."""
    collect = ci_module("collect_shards")
    (tmp_path / "gate" / "results").mkdir(parents=True)
    (tmp_path / "shard.json").write_text(json.dumps({"shard": 1, "count": 1, "exit_code": 0}))
    assert collect.collect(tmp_path, 1) == [tmp_path / "gate"]
    with pytest.raises(collect.CiError, match="2/2 missing"):
        collect.collect(tmp_path, 2)


def test_collect_names_with_artifact_name_the_workflow_uses(ci_module):
    assert ci_module("collect_shards").artifact_name(2, 5) == "zlbench-shard-2-of-5"


@pytest.mark.parametrize(
    "damage,match",
    [
        ("missing", "2/3 missing"),
        ("no-json", "2/3 has no readable shard.json"),
        ("could-not-measure", "2/3 could not measure"),
        ("wrong-id", "2/3 artifact says it is shard 1/3"),
        ("no-gate", "2/3 has no gate/ results"),
        ("no-results", "2/3 has no gate/ results"),
        ("stray", "stray artifact zlbench-shard-1-of-4"),
    ],
)
def test_collect_refuses_incomplete_shards(ci_module, tmp_path, damage, match):
    collect = ci_module("collect_shards")
    for k in (1, 2, 3):
        make_shard(tmp_path, k, 3)
    bad = tmp_path / "zlbench-shard-2-of-3"
    if damage == "missing":
        import shutil

        shutil.rmtree(bad)
    elif damage == "no-json":
        (bad / "shard.json").unlink()
    elif damage == "could-not-measure":
        make_shard(tmp_path, 2, 3, rc=2)
    elif damage == "wrong-id":
        (bad / "shard.json").write_text(json.dumps({"shard": 1, "count": 3, "exit_code": 0}))
    elif damage == "no-gate":
        import shutil

        shutil.rmtree(bad / "gate")
    elif damage == "no-results":
        (bad / "gate" / "results").rmdir()
    elif damage == "stray":
        make_shard(tmp_path, 1, 4)
    with pytest.raises(collect.CiError, match=match):
        collect.collect(tmp_path, 3)


@pytest.mark.parametrize(
    "part", ["gate", "gate/results", "shard.json", ".", "gate/results/main/add/result.json"]
)
def test_collect_refuses_a_shard_linked_out_of_the_artifacts(ci_module, tmp_path, part):
    import shutil

    collect = ci_module("collect_shards")
    root = tmp_path / "shards"
    for k in (1, 2):
        make_shard(root, k, 2)
    elsewhere = make_shard(tmp_path / "elsewhere", 2, 2)
    for d in (root / "zlbench-shard-2-of-2", elsewhere):
        (d / "gate" / "results" / "main" / "add").mkdir(parents=True)
        (d / "gate" / "results" / "main" / "add" / "result.json").write_text("{}")
    target = root / "zlbench-shard-2-of-2" / part
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    target.symlink_to(elsewhere / part)
    with pytest.raises(collect.CiError, match=r"2/2 has a link outside the artifacts: .*outside"):
        collect.collect(root, 2)


def test_collect_script_fails_the_step_when_a_shard_is_missing(sandbox):
    root = sandbox.tmp / "shards"
    make_shard(root, 1, 3)
    make_shard(root, 3, 3)
    listing = sandbox.tmp / "list.txt"
    proc = sandbox.run("collect_shards.py", str(root), "--count", "3", "--list-out", str(listing))
    assert proc.returncode == 2
    assert "refusing to judge" in sandbox.summary_text()
    assert "2/3 missing (no artifact zlbench-shard-2-of-3)" in sandbox.summary_text()
    assert not listing.exists()
    make_shard(root, 2, 3)
    proc = sandbox.run("collect_shards.py", str(root), "--count", "3", "--list-out", str(listing))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(listing.read_text().splitlines()) == 3


def test_collect_with_no_artifacts_at_all(sandbox):
    proc = sandbox.run("collect_shards.py", "absent", "--count", "2", "--list-out", "l.txt")
    assert proc.returncode == 2
    assert "1/2 missing" in sandbox.summary_text() and "2/2 missing" in sandbox.summary_text()


# --------------------------------------------------------------------------- check_triton_dist.py


def fake_dist(site: Path, dist: str, version: str = "1.0") -> None:
    """A distribution named ``dist`` that installs a package ``triton`` into ``site``."""
    (site / "triton").mkdir(parents=True)
    (site / "triton" / "__init__.py").write_text("")
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "top_level.txt").write_text("triton\n")
    (info / "RECORD").write_text(f"triton/__init__.py,,\n{info.name}/METADATA,,\n")


def check_in(sandbox, *sites: Path):
    """Run the check in a python that sees only ``sites`` (no venv site-packages)."""
    pythonpath = ":".join(str(s) for s in sites)
    script = str(Path(__file__).resolve().parents[2] / "ci" / "check_triton_dist.py")
    return subprocess.run(
        [sys.executable, "-S", script, "--expect", "flagtree"],
        env={**sandbox.env, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_triton_from_flagtree_passes(sandbox):
    fake_dist(sandbox.tmp / "site", "flagtree", "0.5.0")
    proc = check_in(sandbox, sandbox.tmp / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "triton is provided by flagtree 0.5.0" in proc.stdout


def test_upstream_triton_fails(sandbox):
    fake_dist(sandbox.tmp / "site", "triton", "3.6.0")
    proc = check_in(sandbox, sandbox.tmp / "site")
    assert proc.returncode == 2
    assert "resolves to distribution triton" in sandbox.summary_text()
    assert "pip uninstall -y triton" in sandbox.summary_text()


def test_no_triton_fails(sandbox):
    (sandbox.tmp / "site").mkdir()
    proc = check_in(sandbox, sandbox.tmp / "site")
    assert proc.returncode == 2
    assert "finds nothing" in sandbox.summary_text()


def test_flagtree_shadowing_upstream_passes_with_warning(sandbox):
    fake_dist(sandbox.tmp / "venv", "flagtree", "0.5.0")
    fake_dist(sandbox.tmp / "system", "triton", "3.6.0")
    proc = check_in(sandbox, sandbox.tmp / "venv", sandbox.tmp / "system")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shadowed: triton" in proc.stdout


def test_upstream_triton_shadowing_flagtree_fails(sandbox):
    fake_dist(sandbox.tmp / "system", "flagtree", "0.5.0")
    fake_dist(sandbox.tmp / "venv", "triton", "3.6.0")
    proc = check_in(sandbox, sandbox.tmp / "venv", sandbox.tmp / "system")
    assert proc.returncode == 2
    summary = sandbox.summary_text()
    assert "resolves to distribution triton" in summary and "not flagtree" in summary


# --------------------------------------------------------------------------- pr_comment.py


class FakeApi:
    def __init__(self, pages: list[list[dict]], error: int | None = None) -> None:
        self.pages = pages
        self.error = error
        self.calls: list[tuple[str, str, dict | None]] = []

    def request(self, method, path, payload=None):
        self.calls.append((method, path, payload))
        if self.error:
            raise urllib.error.HTTPError(path, self.error, "nope", {}, io.BytesIO())
        if method == "GET":
            page = int(path.rsplit("page=", 1)[1])
            return self.pages[page - 1] if page <= len(self.pages) else []
        return {}


BOT = {"type": "Bot", "login": "github-actions[bot]"}
HUMAN = {"type": "User", "login": "someone"}
ENV = {"GITHUB_REPOSITORY": "flagos-ai/FlagTree", "ZL_PR_NUMBER": "7", "GITHUB_TOKEN": "t"}


@pytest.fixture
def report(tmp_path: Path) -> Path:
    p = tmp_path / "report.md"
    p.write_text("<!-- zlbench-gate -->\n## zlbench gate: FAIL\n")
    return p


def test_comment_created_when_none_exists(ci_module, report):
    pr = ci_module("pr_comment")
    api = FakeApi([[{"id": 1, "body": "lgtm", "user": HUMAN}]])
    assert pr.main([str(report), "--run-url", "https://x/run/1"], env=ENV, api=api) == 0
    method, path, payload = api.calls[-1]
    assert (method, path) == ("POST", "/repos/flagos-ai/FlagTree/issues/7/comments")
    assert payload["body"].startswith(pr.MARKER)
    assert "https://x/run/1" in payload["body"]


def test_comment_updated_in_place_found_by_marker(ci_module, report):
    pr = ci_module("pr_comment")
    quoted = {"id": 2, "body": f"> {pr.MARKER} quoted by a person", "user": HUMAN}
    ours = {"id": 3, "body": f"{pr.MARKER}\nold report", "user": BOT}
    filler = [{"id": 100 + i, "body": "x", "user": HUMAN} for i in range(100)]
    api = FakeApi([filler, [quoted, ours]])
    pr.main([str(report)], env=ENV, api=api)
    assert [c[0] for c in api.calls] == ["GET", "GET", "PATCH"]
    assert api.calls[-1][1] == "/repos/flagos-ai/FlagTree/issues/comments/3"


def test_comment_body_marker_and_size(ci_module):
    pr = ci_module("pr_comment")
    body = pr.build_body("no marker here\n" + "x" * 100_000, "https://x/run/1")
    assert body.startswith(pr.MARKER)
    assert len(body) <= 65_536
    assert "truncated" in body and body.rstrip().endswith("(https://x/run/1)")


def test_an_oversized_comment_is_cut_at_a_line_with_its_code_fence_closed(ci_module):
    pr = ci_module("pr_comment")
    report = "<!-- zlbench-gate -->\n## FAIL\n\n```sh\n" + "zlbench run --op x\n" * 10_000
    body = pr.build_body(report, "https://x/run/1")
    assert len(body) <= 65_536 and "truncated" in body
    head = body.split("… report truncated")[0]
    assert sum(line.startswith("```") for line in head.splitlines()) % 2 == 0
    assert "zlbench run --op x\n```" in head  # whole lines, then the fence closed


def test_comment_default_run_url(ci_module, report):
    pr = ci_module("pr_comment")
    env = {**ENV, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42"}
    api = FakeApi([[]])
    pr.main([str(report)], env=env, api=api)
    assert "https://github.com/flagos-ai/FlagTree/actions/runs/42" in api.calls[-1][2]["body"]


def test_comment_skipped_outside_pull_requests(ci_module, report, tmp_path):
    pr = ci_module("pr_comment")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))  # a push
    api = FakeApi([[]])
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event)}
    assert pr.main([str(report)], env=env, api=api) == 0
    assert api.calls == []
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    assert pr.pr_number(env) == 12


def test_a_zlbench_comment_on_a_pull_request_is_answered_on_it(ci_module, tmp_path):
    """`/zlbench` (issue_comment): the event names the PR as an issue with a
    pull_request key; a comment on a plain issue is no pull request."""
    pr = ci_module("pr_comment")
    event = tmp_path / "event.json"
    env = {"GITHUB_EVENT_PATH": str(event)}
    event.write_text(json.dumps({"issue": {"number": 7, "pull_request": {"url": "u"}}}))
    assert pr.pr_number(env) == 7
    event.write_text(json.dumps({"issue": {"number": 8}}))
    assert pr.pr_number(env) is None


def test_comment_forbidden_is_a_warning(ci_module, report, capsys):
    pr = ci_module("pr_comment")
    assert pr.main([str(report)], env=ENV, api=FakeApi([[]], error=403)) == 0
    assert "read-only token" in capsys.readouterr().out


# --------------------------------------------------------------------------- shards: auto


@pytest.fixture
def auto_root(setup_root: Path) -> Path:
    """setup_root with an inventory of 6 ops and recorded durations in the baseline."""
    from zlbench.runner.catalog.inventory import InventoryRow, inventory_path, write_inventory

    ops = ["add", "abs", "exp", "mm", "topk", "sum"]
    rows = [
        InventoryRow("main", op, op, "B", f"benchmark/test_{op}.py", f"test_{op}", op, "", "")
        for op in ops
    ]
    write_inventory(inventory_path(setup_root / "ops", "main"), rows)
    (setup_root / "ops" / "six.txt").write_text("\n".join(ops) + "\n")
    lines = ["repo,op,run_name,status,rc,attempts,dtype_used,rows,seconds,gpu,run_dir,note"]
    lines += [
        f"main,{op},{op},PASS,0,1,bfloat16,1,{s},0,main/{op},"
        for op, s in [("add", 1), ("abs", 1), ("exp", 2), ("mm", 30), ("topk", 60), ("sum", 2)]
    ]
    (setup_root / "durations").mkdir()
    (setup_root / "durations" / "ops_status.csv").write_text("\n".join(lines) + "\n")
    base = setup_root / "baselines" / "v1"
    manifest = BaselineManifest(
        name="v1",
        created="2026-01-01T00:00:00Z",
        flaggems={"main": {"package": "flag_gems", "commit": "a" * 40}},
        dtypes=["bfloat16"],  # the gate replays these: durations count once
        ops=["main/add"],
        files=content_hashes(base),
    )
    dump_yaml_model(base / "manifest.yaml", manifest)
    return setup_root


def test_setup_auto_shards_fit_the_target_wall(ci_module, auto_root, monkeypatch):
    from zlbench.runner.batch.costs import PROCESS_START_S

    setup = ci_module("gate_setup")
    # the durations as a baseline would ship them: <baseline>/ops_status.csv
    monkeypatch.setattr(setup, "suggest_shards", _with_durations(setup, auto_root))
    wall = lambda s: int(s + PROCESS_START_S + 1)  # noqa: E731
    assert setup.plan_shards(f"auto:{wall(60)}", auto_root, "baselines/v1", "ops/six.txt") == [1, 2]
    assert setup.plan_shards(f"auto:{wall(96)}", auto_root, "baselines/v1", "ops/six.txt") == [1]
    assert setup.plan_shards("3", auto_root, "baselines/v1", "") == [1, 2, 3]


def _with_durations(setup, root):
    real = setup.suggest_shards

    def suggest(root_, baseline, ops_file, target_s):
        import shutil

        shutil.copy(root / "durations" / "ops_status.csv", root / baseline / "ops_status.csv")
        try:
            return real(root_, baseline, ops_file, target_s)
        finally:
            (root / baseline / "ops_status.csv").unlink()

    return suggest


def test_setup_auto_shards_default_to_the_baseline_ops(ci_module, auto_root):
    setup = ci_module("gate_setup")
    out = setup.resolve({**CALLED, "IN_SHARDS": "auto"}, auto_root)
    assert out["shards"] == "[1]"  # one op (main/add), no durations: one shard fits 900 s


def test_setup_auto_shards_that_cannot_plan_fail_with_one_line(ci_module, setup_root):
    setup = ci_module("gate_setup")  # no inventory in ops/: zlbench refuses the selection
    with pytest.raises(setup.CiError, match=r"shards auto: could not plan .*inventory"):
        setup.plan_shards("auto:600", setup_root, "baselines/v1", "ops/gate.txt")
    assert setup._spec("main/mm__at__test_mm.py") == "main:mm@test_mm.py"
