"""Fake vendor-backend loading, the way FlagGems loads its arch-specific ops: the
vendor dir is put on ``sys.path`` only while ``hopper`` is imported as a top-level
package (so its kernels' module is ``hopper.ops.fill``), then the arch dir itself
is left on ``sys.path``. Nothing calls it at ``import flag_gems``."""

import importlib
import os
import sys

VENDOR_DIR = os.path.join(os.path.dirname(__file__), "_nvidia")


def load_arch(arch: str = "hopper"):
    sys.path.insert(0, VENDOR_DIR)
    try:
        ops = importlib.import_module(f"{arch}.ops")
    finally:
        sys.path.remove(VENDOR_DIR)
    sys.path.append(os.path.join(VENDOR_DIR, arch))
    return ops
