"""Fake ``flag_gems.utils.libentry``: a LibTuner with a persistent sqlite cache, and a
LibEntry that keeps each launch key's first config."""

from fakegems_support import build_libentry, build_libtuner

LibTuner, ConfigCache, libtuner = build_libtuner("flag_gems")
LibEntry, libentry = build_libentry("flag_gems")
