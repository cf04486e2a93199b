"""Fake ``flag_gems.runtime``: the device handle the benchmarks synchronize on."""

from fakegems_support import DEVICE, DeviceFn

torch_device_fn = DeviceFn()
device = DEVICE
