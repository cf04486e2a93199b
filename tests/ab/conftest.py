"""A/B tier: the gate tier's synthetic dirs (tests/gate/zlsynth.py) are shared."""

from __future__ import annotations

import sys
from pathlib import Path

GATE_TESTS = str(Path(__file__).resolve().parents[1] / "gate")
if GATE_TESTS not in sys.path:
    sys.path.insert(0, GATE_TESTS)
