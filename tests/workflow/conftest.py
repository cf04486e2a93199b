"""Workflow tier: reuses the gate tier's synthetic dirs (tests/support/zlsynth.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def batch_configs(monkeypatch) -> list:
    """The BatchConfigs handed to the batch runner (``runner.batch.run.run_batch``,
    replaced by a fake that measures nothing and returns an empty outcome)."""
    from zlbench.runner.batch import run as batch_run
    from zlbench.runner.batch.config import BatchOutcome

    seen: list = []

    def fake_run_batch(config):
        seen.append(config)
        return BatchOutcome(config.out_dir, [], {}, 0, 0)

    monkeypatch.setattr(batch_run, "run_batch", fake_run_batch)
    return seen


@pytest.fixture
def ops_dir(tmp_path) -> Path:
    """An ops dir of one sentinel (sum) and the PR tier (add); a module may define its
    own."""
    d = tmp_path / "ops"
    (d / "tiers").mkdir(parents=True)
    (d / "sentinels.txt").write_text("sum\n")
    (d / "tiers" / "pr.txt").write_text("add\n")
    return d
