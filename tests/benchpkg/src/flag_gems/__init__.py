"""FAKE FlagGems for zlbench's CPU tests (written from scratch; not upstream code).

Mirrors the parts of the real package that zlbench's plugins and the benchmark
suite under ``tests/benchpkg/benchmark`` touch: ``device``, ``vendor_name``,
``runtime.torch_device_fn``, ``use_gems()``, ``utils.libentry.LibTuner`` and four
ops with real Triton kernels (they run on CPU under ``TRITON_INTERPRET=1``):

* ``add``: single-config ``triton.autotune``       (docs/design.md §5.3)
* ``softmax``: multi-config ``triton.autotune``
* ``sum``: ``triton.autotune`` configs carrying a ``pre_hook`` (docs/design.md §5.4)
* ``mm``: the sqlite-backed ``LibTuner`` (docs/design.md §5.1, §5.5)
"""

from fakegems_support import DEVICE, gems_mode

from flag_gems import ops, runtime, utils  # noqa: F401
from flag_gems.runtime import torch_device_fn  # noqa: F401

device = DEVICE
vendor_name = "nvidia"
__version__ = "0.0.0+fake"

_GEMS_STATE: dict = {}


def use_gems(exclude=None):
    """Context manager; the fake only records that gems mode is on."""
    return gems_mode(_GEMS_STATE, exclude)


def gems_enabled() -> bool:
    return bool(_GEMS_STATE.get("enabled"))
