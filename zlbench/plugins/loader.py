"""``-p zlbench.plugins.loader``: registers every zlbench plugin and reads the plan.

Why one entry point: the runner starts the FlagGems benchmark process as
``python -m pytest -p zlbench.plugins.loader --zl-plan plan.json ...`` and must
not need to know the plugin modules. Every plugin imports triton and torch only
when it needs them, so all of them are always registered. The plan (``--zl-plan``, a
``models.WorkerPlan``) becomes the shared session of :mod:`zlbench.plugins.state`
before any other plugin's ``pytest_configure`` runs.
"""

from __future__ import annotations

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import WorkerPlan, load_json_model
from zlbench.plugins import state
from zlbench.protocol import options
from zlbench.protocol.cache import ready_path_from_env, wait_ready

pytest_plugins = [
    "zlbench.plugins.terminal",
    "zlbench.plugins.devices",
    "zlbench.plugins.seeds",
    "zlbench.plugins.shapes",
    "zlbench.plugins.timing",
    "zlbench.plugins.capture",
    "zlbench.plugins.autotune",
    "zlbench.plugins.ttgir",
    "zlbench.plugins.codegen",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser.getgroup("zlbench").addoption)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    path = options.get(config, "plan")
    if not path:
        return
    try:
        plan = load_json_model(path, WorkerPlan)
    except ZlbenchError as e:
        raise pytest.UsageError(f"zlbench: {e}") from None
    state.start_session(config, plan)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Started and collected: wait for the batch's precompile, if any
    (:mod:`zlbench.protocol.cache`), before the first op."""
    wait_ready(ready_path_from_env())


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    state.end_session(config)
