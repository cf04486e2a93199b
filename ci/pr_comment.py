"""Create or update THE zlbench comment on a pull request (found by a hidden marker).

Usage: python ci/pr_comment.py COMMENT_MD [--run-url URL]  (the gate's comment.md)
Env:   GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_EVENT_PATH,
       GITHUB_SERVER_URL + GITHUB_RUN_ID (the default --run-url: this run's page)
       ZL_PR_NUMBER  optional; default: the pull request of the triggering event

The gate's comment.md (report.md cut to fit a comment) starts with
``<!-- zlbench-gate -->``. The first comment
by a bot that contains the marker is edited in place, so a PR carries one gate
comment however often it is pushed; otherwise a new one is posted. Not a pull
request: nothing to do. A token that may not comment (a PR from a fork gets a
read-only token) or any API error: a warning, exit 0; the comment is a
convenience, the check's result and the job summary carry the verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gha import run_main, warn  # noqa: E402

MARKER = "<!-- zlbench-gate -->"
MAX_BODY = 65_000  # GitHub rejects comment bodies over 65,536 characters


def build_body(report: str, run_url: str | None) -> str:
    """The comment text: marker first, run link last. The gate's comment.md already
    fits (cut at row and section boundaries); anything longer is cut at a line
    boundary with any open code fence closed, so the rest never renders as code."""
    body = report if report.lstrip().startswith(MARKER) else f"{MARKER}\n{report}"
    footer = f"\n\n[Full report, JUnit results and artifacts]({run_url})\n" if run_url else "\n"
    room = MAX_BODY - len(footer)
    if len(body) > room:
        note = "\n\n… report truncated; the full report.md is in the run's artifact."
        kept = body[: room - len(note) - 5]
        kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
        if sum(line.lstrip().startswith("```") for line in kept.splitlines()) % 2:
            kept += "\n```"
        body = kept + note
    return body.rstrip() + footer


def pr_number(env: dict[str, str]) -> int | None:
    if (env.get("ZL_PR_NUMBER") or "").strip():
        return int(env["ZL_PR_NUMBER"])
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        event = json.load(f)
    pr = event.get("pull_request") or {}
    if not pr.get("number"):  # a comment on a pull request (`/zlbench`): issue_comment
        issue = event.get("issue") or {}
        pr = issue if issue.get("pull_request") else {}
    return int(pr["number"]) if pr.get("number") else None


def default_run_url(env: dict[str, str]) -> str | None:
    parts = [env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if not all(parts):
        return None
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}"


class GitHubApi:
    """The three REST calls needed, over urllib (no extra dependency)."""

    def __init__(self, api_url: str, token: str) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, payload: dict | None = None):
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(f"{self.api_url}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")


def find_comment(api, repo: str, number: int) -> int | None:
    """Id of the first bot comment holding the marker, or None."""
    page = 1
    while True:
        path = f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}"
        batch = api.request("GET", path)
        for c in batch or []:
            if MARKER in (c.get("body") or "") and (c.get("user") or {}).get("type") == "Bot":
                return int(c["id"])
        if not batch or len(batch) < 100:
            return None
        page += 1


def upsert(api, repo: str, number: int, body: str) -> str:
    """Edit the marked comment or post a new one; returns what it did."""
    cid = find_comment(api, repo, number)
    if cid is None:
        api.request("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
        return f"posted the zlbench comment on #{number}"
    api.request("PATCH", f"/repos/{repo}/issues/comments/{cid}", {"body": body})
    return f"updated the zlbench comment {cid} on #{number}"


def main(argv: list[str] | None = None, env: dict[str, str] | None = None, api=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--run-url", default=None)
    args = ap.parse_args(argv)
    env = dict(os.environ) if env is None else env
    number = pr_number(env)
    if number is None:
        print("not a pull request: no comment")
        return 0
    if not args.report.is_file():
        warn(f"no report at {args.report}: no PR comment")
        return 0
    run_url = args.run_url or default_run_url(env)
    body = build_body(args.report.read_text(encoding="utf-8"), run_url)
    api = api or GitHubApi(env.get("GITHUB_API_URL", "https://api.github.com"), env["GITHUB_TOKEN"])
    try:
        print(upsert(api, env["GITHUB_REPOSITORY"], number, body))
    except urllib.error.HTTPError as e:
        hint = " (a PR from a fork gets a read-only token)" if e.code in (403, 404) else ""
        warn(f"could not comment on #{number}: HTTP {e.code}{hint}; the verdict is in the summary")
    except (urllib.error.URLError, OSError) as e:
        warn(f"could not comment on #{number}: {e}; the verdict is in the summary")
    return 0


if __name__ == "__main__":
    run_main(main)
