"""Fake ``flag_gems.utils.libentry``: a LibTuner with a persistent sqlite cache."""

from fakegems_support import build_libtuner

LibTuner, ConfigCache, libtuner = build_libtuner("flag_gems")
