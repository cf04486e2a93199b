"""A stand-in triton driver: compile for a given GPU target without a GPU.

Why: ``JITFunction.run``, triton's autotuner and FlagGems ask
``triton.runtime.driver.active`` for the current device, stream and target, and
triton picks its driver by probing for a GPU (none on a CPU-only runner: "0
active drivers"). Compiling itself needs no GPU (the NVIDIA backend bundles
ptxas), so a driver that *reports* the recorded target (e.g. cuda sm_90, warp
32) is enough to build every kernel exactly as on the real device.

Launching is impossible: by default a launch raises :class:`StandinLaunchError`;
with ``launch="skip"`` a launch does nothing (outputs stay garbage), which lets
a whole op run on CPU tensors just to compile its kernels. The benchmarker
then calls the kernel once and returns the same time for every config (an
autotuner keeps its first config).

Use :func:`activate` / :func:`deactivate`, or the :func:`standin` context.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase
from triton.runtime import driver as _driver_config

from zlbench.errors import ZlbenchError


class StandinLaunchError(RuntimeError):
    """A kernel launch under the stand-in driver (there is no GPU)."""


# Device properties FlagGems and triton read, for sm_90 (H100/H200-like).
_PROPS = {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536,
          "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000,
          "mem_bus_width": 5120}  # fmt: skip


def parse_target(spec: str) -> GPUTarget:
    """``cuda:90`` / ``cuda:90:32`` / ``hip:gfx942:64`` -> GPUTarget; bad text is a ZlbenchError."""
    m = re.fullmatch(r"(cuda|hip):(\w+)(?::(\d+))?", spec.strip())
    if not m:
        raise ZlbenchError(f"bad target {spec!r}: expected BACKEND:ARCH[:WARP], e.g. cuda:90")
    backend, arch, warp = m.groups()
    arch_v: int | str = int(arch) if backend == "cuda" and arch.isdigit() else arch
    if backend == "cuda" and not isinstance(arch_v, int):
        raise ZlbenchError(f"bad target {spec!r}: a cuda arch is a number, e.g. 90")
    return GPUTarget(backend, arch_v, int(warp) if warp else (32 if backend == "cuda" else 64))


class _Utils:
    def __init__(self, launch: str):
        self.launch = launch

    def get_device_properties(self, device: int) -> dict:
        return dict(_PROPS)

    def load_binary(self, name, kernel, shared, device):
        if self.launch != "skip":
            raise StandinLaunchError(f"stand-in driver: cannot load kernel {name} (no GPU)")
        return None, None, 0, 0, 1024  # module, function, n_regs, n_spills, max threads


def _launcher(launch: str):
    def make(src, metadata):
        def run(*args, **kwargs):
            if launch != "skip":
                raise StandinLaunchError("stand-in driver: cannot launch a kernel (no GPU)")

        return run

    return make


def _fake_bench(kernel_call, quantiles=None, **kwargs):
    kernel_call()
    return [1.0] * len(quantiles) if quantiles else 1.0


class StandinDriver(DriverBase):
    """Reports ``target`` as device 0; compiles; never launches (see module doc)."""

    def __init__(self, target: GPUTarget, launch: str = "error"):
        super().__init__()
        self.target = target
        self.utils = _Utils(launch)
        self.launcher_cls = _launcher(launch)

    @classmethod
    def is_active(cls) -> bool:
        return False  # never chosen by triton's probe: only by activate()

    def get_current_target(self) -> GPUTarget:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        return None

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:
        arch = self.target.arch
        return (arch // 10, arch % 10) if isinstance(arch, int) else (0, 0)

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp

        return ty_to_cpp(ty)

    def get_benchmarker(self):
        return _fake_bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(1, dtype=torch.int)

    def clear_cache(self, cache) -> None:
        return None


_SAVED: list[Any] = []


def activate(target: GPUTarget | str, launch: str = "error") -> StandinDriver:
    """Make a stand-in the active triton driver (the previous one is restored by
    :func:`deactivate`)."""
    if isinstance(target, str):
        target = parse_target(target)
    drv = StandinDriver(target, launch)
    _SAVED.append(_driver_config._active)
    _driver_config.set_active(drv)
    return drv


def deactivate() -> None:
    if _SAVED:
        _driver_config._active = _SAVED.pop()


@contextlib.contextmanager
def standin(target: GPUTarget | str, launch: str = "error") -> Iterator[StandinDriver]:
    drv = activate(target, launch)
    try:
        yield drv
    finally:
        deactivate()
