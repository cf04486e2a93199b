"""A small FlagGems-shaped benchmark suite for zlbench's CPU tests (written from scratch).

It imitates upstream ``benchmark/`` where zlbench depends on it: the same
command-line options (``conftest.py``), the same ``Benchmark.run()`` flow and
table format, the same ``set_shapes`` fallback chain (op_name, then MRO class
name, then 1-D defaults), ``pytest.fail`` at the first failing shape. Kernels
come from the fake ``flag_gems`` under ``../src`` (Triton, ``TRITON_INTERPRET=1``).
Shapes are tiny: interpreted kernels are slow.
"""
