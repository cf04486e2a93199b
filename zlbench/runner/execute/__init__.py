"""Running ops in pytest processes: process groups and their output, the worker that runs
one plan in as few processes as it can, the op boundaries in the log, and `zlbench run`."""
