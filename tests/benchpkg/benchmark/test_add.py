import flag_gems
import pytest
import torch

from . import base, consts


@pytest.mark.add
def test_add():
    bench = base.BinaryPointwiseBenchmark(
        op_name="add", torch_op=torch.add, gems_op=flag_gems.ops.add, dtypes=consts.FLOAT_DTYPES
    )
    bench.run()
