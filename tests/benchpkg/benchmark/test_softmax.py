import flag_gems
import pytest
import torch

from . import base, consts


@pytest.mark.softmax
def test_softmax():
    bench = base.UnaryReductionBenchmark(
        op_name="softmax",
        torch_op=torch.nn.functional.softmax,
        gems_op=flag_gems.ops.softmax,
        dtypes=consts.FLOAT_DTYPES,
    )
    bench.run()
