"""Benchmarks that ignore the shape file, as some upstream ones do (zlbench must inject)."""

import flag_gems
import pytest
import torch

from . import base, consts


class PinnedShapesBenchmark(base.GenericBenchmark):
    """Overrides set_shapes() with a hard-coded list (like upstream's adaptive pools)."""

    def set_shapes(self, shape_file_path=None):
        self.shapes = [(48,), (6, 8)]
        self.shape_desc = "M"


class LiteralShapesBenchmark(base.GenericBenchmark):
    """Loops over a literal list in get_input_iter (like upstream's conv/pool benchmarks)."""

    def get_input_iter(self, dtype):
        literal = [(40,), (5, 8)]
        for shape in literal:
            yield from self.input_fn(shape, dtype, self.device)


@pytest.mark.pinned_add
def test_pinned_add():
    bench = PinnedShapesBenchmark(
        op_name="pinned_add",
        torch_op=torch.add,
        gems_op=flag_gems.ops.add,
        input_fn=base.binary_input_fn,
        dtypes=consts.FLOAT_DTYPES,
    )
    bench.run()


@pytest.mark.literal_add
def test_literal_add():
    bench = LiteralShapesBenchmark(
        op_name="literal_add",
        torch_op=torch.add,
        gems_op=flag_gems.ops.add,
        input_fn=base.binary_input_fn,
        dtypes=consts.FLOAT_DTYPES,
    )
    bench.run()
