"""Fixed seeds before every benchmark test (docs/design.md §5.10).

Why: upstream benchmarks draw their inputs with ``torch.randn`` and never seed,
so two runs (or two ops sharing one process) measure different data; values
matter for some kernels (sort, unique, softmax of extreme inputs). Seeding
``random``, numpy and torch (all devices) before each test makes every op see
the same inputs whether it runs alone or after other ops in the same process.
"""

from __future__ import annotations

import random

import pytest

from zlbench.plugins import state

DEFAULT_SEED = 0


def seed_everything(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        pass
    else:
        numpy.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)  # also seeds every CUDA device


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    session = state.session_of(item.config)
    seed_everything(session.plan.seed if session is not None else DEFAULT_SEED)
