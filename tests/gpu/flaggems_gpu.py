"""The marks of a GPU test that drives the real FlagGems suite (``gpu``): skipped without
a CUDA GPU or without ``ZLBENCH_FLAGGEMS_DIR`` (a FlagGems checkout)."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

MARKS = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(
        not os.environ.get("ZLBENCH_FLAGGEMS_DIR"), reason="needs ZLBENCH_FLAGGEMS_DIR"
    ),
]
