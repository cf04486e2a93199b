"""FlagTree's caller workflow (ci/flagtree-caller.yml, shown in docs/ci.md): pull
requests, pushes, and a maintainer's `/zlbench [tier]` comment, parsed strictly."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CALLER = REPO / "ci" / "flagtree-caller.yml"
HEAD, BASE, MERGE_BASE = "a" * 40, "b" * 40, "c" * 40


@pytest.fixture(scope="module")
def caller() -> dict:
    data = yaml.safe_load(CALLER.read_text(encoding="utf-8"))
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as True
    return data


def test_docs_show_the_caller_as_it_is(caller):
    """docs/ci.md's caller is this file, byte for byte (the file is the one linted)."""
    doc = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert CALLER.read_text(encoding="utf-8") in blocks


def test_triggers_and_least_privilege(caller):
    assert set(caller["on"]) == {"pull_request", "push", "issue_comment"}
    assert caller["on"]["issue_comment"] == {"types": ["created"]}
    assert caller["permissions"] == {}
    comment, gate = caller["jobs"]["comment"], caller["jobs"]["gate"]
    assert comment["permissions"] == {"contents": "read", "pull-requests": "read"}
    assert gate["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert "comment.id" in caller["concurrency"]["group"]  # a comment cancels no PR gate


def test_only_owners_members_and_collaborators_start_it_by_comment(caller):
    cond = " ".join(caller["jobs"]["comment"]["if"].split())
    m = re.search(
        r"contains\(fromJSON\('(\[.*?\])'\), github\.event\.comment\.author_association\)", cond
    )
    assert m and json.loads(m[1]) == ["OWNER", "MEMBER", "COLLABORATOR"]
    assert "github.event.issue.pull_request" in cond  # a comment on a PR, not an issue
    assert "github.event.comment.body == '/zlbench'" in cond
    assert "startsWith(github.event.comment.body, '/zlbench ')" in cond


def test_the_comment_reaches_the_script_only_through_env(caller):
    [step] = caller["jobs"]["comment"]["steps"]
    assert "${{" not in step["run"]
    assert step["env"]["ZL_BODY"] == "${{ github.event.comment.body }}"


def test_the_gate_takes_the_comments_commits_and_tier(caller):
    gate = caller["jobs"]["gate"]
    assert gate["needs"] == "comment"
    cond = " ".join(gate["if"].split())
    assert cond.startswith("!cancelled() &&") and "needs.comment.result == 'success'" in cond
    w = gate["with"]
    assert w["flagtree_ref"] == "${{ needs.comment.outputs.head_sha }}"
    assert w["base_ref"] == "${{ needs.comment.outputs.base_sha }}"
    assert w["ops_file"] == "${{ needs.comment.outputs.ops_file }}"
    assert w["zlbench_repository"] == "ORG/zlbench"
    assert gate["uses"].startswith("ORG/zlbench/.github/workflows/flagtree-gate.yml@")


FAKE_GH = f"""#!/usr/bin/env bash
case "$*" in
  *"/pulls/"*".head.sha") echo {HEAD} ;;
  *"/pulls/"*".base.sha") echo {BASE} ;;
  *"/compare/{BASE}...{HEAD} "*) echo {MERGE_BASE} ;;
  *) exit 1 ;;
esac
"""


def _parse(caller, tmp_path: Path, body: str, pr: str = "12"):
    [step] = caller["jobs"]["comment"]["steps"]
    (tmp_path / "bin").mkdir(exist_ok=True)
    gh = tmp_path / "bin" / "gh"
    gh.write_text(FAKE_GH)
    gh.chmod(0o755)
    out = tmp_path / "out.txt"
    out.write_text("")
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "ZL_BODY": body,
        "ZL_PR": pr,
        "GH_REPO": "flagos-ai/FlagTree",
        "GITHUB_OUTPUT": str(out),
    }
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", step["run"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return proc, dict(line.split("=", 1) for line in out.read_text().splitlines())


@pytest.mark.proc
@pytest.mark.parametrize(
    "body,tier",
    [
        ("/zlbench", "pr"),
        ("/zlbench pr", "pr"),
        ("/zlbench nightly", "nightly"),
        ("/zlbench  nightly \r\nplease, on the new runner", "nightly"),
    ],
)
def test_a_well_formed_command_names_the_tier_and_the_prs_commits(caller, tmp_path, body, tier):
    proc, out = _parse(caller, tmp_path, body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out == {"ops_file": f"ops/tiers/{tier}.txt", "head_sha": HEAD, "base_sha": MERGE_BASE}


@pytest.mark.proc
@pytest.mark.parametrize(
    "body,pr",
    [
        ("/zlbench weekly", "12"),
        ("/zlbench ../../etc/passwd", "12"),
        ("/zlbench pr; rm -rf /", "12"),
        ("/zlbench pr nightly", "12"),
        ("/zlbench $(id)", "12"),
        ("/zlbenchpr", "12"),
        ("/zlbench pr", "12; id"),
    ],
)
def test_anything_else_fails_with_the_usage_and_runs_nothing(caller, tmp_path, body, pr):
    proc, out = _parse(caller, tmp_path, body, pr)
    assert proc.returncode == 2
    assert proc.stdout.startswith("::error::") and out == {}
