"""Gate tier: synthetic baseline / results dirs (see zlsynth.py, importable from here)."""
