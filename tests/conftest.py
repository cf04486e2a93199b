"""Shared fixtures. Keep this file small: put tier-specific fixtures next to their tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA_DIR = Path(__file__).parent / "data"


@pytest.fixture
def flaggems_h200_dir() -> Path:
    """Real upstream FlagGems output captured on an H200 (see its README.md)."""
    return DATA_DIR / "flaggems-h200"
