"""Every runner test starts without a GPU turn in its environment: a batch run from a
shell that is itself inside a shared batch must not make the tests take its turn."""

from __future__ import annotations

import pytest

from zlbench.protocol.turn import GPU_TURN_LOG_VAR, GPU_TURN_VAR


@pytest.fixture(autouse=True)
def _no_turn_in_environment(monkeypatch):
    monkeypatch.delenv(GPU_TURN_VAR, raising=False)
    monkeypatch.delenv(GPU_TURN_LOG_VAR, raising=False)
