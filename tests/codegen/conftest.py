"""Codegen screen tier: synthetic records in tests/support/cgsynth.py."""
