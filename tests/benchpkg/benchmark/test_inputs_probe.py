"""Prints a checksum of its generated inputs, so tests can see that seeds are fixed."""

import flag_gems
import pytest
import torch

from . import base


def _probe_input_fn(shape, dtype, device):
    for x, y in base.binary_input_fn(shape, dtype, device):
        print(f"INPUT_PROBE shape={shape} sum={float(x.sum()):.6f}")
        yield x, y


@pytest.mark.inputs_probe
def test_inputs_probe():
    bench = base.GenericBenchmark(
        op_name="inputs_probe",
        torch_op=torch.add,
        gems_op=flag_gems.ops.add,
        input_fn=_probe_input_fn,
        dtypes=[torch.float32],
    )
    bench.run()
