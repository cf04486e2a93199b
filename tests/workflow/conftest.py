"""Workflow tier: reuses the gate tier's synthetic dirs (tests/gate/zlsynth.py)."""

from __future__ import annotations

import sys
from pathlib import Path

GATE_TESTS = str(Path(__file__).resolve().parent.parent / "gate")
if GATE_TESTS not in sys.path:
    sys.path.insert(0, GATE_TESTS)


import pytest  # noqa: E402


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
