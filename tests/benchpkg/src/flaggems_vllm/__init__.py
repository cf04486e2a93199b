"""FAKE flaggems_vllm for zlbench's CPU tests (written from scratch).

Owns its own ``utils.libentry.LibTuner`` class (built by the shared fake
support), so zlbench must patch whichever package was actually imported
(docs/design.md §5.6). One op: ``ops.scale`` (``x * alpha``).
"""

from fakegems_support import DEVICE, gems_mode

from flaggems_vllm import ops, runtime, utils  # noqa: F401
from flaggems_vllm.runtime import torch_device_fn  # noqa: F401

device = DEVICE
vendor_name = "nvidia"
__version__ = "0.0.0+fake"

_GEMS_STATE: dict = {}


def use_gems(exclude=None):
    return gems_mode(_GEMS_STATE, exclude)
