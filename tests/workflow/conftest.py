"""Workflow tier: reuses the gate tier's synthetic dirs (tests/gate/zlsynth.py)."""

from __future__ import annotations

import sys
from pathlib import Path

GATE_TESTS = str(Path(__file__).resolve().parent.parent / "gate")
if GATE_TESTS not in sys.path:
    sys.path.insert(0, GATE_TESTS)
