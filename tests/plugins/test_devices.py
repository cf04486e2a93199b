"""In-process unit tests of the device guard (zlbench.plugins.devices), with a fake torch."""

from __future__ import annotations

import sys
import types

import pytest

from zlbench.plugins import devices


def _fake_torch(
    *,
    available: bool = True,
    initialized: bool = True,
    hip: str | None = None,
    name: str = "NVIDIA H200",
    sync_error: BaseException | None = None,
) -> types.ModuleType:
    """A stand-in for torch with just what devices.py reads; counts the calls it gets."""
    torch = types.ModuleType("torch")
    torch.calls = []  # type: ignore[attr-defined]

    def call(what, value=None):
        def fn(*args):
            torch.calls.append(what)  # type: ignore[attr-defined]
            if what == "synchronize" and sync_error is not None:
                raise sync_error
            return value

        return fn

    torch.version = types.SimpleNamespace(hip=hip)  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=call("is_available", available),
        is_initialized=call("is_initialized", initialized),
        get_device_name=call("get_device_name", name),
        synchronize=call("synchronize"),
    )
    return torch


@pytest.fixture
def fresh_probe():
    """probe_device is cached per process: clear it around tests that swap torch."""
    devices.probe_device.cache_clear()
    yield
    devices.probe_device.cache_clear()


def test_probe_device_probes_once(monkeypatch, fresh_probe):
    torch = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    first = devices.probe_device()
    assert first == devices.DeviceView(cuda_available=True, is_hip=False, device_name="NVIDIA H200")
    assert devices.probe_device() is first
    assert torch.calls == ["is_available", "get_device_name"]


def test_probe_device_cache_clear_sees_a_new_torch(monkeypatch, fresh_probe):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(available=False))
    assert devices.probe_device() == devices.DeviceView(cuda_available=False, is_hip=False)
    devices.probe_device.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(hip="6.0", name="AMD Instinct MI300X"))
    view = devices.probe_device()
    assert view == devices.DeviceView(True, True, "AMD Instinct MI300X")
