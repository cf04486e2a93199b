from flaggems_vllm.utils.libentry import LibTuner, libtuner  # noqa: F401
