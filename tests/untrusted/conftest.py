"""Untrusted-input tier (issue 16): hostile artifacts, I/O failures, process trees,
numeric flags. Reuses the gate tier's synthetic dirs (tests/gate/zlsynth.py)."""

from __future__ import annotations

import sys
from pathlib import Path

_GATE = str(Path(__file__).parent.parent / "gate")
if _GATE not in sys.path:
    sys.path.insert(0, _GATE)
