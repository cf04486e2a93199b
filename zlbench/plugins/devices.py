"""Device guard: set up the device before FlagGems is imported, check it after each op.

Why: FlagGems picks its vendor backend at import time by probing tools such as
``nvidia-smi``, and that probe can hang on a busy or half-broken host; setting
``GEMS_VENDOR=nvidia`` from torch's own view of the device skips the probe
(docs/design.md §5.9). It is done in ``pytest_load_initial_conftests``, which runs
before the FlagGems benchmark ``conftest.py`` (and so ``import flag_gems``).
It changes nothing when ``GEMS_VENDOR`` is already set or the device is not
NVIDIA.

After each op the device is synchronised: a sticky device fault (illegal
address, device-side assert) poisons the CUDA context for every later op of
the process, so the process stops there (exit code 3) and the runner starts
the remaining ops in a fresh process instead of recording false failures.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from zlbench.plugins import state
from zlbench.protocol import options
from zlbench.protocol.faults import is_device_fault

POISONED_EXIT_CODE = 3


@dataclass(frozen=True)
class DeviceView:
    """What torch says about the device (probed once, without nvidia-smi)."""

    cuda_available: bool
    is_hip: bool
    device_name: str | None = None


def gems_vendor_value(environ: Mapping[str, str], view: DeviceView) -> str | None:
    """The GEMS_VENDOR value to set, or None to leave the environment alone."""
    if environ.get("GEMS_VENDOR"):
        return None
    if not view.cuda_available or view.is_hip:
        return None
    if view.device_name is not None and "nvidia" not in view.device_name.lower():
        return None
    return "nvidia"


@functools.cache
def probe_device() -> DeviceView:
    """Torch's view of the device; cached, so the load and configure hooks probe once."""
    try:
        import torch
    except ImportError:
        return DeviceView(cuda_available=False, is_hip=False)
    is_hip = getattr(torch.version, "hip", None) is not None
    if not torch.cuda.is_available():
        return DeviceView(cuda_available=False, is_hip=is_hip)
    try:
        name = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - the name is informational only
        name = None
    return DeviceView(cuda_available=True, is_hip=is_hip, device_name=name)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser, args) -> None:
    value = gems_vendor_value(os.environ, probe_device())
    if value is not None:
        os.environ["GEMS_VENDOR"] = value


def pytest_configure(config: pytest.Config) -> None:
    if options.get(config, "device") == "cuda" and not probe_device().cuda_available:
        raise pytest.UsageError("zlbench: --zl-device cuda, but torch sees no usable CUDA device")


def check_device_after_op(op: state.OpState) -> None:
    """on_end callback: stop the process when the CUDA context is poisoned."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    try:
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - classified below
        if not is_device_fault(exc):
            raise
        op.error = op.error or f"device fault after the op: {exc}".splitlines()[0]
        op.poisoned = True
        sys.stdout.write(f"\nZLBENCH_DEVICE_POISONED run_name={op.entry.run_name}\n")
        sys.stdout.flush()


state.subscribe(on_end=check_device_after_op)
