from flag_gems.utils.libentry import LibTuner, libtuner  # noqa: F401
