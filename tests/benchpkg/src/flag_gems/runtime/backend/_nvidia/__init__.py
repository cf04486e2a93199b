"""Fake vendor package (see flag_gems.runtime.backend)."""
