"""Validate the gate's inputs and emit the job matrix (the `setup` job of flagtree-gate.yml).

Reads the inputs from environment variables only (the workflow maps `inputs.*` and
`github.event.client_payload.*` into them through `env:`, never into the shell
text), checks them, and writes step outputs:

  shards           JSON list [1, ..., N]: the shard matrix (K is 1-based); IN_SHARDS
                   is N or `auto[:SECONDS]`: the fewest shards whose expected wall
                   time fits SECONDS (default 900), from recorded durations (docs/ci.md)
  shard_count      N
  runner_labels    JSON list of runner labels for the GPU jobs
  screen_runner_labels  JSON list of runner labels for the screen job (CPU, no GPU
                   needed: IN_SCREEN_RUNNER_LABELS, default self-hosted, linux, x64, cpu)
  baseline         baseline dir, relative to the zlbench checkout
  ops_file         ops file relative to the zlbench checkout, or ""
  flagtree_repository, flagtree_ref
  flaggems_repository, flaggems_commit            (from the baseline manifest)
  flaggems_vllm_repository, flaggems_vllm_commit  ("" when the baseline has no vllm ops)
  zlbench_repository, zlbench_sha  (the checkout this job runs in: every job uses it)
  time, time_budget  zlbench gate's --time and --time-budget (GPU seconds for the
                   changed ops; "": no budget), for the screen job's plan
  checkout_paths   what every later job checks out of zlbench (sparse, non-cone
                   patterns, one a line): the code (zlbench/, ci/, ops/, pyproject.toml,
                   README.md) and the one baseline: its dir, or its lock and only the
                   archives that lock names (docs/ci.md "What each job checks out")

`python ci/gate_setup.py --checkout-paths` (the setup job's own first step, before the
baseline's archives are there) writes only checkout_paths and `packed` (true when the
baseline is a lock: the setup job then checks out those archives too).

Any bad input fails this job with one message in the job summary (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gha import CiError, output, output_lines, run_main, summary  # noqa: E402

MAX_SHARDS = 64
DEFAULT_LABELS = ["self-hosted", "linux", "x64", "gpu"]
DEFAULT_SCREEN_LABELS = ["self-hosted", "linux", "x64", "cpu"]  # the codegen screen's job
DEFAULT_FLAGTREE = "flagos-ai/FlagTree"
DEFAULT_FLAGGEMS = "flagos-ai/FlagGems"
DISPATCH_EVENTS = ("workflow_dispatch", "repository_dispatch")
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]*$")
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


AUTO_TARGET_WALL_S = 900  # `shards: auto`: one shard's measuring in 15 minutes
_AUTO_RE = re.compile(r"^auto(?::(\d+))?$")


def suggest_shards(root: Path, baseline: str, ops_file: str, target_s: int) -> int:
    """`zlbench batch --suggest-shards` over the gate's op set (the ops file, else the
    baseline's ops), balanced by the baseline's recorded durations when it ships an
    ops_status.csv (else every op estimated alike): docs/ci.md."""
    from zlbench.models import BaselineManifest, load_yaml_model

    manifest = load_yaml_model(baseline_tree(root, baseline) / "manifest.yaml", BaselineManifest)
    cmd = [sys.executable, "-m", "zlbench", "batch", "--suggest-shards"]
    cmd += ["--target-wall", str(target_s), "--ops-dir", str(root / "ops")]
    cmd += ["--replay-root", str(root / baseline), "--gpus", "0"]
    cmd += ["--repos", *(sorted(manifest.flaggems) or ["main"])]
    cmd += ["--dtypes", *manifest.dtypes] if manifest.dtypes else []  # as the gate replays
    if ops_file:
        cmd += ["--ops-file", str(root / ops_file)]
    else:
        cmd += ["--ops", *(_spec(key) for key in manifest.ops)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=root)
    if proc.returncode != 0 or not re.fullmatch(r"[0-9]+", proc.stdout.strip()):
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CiError(f"shards auto: could not plan the shard count ({why})")
    return int(proc.stdout.strip())


def _spec(key: str) -> str:
    """A baseline op key ``repo/run_name`` as an --ops SPEC ``repo:op[@file]``."""
    repo, run_name = key.split("/", 1)
    return f"{repo}:{run_name.replace('__at__', '@')}"


def plan_shards(text: str, root: Path, baseline: str, ops_file: str) -> list[int]:
    """IN_SHARDS: a count, or ``auto`` / ``auto:SECONDS`` (target wall of one shard)."""
    m = _AUTO_RE.match((text or "").strip())
    if not m:
        return parse_shards(text)
    n = suggest_shards(root, baseline, ops_file, int(m.group(1) or AUTO_TARGET_WALL_S))
    return parse_shards(str(min(n, MAX_SHARDS)))


def parse_shards(text: str) -> list[int]:
    text = (text or "1").strip()
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= MAX_SHARDS:  # not "³"
        raise CiError(f"shard count must be an integer from 1 to {MAX_SHARDS}, got {text!r}")
    return list(range(1, int(text) + 1))


def parse_labels(text: str, default: list[str] = DEFAULT_LABELS) -> list[str]:
    """A JSON list (`["self-hosted","gpu"]`) or a comma-separated list of labels."""
    text = (text or "").strip()
    if not text:
        return list(default)
    if text.startswith("["):
        try:
            labels = json.loads(text)
        except json.JSONDecodeError:
            raise CiError(f"runner labels are not a valid JSON list: {text!r}") from None
    else:
        labels = [x.strip() for x in text.split(",") if x.strip()]
    if not labels or not all(isinstance(x, str) and _LABEL_RE.match(x) for x in labels):
        raise CiError(f"runner labels must be non-empty plain names, got {text!r}")
    return labels


def check_repo(what: str, value: str) -> str:
    if not _REPO_RE.match(value):
        raise CiError(f"{what} must look like owner/name, got {value!r}")
    return value


def check_ref(what: str, value: str) -> str:
    if not _REF_RE.match(value) or ".." in value:
        raise CiError(f"{what} is not a valid git ref or SHA: {value!r}")
    return value


def check_relpath(root: Path, what: str, value: str, must_be_dir: bool) -> str:
    """``value`` as a relative path inside the checkout (no absolute path, no ``..``,
    no symlink out: zlbench.models.resolve_inside) that exists."""
    from zlbench.errors import ZlbenchError
    from zlbench.models import resolve_inside

    try:
        full = resolve_inside(root, value, what)
    except ZlbenchError:
        raise CiError(f"{what} must be a path inside the zlbench checkout, got {value!r}") from None
    packed = must_be_dir and full.with_name(full.name + ".lock").is_file()  # zlbench pack
    if not (full.is_dir() or packed if must_be_dir else full.is_file()):
        raise CiError(f"{what} {value!r} does not exist in the zlbench checkout")
    return Path(value).as_posix()


def baseline_tree(root: Path, baseline: str) -> Path:
    """The dir holding the baseline: itself, or a packed baseline's unpacked copy
    (zlbench/models/packed.py; the later jobs' `zlbench gate` reads the same copy)."""
    from zlbench.cli.settings import Settings
    from zlbench.cli.trees import resolve_one
    from zlbench.errors import ZlbenchError

    try:
        return resolve_one(root / baseline, Settings.from_env())
    except ZlbenchError as e:
        raise CiError(str(e)) from None


CODE_PATHS = ("/zlbench/", "/ci/", "/ops/", "/pyproject.toml", "/README.md")


def checkout_paths(root: Path, baseline: str) -> tuple[list[str], bool]:
    """The sparse-checkout patterns (non-cone, anchored at the checkout's root) of a
    job that runs zlbench against ``baseline``: the code and that baseline, a dir, or
    a lock and the archives it names (docs/baselines.md "Packed versions"); and whether
    it is packed. ``baseline`` is checked (check_relpath) first."""
    from zlbench.errors import ZlbenchError
    from zlbench.models.packed import ARCHIVE_DIR, lock_path, read_lock

    baseline = check_relpath(root, "baseline dir", baseline, must_be_dir=True)
    if (root / baseline).is_dir():
        return [*CODE_PATHS, f"/{baseline}/"], False
    try:
        lock = read_lock(lock_path(root / baseline))
    except ZlbenchError as e:
        raise CiError(str(e)) from None
    archives = [f"/{ARCHIVE_DIR}/{name}" for name in lock.archives]
    return [*CODE_PATHS, f"/{lock_path(baseline).as_posix()}", *archives], True


def check_baseline_intact(baseline: Path) -> None:
    """The baseline matches its manifest (content hashes, shape file): refused here,
    before any GPU job, as every `zlbench gate` would refuse it."""
    from zlbench.errors import ZlbenchError
    from zlbench.gate.baselines import check_intact
    from zlbench.models import BaselineManifest, load_yaml_model

    try:
        check_intact(baseline, load_yaml_model(baseline / "manifest.yaml", BaselineManifest))
    except ZlbenchError as e:
        raise CiError(str(e)) from None


def manifest_commits(baseline: Path) -> dict[str, str]:
    """repo label -> FlagGems commit recorded in the baseline manifest."""
    from zlbench.errors import ZlbenchError
    from zlbench.models import BaselineManifest, load_yaml_model

    try:
        manifest = load_yaml_model(baseline / "manifest.yaml", BaselineManifest)
    except ZlbenchError as e:
        raise CiError(f"baseline manifest unusable: {e}") from None
    out = {}
    for label, info in manifest.flaggems.items():
        commit = str((info or {}).get("commit") or "")
        if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
            raise CiError(f"baseline manifest has no FlagGems commit for repo {label!r}")
        out[label] = commit
    if "main" not in out:
        raise CiError("baseline manifest records no FlagGems commit for repo 'main'")
    return out


def zlbench_sha(root: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        raise CiError("git is not installed") from None
    if out.returncode != 0:
        raise CiError(f"{root} is not a git checkout of zlbench")
    return out.stdout.strip()


def time_budget(given: str, time_mode: str) -> str:
    """The time_budget input as `zlbench gate --time-budget` takes it ("" for none), or
    CiError before any runner builds: a number of GPU seconds > 0, with time changed."""
    if not given:
        return ""
    from zlbench.errors import ZlbenchError
    from zlbench.workflow.codegen import check_budget

    try:
        seconds = float(given)
    except ValueError:
        raise CiError(f"bad time_budget input '{given}': a number of GPU seconds > 0") from None
    try:
        check_budget(time_mode, seconds)
    except ZlbenchError as e:
        raise CiError(f"bad time_budget input '{given}': {e}") from None
    return given


def resolve(env: dict[str, str], root: Path) -> dict[str, str | list[str]]:
    """All outputs of the setup job, from the IN_* variables; raises CiError.
    ``checkout_paths`` is a list (a multiline output), every other output a string."""
    dispatched = env.get("GITHUB_EVENT_NAME", "") in DISPATCH_EVENTS
    g = lambda k: (env.get(k) or "").strip()  # noqa: E731
    ft_repo = g("IN_FLAGTREE_REPOSITORY") or (
        DEFAULT_FLAGTREE if dispatched else g("GITHUB_REPOSITORY")
    )
    ft_ref = g("IN_FLAGTREE_REF") or ("" if dispatched else g("GITHUB_SHA"))
    if not ft_ref:
        raise CiError("no FlagTree ref given (input flagtree_ref)")
    if not g("IN_BASELINE"):
        raise CiError("no baseline dir given (input baseline, e.g. baselines/v5)")
    baseline = check_relpath(root, "baseline dir", g("IN_BASELINE"), must_be_dir=True)
    ops_file = g("IN_OPS_FILE")
    tree = baseline_tree(root, baseline)
    commits = manifest_commits(tree)
    vllm_repo = g("IN_FLAGGEMS_VLLM_REPOSITORY")
    if "vllm" in commits and not vllm_repo:
        raise CiError("the baseline has vllm ops: give the flaggems_vllm_repository input")
    check_baseline_intact(tree)
    ops_file = check_relpath(root, "ops file", ops_file, False) if ops_file else ""
    shards = plan_shards(g("IN_SHARDS"), root, baseline, ops_file)
    from zlbench.workflow.codegen import TIME_MODES  # zlbench gate --time

    time_mode = g("IN_TIME") or "changed"
    if time_mode not in TIME_MODES:
        raise CiError(f"bad time input '{time_mode}': all or changed")
    paths, _ = checkout_paths(root, baseline)
    return {
        "checkout_paths": paths,
        "time": time_mode,
        "time_budget": time_budget(g("IN_TIME_BUDGET"), time_mode),
        "shards": json.dumps(shards),
        "shard_count": str(len(shards)),
        "runner_labels": json.dumps(parse_labels(g("IN_RUNNER_LABELS"))),
        "screen_runner_labels": json.dumps(
            parse_labels(g("IN_SCREEN_RUNNER_LABELS"), DEFAULT_SCREEN_LABELS)
        ),
        "baseline": baseline,
        "ops_file": ops_file,
        "flagtree_repository": check_repo("FlagTree repository", ft_repo),
        "flagtree_ref": check_ref("FlagTree ref", ft_ref),
        "flaggems_repository": check_repo(
            "FlagGems repository", g("IN_FLAGGEMS_REPOSITORY") or DEFAULT_FLAGGEMS
        ),
        "flaggems_commit": commits["main"],
        "flaggems_vllm_repository": check_repo("FlagGems vllm repository", vllm_repo)
        if "vllm" in commits
        else "",
        "flaggems_vllm_commit": commits.get("vllm", ""),
        "zlbench_repository": check_repo(
            "zlbench repository", g("IN_ZLBENCH_REPOSITORY") or g("GITHUB_REPOSITORY")
        ),
        "zlbench_sha": zlbench_sha(root),
    }


def main() -> int:
    if sys.argv[1:] == ["--checkout-paths"]:
        baseline = (os.environ.get("IN_BASELINE") or "").strip()
        if not baseline:
            raise CiError("no baseline dir given (input baseline, e.g. baselines/v5)")
        paths, packed = checkout_paths(Path.cwd(), baseline)
        output_lines("checkout_paths", paths)
        output("packed", "true" if packed else "false")
        return 0
    outputs = resolve(dict(os.environ), Path.cwd())
    for key, value in outputs.items():
        if isinstance(value, list):
            output_lines(key, value)
        else:
            output(key, value)
    summary(
        f"zlbench gate: FlagTree `{outputs['flagtree_repository']}@{outputs['flagtree_ref']}`"
        f" against `{outputs['baseline']}`, {outputs['shard_count']} shard(s)",
        "",
    )
    return 0


if __name__ == "__main__":
    run_main(main)
