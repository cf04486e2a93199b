"""Benchmark classes of the fake suite, behaving like upstream ``benchmark/base.py``.

Kept behaviours zlbench depends on: ``init_user_config`` → ``set_dtypes`` /
``set_shapes(Config.shape_file)``; the shape fallback chain op_name → MRO
class name → ``DEFAULT_SHAPES``; ``get_latency`` calling
``triton.testing.do_bench`` (``--mode kernel``) or ``do_bench_cudagraph``
(``--mode cudagraph``) directly; a ``BenchmarkMetrics`` per shape whose
``shape_detail`` comes from ``record_shapes``; ``pytest.fail`` at the first
failing shape, before that dtype's table is printed.
"""

from __future__ import annotations

import dataclasses
import os

import flag_gems
import pytest
import torch
import triton
import yaml

from . import consts
from .conftest import Config, record_result
from .consts import BenchmarkMetrics, BenchmarkResult

device = flag_gems.device


class Benchmark:
    device: str = device
    DEFAULT_METRICS = consts.DEFAULT_METRICS
    DEFAULT_DTYPES = consts.FLOAT_DTYPES
    DEFAULT_SHAPES = consts.DEFAULT_SHAPES
    DEFAULT_SHAPE_DESC = "M, N"

    def __init__(self, op_name, torch_op, dtypes=None, is_backward=False, **kwargs):
        self.op_name = op_name + ("_backward" if is_backward else "")
        self.torch_op = torch_op
        self.gems_op = kwargs.pop("gems_op", None)
        self.is_backward = is_backward
        self.dtypes = dtypes if dtypes is not None else self.DEFAULT_DTYPES
        self.metrics = list(self.DEFAULT_METRICS)
        self.shapes = self.DEFAULT_SHAPES
        self.shape_desc = self.DEFAULT_SHAPE_DESC
        self.to_bench_dtypes = self.dtypes
        self.to_bench_metrics = self.metrics
        for key, value in kwargs.items():
            if hasattr(self, key):
                setattr(self, key, value)

    # ------------------------------------------------------------------ configuration

    def set_dtypes(self, user_desired_dtypes):
        if user_desired_dtypes:
            bad = [d for d in user_desired_dtypes if d not in self.dtypes]
            if bad:
                raise ValueError(
                    f"Given dtype(s) '{', '.join(str(d) for d in bad)}'"
                    f"can't be supported by this op '{self.op_name}'"
                )
        self.to_bench_dtypes = user_desired_dtypes or self.dtypes

    def set_metrics(self, user_desired_metrics):
        self.to_bench_metrics = list(user_desired_metrics or self.metrics)

    def set_shapes(self, shape_file_path=None):
        if not os.path.isfile(shape_file_path):
            raise FileNotFoundError(f"Shape file '{shape_file_path}' does not exist.")
        with open(shape_file_path, encoding="utf-8") as f:
            table = yaml.safe_load(f) or {}
        keys = [self.op_name] + [klass.__name__ for klass in type(self).__mro__]
        entry = next((table[k] for k in keys if k in table), None)
        if entry is None:
            self.shapes = self.DEFAULT_SHAPES
        else:
            self.shapes = entry.get("shapes", self.DEFAULT_SHAPES)
            self.shape_desc = entry.get("shape_desc", self.DEFAULT_SHAPE_DESC)
        self.shapes = [tuple(s) for s in self.shapes]

    def init_user_config(self):
        self.mode = Config.mode
        self.set_dtypes(Config.user_desired_dtypes)
        self.set_metrics(Config.user_desired_metrics)
        self.set_shapes(Config.shape_file)

    # ------------------------------------------------------------------ measuring

    def get_input_iter(self, dtype):
        raise NotImplementedError("Each Benchmark must implement its own input iterator.")

    def record_shapes(self, *args, **kwargs):
        def walk(x):
            if isinstance(x, torch.Tensor):
                return x.size()
            if isinstance(x, (int, float, str, torch.dtype)):
                return x
            if isinstance(x, (list, tuple)):
                return [walk(y) for y in x]
            if isinstance(x, dict):
                return {k: walk(v) for k, v in x.items()}
            return None

        parsed_args = [walk(a) for a in args]
        parsed_kwargs = {k: walk(v) for k, v in kwargs.items()}
        if parsed_args and parsed_kwargs:
            return parsed_args, parsed_kwargs
        return parsed_args or parsed_kwargs

    def get_latency(self, op, *args, **kwargs):
        fn = lambda: op(*args, **kwargs)  # noqa: E731
        if Config.mode == consts.BenchMode.CUDAGRAPH:
            return triton.testing.do_bench_cudagraph(
                fn, rep=Config.repetition, return_mode="median"
            )
        return triton.testing.do_bench(
            fn, warmup=Config.warm_up, rep=Config.repetition, return_mode="median"
        )

    def get_tflops(self, op, *args, **kwargs):
        return 0.0

    def unpack_to_args_kwargs(self, inputs):
        args = [x for x in inputs if not isinstance(x, dict)]
        kwargs = {}
        for x in inputs:
            if isinstance(x, dict):
                kwargs.update(x)
        return args, kwargs

    def _measure_one(self, metric, args, kwargs):
        metric.shape_detail = self.record_shapes(*args, **kwargs)
        metric.latency_base = self.get_latency(self.torch_op, *args, **kwargs)
        if self.gems_op is not None:
            metric.latency = self.get_latency(self.gems_op, *args, **kwargs)
        else:
            with flag_gems.use_gems(exclude=["zero_"]):
                metric.latency = self.get_latency(self.torch_op, *args, **kwargs)
        metric.speedup = metric.latency_base / metric.latency
        if "tflops" in self.to_bench_metrics:
            metric.tflops = self.get_tflops(self.torch_op, *args, **kwargs) / metric.latency / 1e9

    def run(self):
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            rows = []
            inputs = self.get_input_iter(dtype)
            while True:
                try:
                    item = next(inputs)
                except StopIteration:
                    break
                except Exception as e:
                    red, end = "\033[31m", "\033[0m"
                    print(f"{red}FAILED{end}: Operator={self.op_name} dtype={dtype} err=<<<{e}>>>")
                    pytest.fail(str(e))
                metric = BenchmarkMetrics()
                try:
                    args, kwargs = self.unpack_to_args_kwargs(item)
                    self._measure_one(metric, args, kwargs)
                except Exception as e:
                    metric.error_msg = str(e)
                    pytest.fail(str(e))
                finally:
                    rows.append(metric)
            table = BenchmarkResult(
                op_name=self.op_name,
                dtype=str(dtype),
                mode=Config.mode.value,
                level=Config.bench_level.value,
                result=rows,
            )
            print(table)
            record_result(self.op_name, dataclasses.asdict(table))


class GenericBenchmark(Benchmark):
    """Inputs from ``input_fn(shape, dtype, device)`` for each shape."""

    def __init__(self, *args, input_fn, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield from self.input_fn(shape, dtype, self.device)


class BinaryPointwiseBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield (
                generate_tensor_input(shape, dtype, self.device),
                generate_tensor_input(shape, dtype, self.device),
            )


class UnaryReductionBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            inp = generate_tensor_input(shape, dtype, self.device)
            yield (inp, 1) if inp.ndim > 1 else (inp,)


class BlasBenchmark(Benchmark):
    """(B, M, N, K) shapes, like upstream; B is ignored by mm."""

    DEFAULT_METRICS = consts.DEFAULT_METRICS + ["tflops"]

    def __init__(self, *args, input_fn, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def get_input_iter(self, dtype):
        for b, m, n, k in self.shapes:
            yield from self.input_fn(b, m, n, k, dtype, self.device)

    def get_tflops(self, op, *args, **kwargs):
        a, b = args[0], args[1]
        return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]


def generate_tensor_input(shape, dtype, device):
    if dtype in consts.FLOAT_DTYPES or dtype in consts.COMPLEX_DTYPES:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype in consts.BOOL_DTYPES:
        return torch.randint(0, 2, shape, dtype=dtype, device=device)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, dtype=dtype, device=device)


def unary_input_fn(shape, dtype, device):
    yield (generate_tensor_input(shape, dtype, device),)


def binary_input_fn(shape, dtype, device):
    yield generate_tensor_input(shape, dtype, device), generate_tensor_input(shape, dtype, device)
