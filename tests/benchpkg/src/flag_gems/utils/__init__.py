from flag_gems.utils.libentry import LibEntry, LibTuner, libentry, libtuner  # noqa: F401
