"""Command-line options of the fake suite: the same names, choices and defaults as upstream."""

from __future__ import annotations

import json
import os

import flag_gems
import pytest
import torch
from flag_gems.runtime import torch_device_fn

from . import consts

device = flag_gems.device
vendor_name = flag_gems.vendor_name
Config = None  # the BenchConfig of this session, set by pytest_configure
RESULTS: dict = {}

_DTYPE_CHOICES = [
    str(d).split(".")[-1]
    for d in consts.FLOAT_DTYPES + consts.INT_DTYPES + consts.BOOL_DTYPES + [torch.cfloat]
]


class BenchConfig:
    def __init__(self) -> None:
        self.mode = consts.BenchMode.KERNEL
        self.bench_level = consts.BenchLevel.COMPREHENSIVE
        self.warm_up = consts.DEFAULT_WARMUP_TIME
        self.repetition = consts.DEFAULT_ITER_TIME
        self.record_log = False
        self.record_json = False
        self.output = "benchmark_result.json"
        self.user_desired_dtypes = None
        self.user_desired_metrics = None
        self.shape_file = os.path.join(os.path.dirname(__file__), "core_shapes.yaml")
        self.query = False


def pytest_addoption(parser):
    add = parser.addoption
    add(
        "--mode",
        default="kernel",
        choices=[m.value for m in consts.BenchMode],
        help="how to measure latency: kernel (do_bench), cudagraph, operator, wrapper",
    )
    add(
        "--level",
        default="comprehensive",
        choices=[lv.value for lv in consts.BenchLevel],
        help="benchmark level: comprehensive or core",
    )
    add("--warmup", default=consts.DEFAULT_WARMUP_TIME, help="warmup time (ms)")
    add("--iter", default=consts.DEFAULT_ITER_TIME, help="measurement time (ms)")
    add("--query", action="store_true", default=False, help="query mode")
    add(
        "--metrics",
        action="append",
        default=None,
        choices=sorted(consts.ALL_AVAILABLE_METRICS),
        help="metrics to measure",
    )
    add(
        "--dtypes",
        action="append",
        default=None,
        choices=_DTYPE_CHOICES,
        help="dtypes to benchmark",
    )
    add(
        "--shape_file",
        default=os.path.join(os.path.dirname(__file__), "core_shapes.yaml"),
        help="shape yaml",
    )
    add("--record", default="none", choices=["none", "log", "json"], help="record results")
    add("--output", default="benchmark_result.json", help="json report path")
    add("--parallel", type=int, default=0, help="multi-GPU shapes (not supported by the fake)")
    # fmt: skip


def pytest_configure(config):
    global Config
    cfg = BenchConfig()
    cfg.mode = consts.BenchMode(config.getoption("--mode"))
    cfg.bench_level = consts.BenchLevel(config.getoption("--level"))
    cfg.warm_up = int(config.getoption("--warmup"))
    cfg.repetition = int(config.getoption("--iter"))
    cfg.query = config.getoption("--query")
    names = config.getoption("--dtypes")
    cfg.user_desired_dtypes = [getattr(torch, n) for n in names] if names else None
    cfg.user_desired_metrics = config.getoption("--metrics")
    cfg.shape_file = config.getoption("--shape_file")
    cfg.record_json = config.getoption("--record") == "json"
    cfg.record_log = config.getoption("--record") == "log"
    cfg.output = config.getoption("--output")
    Config = cfg


def record_result(op_name: str, table: dict) -> None:
    if Config is not None and Config.record_json:
        RESULTS.setdefault(op_name, {}).setdefault("details", []).append(table)


@pytest.fixture(autouse=True)
def _empty_device_cache():
    yield
    torch_device_fn.empty_cache()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if Config is None or not Config.record_json:
        return
    with open(Config.output, "w", encoding="utf-8") as f:
        json.dump(RESULTS, f, indent=2, default=str)
