"""add on inputs built by a Triton kernel: the input generation launches
``fill_kernel`` (flag_gems.ops.full) outside the timed region, the measurement
times ``add_kernel`` (like upstream's embedding benchmark and FlagGems' fill)."""

import flag_gems
import pytest
import torch

from . import base, consts


def _filled_input_fn(shape, dtype, device):
    yield (
        flag_gems.ops.full(shape, 1.5, dtype=dtype, device=device),
        base.generate_tensor_input(shape, dtype, device),
    )


@pytest.mark.filled_add
def test_filled_add():
    bench = base.GenericBenchmark(
        op_name="filled_add",
        torch_op=torch.add,
        gems_op=flag_gems.ops.add,
        input_fn=_filled_input_fn,
        dtypes=consts.FLOAT_DTYPES,
    )
    bench.run()
