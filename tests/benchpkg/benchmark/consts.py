"""Constants and result records of the fake benchmark suite (upstream ``consts.py`` shape)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import torch

FLOAT_DTYPES = [torch.float16, torch.float32, torch.bfloat16]
INT_DTYPES = [torch.int16, torch.int32]
BOOL_DTYPES = [torch.bool]
COMPLEX_DTYPES = [torch.complex64]

DEFAULT_WARMUP_TIME = 1000  # ms, like upstream
DEFAULT_ITER_TIME = 100  # ms, like upstream

# The 1-D/2-D defaults used when the shape file has no key for a benchmark.
DEFAULT_SHAPES = [(64,), (8, 8)]

DEFAULT_METRICS = ["latency_base", "latency", "speedup"]
ALL_AVAILABLE_METRICS = {
    "latency_base", "latency", "gbps_base", "gbps", "speedup", "accuracy", "tflops",
    "utilization", "compared_speedup", "error_msg",
}  # fmt: skip


class BenchMode(enum.Enum):
    KERNEL = "kernel"
    OPERATOR = "operator"
    WRAPPER = "wrapper"
    CUDAGRAPH = "cudagraph"


class BenchLevel(enum.Enum):
    COMPREHENSIVE = "comprehensive"
    CORE = "core"


@dataclass
class BenchmarkMetrics:
    """One measured shape (field names as upstream, which zlbench reads)."""

    legacy_shape: int | None = None
    shape_detail: object = None
    latency_base: float | None = None
    latency: float | None = None
    gbps_base: float | None = None
    gbps: float | None = None
    speedup: float | None = None
    accuracy: float | None = None
    tflops: float | None = None
    utilization: float | None = None
    compared_speedup: float | None = None
    error_msg: str | None = None


def _fmt(value: float | None, digits: int) -> str:
    return "N/A" if value is None else f"{value:.{digits}f}"


@dataclass
class BenchmarkResult:
    """One dtype's table, printed exactly in upstream's layout."""

    op_name: str
    dtype: str
    mode: str
    level: str
    result: list = field(default_factory=list)

    def __str__(self) -> str:
        first = self.result[0]
        show_tflops = bool(first.tflops)
        show_gbps = first.gbps is not None
        names = [f"{'Status':<10}"]
        names += [f"{n:>20}" for n in ("Torch Latency (ms)", "Gems Latency (ms)", "Gems Speedup")]
        if show_tflops:
            names.append(f"{'TFLOPS':>20}")
        if show_gbps:
            names += [f"{'Torch GBPS ':>20}", f"{'Gems GBPS ':>20}"]
        names.append(f"{'Size Detail':>20}\n")
        columns = " ".join(names)
        title = (
            f"\nOperator: {self.op_name}  Performance Test (dtype={self.dtype}, "
            f"mode={self.mode},level={self.level})\n"
        )
        body = "".join(self._line(m, show_tflops, show_gbps) for m in self.result)
        return title + columns + "-" * len(columns) + "\n" + body

    @staticmethod
    def _line(m: BenchmarkMetrics, show_tflops: bool, show_gbps: bool) -> str:
        status = "SUCCESS" if m.error_msg is None else "FAILED"
        text = f"{status:<10}{_fmt(m.latency_base, 6):>20}{_fmt(m.latency, 6):>20}"
        text += f"{_fmt(m.speedup, 3):>20}"
        if show_tflops:
            text += f"{_fmt(m.tflops, 3):>20}"
        if show_gbps:
            text += f"{_fmt(m.gbps_base, 3):>20}{_fmt(m.gbps, 3):>20}"
        detail = "N/A" if m.shape_detail is None else m.shape_detail
        return text + " " * 10 + f"{detail}\n"
