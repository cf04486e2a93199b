"""A/B tier: the gate tier's synthetic dirs (tests/support/zlsynth.py) are shared."""
