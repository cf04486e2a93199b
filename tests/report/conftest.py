"""Report tier: reuses the gate tier's synthetic dirs (tests/support/zlsynth.py)."""
