"""Benchmarks that misbehave on purpose; each only when its own test is selected."""

import os
import signal
import time

import flag_gems
import pytest
import torch

from . import base


def _nonzero(x):
    return torch.nonzero(x)  # data-dependent output size: a host sync, cannot be graph-captured


@pytest.mark.nonzero
def test_nonzero():
    bench = base.GenericBenchmark(
        op_name="nonzero",
        torch_op=torch.nonzero,
        gems_op=_nonzero,
        input_fn=base.unary_input_fn,
        dtypes=[torch.float32],
    )
    bench.run()


class FailSecondShapeBenchmark(base.GenericBenchmark):
    def set_shapes(self, shape_file_path=None):
        super().set_shapes(shape_file_path)
        self.shapes = [(16,), (32,), (48,)]


def _add_failing_at_32(x, y):
    if x.numel() == 32:
        raise RuntimeError("fake kernel failure: unsupported shape (32,)")
    return flag_gems.ops.add(x, y)


@pytest.mark.fail_second
def test_fail_second():
    bench = FailSecondShapeBenchmark(
        op_name="fail_second",
        torch_op=torch.add,
        gems_op=_add_failing_at_32,
        input_fn=base.binary_input_fn,
        dtypes=[torch.float32],
    )
    bench.run()


@pytest.mark.always_skipped
@pytest.mark.skip(reason="unconditionally skipped (like upstream's disabled benchmarks)")
def test_always_skipped():
    raise AssertionError("never runs")


def _crash_after_first_row(kind):
    calls = {"n": 0}

    def op(x, y):
        if x.numel() != 16:
            if kind == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
            elif kind == "exit":
                os._exit(int(os.environ.get("ZLBENCH_FAKE_EXIT_CODE", "1")))
            else:
                time.sleep(3600)
        calls["n"] += 1
        return flag_gems.ops.add(x, y)

    return op


def _run_crashing(op_name, kind):
    bench = FailSecondShapeBenchmark(
        op_name=op_name,
        torch_op=torch.add,
        gems_op=_crash_after_first_row(kind),
        input_fn=base.binary_input_fn,
        dtypes=[torch.float32],
    )
    bench.run()


@pytest.mark.crash_segv
def test_crash_segv():
    _run_crashing("crash_segv", "segv")


@pytest.mark.crash_exit
def test_crash_exit():
    _run_crashing("crash_exit", "exit")


@pytest.mark.hang
def test_hang():
    _run_crashing("hang", "hang")


@pytest.mark.no_bf16
def test_no_bf16():
    bench = base.BinaryPointwiseBenchmark(
        op_name="no_bf16",
        torch_op=torch.add,
        gems_op=flag_gems.ops.add,
        dtypes=[torch.float16, torch.float32],
    )
    bench.run()
