"""Gate tier: synthetic baseline / results dirs (see tests/support/zlsynth.py)."""
