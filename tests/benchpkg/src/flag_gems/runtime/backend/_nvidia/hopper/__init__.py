"""Fake arch package, imported as the top-level ``hopper``."""
