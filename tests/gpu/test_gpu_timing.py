"""CUDA-graph timing on a real GPU (marker ``gpu``; skipped without CUDA)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from zlbench.plugins.timing import TimingSettings, measure  # noqa: E402
from zlbench.plugins.timing_backends import CudaBackend  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def _backend():
    import triton.testing

    return CudaBackend(triton.testing.do_bench)


def _uncapturable(x):
    def fn():
        torch.randn(16, device="cuda")  # uses the CUDA RNG inside the capture
        return torch.nonzero(x)  # host sync: the capture aborts

    return fn


def test_aborted_capture_does_not_poison_the_next_randn():
    x = torch.ones(64, device="cuda")
    torch.manual_seed(1)
    expected = torch.randn(8, device="cuda").cpu()
    backend = _backend()
    with pytest.raises(RuntimeError):
        backend.capture(_uncapturable(x), 2)
    torch.manual_seed(1)
    assert torch.equal(torch.randn(8, device="cuda").cpu(), expected)
    torch.cuda.synchronize()


def test_capturable_function_is_timed_without_marker(capsys):
    x = torch.randn(1 << 20, device="cuda")
    ms = measure(lambda: x * 2, _backend(), TimingSettings(25.0, 5), rep_ms=20.0,
                 return_mode="median")  # fmt: skip
    assert 0 < ms < 10
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH" not in capsys.readouterr().out


def test_uncapturable_function_falls_back_with_marker(capsys):
    x = torch.ones(1 << 10, device="cuda")
    ms = measure(_uncapturable(x), _backend(), TimingSettings(5.0, 3), rep_ms=5.0,
                 return_mode="median")  # fmt: skip
    assert ms > 0
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture" in capsys.readouterr().out
    torch.manual_seed(0)
    torch.randn(4, device="cuda")
    torch.cuda.synchronize()
