"""Fixtures of the plugin tier shared by several files."""

from __future__ import annotations

import pytest

from zlbench.protocol.turn import GPU_TURN_LOG_VAR, GPU_TURN_VAR, process_turn, reset_process_turn


@pytest.fixture
def env_turn(tmp_path, monkeypatch):
    """The process's turn (process_turn) on a tmp lock file: a shared GPU."""
    monkeypatch.setenv(GPU_TURN_VAR, str(tmp_path / "gpu-0.lock"))
    monkeypatch.delenv(GPU_TURN_LOG_VAR, raising=False)
    reset_process_turn()
    yield process_turn()
    reset_process_turn()


@pytest.fixture
def no_env_turn(monkeypatch):
    """The process's turn with no lock file named: a GPU of its own (a no-op turn)."""
    monkeypatch.delenv(GPU_TURN_VAR, raising=False)
    reset_process_turn()
    yield process_turn()
    reset_process_turn()
