"""zlbench: performance regression gate for FlagTree, driven by FlagGems benchmarks."""

__version__ = "0.1.0"
