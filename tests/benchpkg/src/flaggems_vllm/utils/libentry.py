"""Fake ``flaggems_vllm.utils.libentry``: its own LibTuner class (same behaviour)."""

from fakegems_support import build_libtuner

LibTuner, ConfigCache, libtuner = build_libtuner("flaggems_vllm")
