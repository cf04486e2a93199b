"""In-process unit tests of the device guard (zlbench.plugins.devices), with a fake torch."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from zlbench.models import Environment, PlanEntry, RunResult, RunStatus, WorkerPlan, load_json_model
from zlbench.plugins import capture, devices, state


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


# --------------------------------------------------------------------------- poisoned context

ILLEGAL = "CUDA error: an illegal memory access was encountered"
FOOTER = (
    "\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
)


def _plan(tmp_path) -> WorkerPlan:
    entry = PlanEntry(op="mm", run_name="mm", run_dir=str(tmp_path / "mm"), nodeids=["t.py::a"])
    return WorkerPlan(entries=[entry])


def _op(tmp_path, **kw) -> state.OpState:
    return state.OpState(entry=_plan(tmp_path).entries[0], **kw)


def test_device_fault_after_op_poisons_it(tmp_path, monkeypatch, capsys):
    torch = _fake_torch(sync_error=RuntimeError(ILLEGAL + FOOTER))
    monkeypatch.setitem(sys.modules, "torch", torch)
    op = _op(tmp_path)
    devices.check_device_after_op(op)
    assert op.poisoned is True
    assert op.error == f"device fault after the op: {ILLEGAL}"  # first line only
    assert "\nZLBENCH_DEVICE_POISONED run_name=mm\n" in capsys.readouterr().out
    assert torch.calls == ["is_available", "is_initialized", "synchronize"]


def test_device_fault_keeps_the_ops_own_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(sync_error=RuntimeError(ILLEGAL)))
    op = _op(tmp_path, error="AssertionError: wrong result")
    devices.check_device_after_op(op)
    assert op.poisoned is True
    assert op.error == "AssertionError: wrong result"
    assert "ZLBENCH_DEVICE_POISONED run_name=mm" in capsys.readouterr().out


def test_other_error_from_synchronize_is_reraised(tmp_path, monkeypatch, capsys):
    error = RuntimeError("CUDA error: operation not permitted when stream is capturing")
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(sync_error=error))
    op = _op(tmp_path)
    with pytest.raises(RuntimeError) as info:
        devices.check_device_after_op(op)
    assert info.value is error
    assert op.poisoned is False and op.error is None
    assert "ZLBENCH_DEVICE_POISONED" not in capsys.readouterr().out


@pytest.mark.parametrize(("available", "initialized"), [(False, False), (True, False)])
def test_no_sync_without_an_initialized_device(tmp_path, monkeypatch, available, initialized):
    torch = _fake_torch(available=available, initialized=initialized,
                        sync_error=RuntimeError(ILLEGAL))  # fmt: skip
    monkeypatch.setitem(sys.modules, "torch", torch)
    op = _op(tmp_path)
    devices.check_device_after_op(op)
    assert "synchronize" not in torch.calls
    assert op.poisoned is False and op.error is None


def test_poisoned_op_is_recorded_as_fail_then_the_process_exits(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(sync_error=RuntimeError(ILLEGAL)))
    session = state.Session(plan=_plan(tmp_path), on_end=[devices.check_device_after_op])
    monkeypatch.setattr(state, "_ACTIVE", session)
    cap = capture.Capture(SimpleNamespace(stash=pytest.Stash()), session)
    cap.env = Environment()
    op = cap.start(0)
    op.outcomes.append("passed")
    with pytest.raises(pytest.exit.Exception) as info:
        cap.finish(op)
    assert info.value.returncode == devices.POISONED_EXIT_CODE == 3
    result = load_json_model(tmp_path / "mm" / "result.json", RunResult)
    assert result.status is RunStatus.FAIL
    assert result.error == f"device fault after the op: {ILLEGAL}"
    out = capsys.readouterr().out
    poisoned = out.index("ZLBENCH_DEVICE_POISONED run_name=mm")
    assert poisoned < out.index("ZLBENCH_OP_END run_name=mm status=FAIL")
    assert session.current is None and session.finished == [op]
