"""Every environment variable zlbench reads, in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zlbench.models import FLAGGEMS_DIR_VARS
from zlbench.models.packed import cache_dir


@dataclass(frozen=True)
class Settings:
    flaggems_dir: str | None  # ZLBENCH_FLAGGEMS_DIR: the main FlagGems checkout
    flaggems_vllm_dir: str | None  # ZLBENCH_FLAGGEMS_VLLM_DIR: the vllm FlagGems checkout
    flagtree_dir: str | None  # ZLBENCH_FLAGTREE_DIR: FlagTree checkout (commit in reports)
    cuda_visible_devices: str | None  # CUDA_VISIBLE_DEVICES
    github_step_summary: str | None  # GITHUB_STEP_SUMMARY (gate appends report.md)
    zlbench_commit: str | None  # ZLBENCH_COMMIT: zlbench's commit where the checkout has no .git
    no_color: bool  # NO_COLOR set: never colour
    force_color: bool  # FORCE_COLOR set: colour even without a tty
    # GITHUB_SERVER_URL / GITHUB_REPOSITORY / GITHUB_RUN_ID: this CI run's page
    run_url: str = ""
    # ZLBENCH_CACHE_DIR (else $XDG_CACHE_HOME/zlbench, else ~/.cache/zlbench): unpacked trees
    cache_dir: Path = Path(".cache/zlbench")
    # ZLBENCH_ARCHIVE_SOURCE: where packed trees' archives live (a dir or an https://
    # URL prefix); None: the archive/ dir of the repository the lock file sits in
    archive_source: str | None = None
    store: str | None = None  # ZLBENCH_STORE: the results store (docs/history.md)

    @property
    def flaggems_dirs(self) -> dict[str, str]:
        """The FlagGems checkouts the environment names: ``{repo: path}``, set ones only."""
        dirs = {"main": self.flaggems_dir, "vllm": self.flaggems_vllm_dir}
        return {repo: path for repo, path in dirs.items() if path}

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            flaggems_dir=env.get(FLAGGEMS_DIR_VARS["main"]) or None,
            flaggems_vllm_dir=env.get(FLAGGEMS_DIR_VARS["vllm"]) or None,
            flagtree_dir=env.get("ZLBENCH_FLAGTREE_DIR") or None,
            cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
            github_step_summary=env.get("GITHUB_STEP_SUMMARY") or None,
            zlbench_commit=env.get("ZLBENCH_COMMIT") or None,
            no_color="NO_COLOR" in env,
            force_color=bool(env.get("FORCE_COLOR")),
            run_url=_run_url(env),
            cache_dir=cache_dir(env),
            archive_source=env.get("ZLBENCH_ARCHIVE_SOURCE") or None,
            store=env.get("ZLBENCH_STORE") or None,
        )


def _run_url(env) -> str:
    """The CI run's page (the reports link the full artifact there); "" outside CI."""
    parts = [env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else ""
