from fakegems_support import DEVICE, DeviceFn

torch_device_fn = DeviceFn()
device = DEVICE
