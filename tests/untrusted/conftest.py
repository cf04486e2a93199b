"""Untrusted-input tier (issue 16): hostile artifacts, I/O failures, process trees,
numeric flags. Reuses the gate tier's synthetic dirs (tests/support/zlsynth.py)."""
