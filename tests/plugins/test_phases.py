"""`-p zlbench.plugins.phases`: every op gets a timings.json that splits its wall time
(process start and collection on the first op, pytest phases, and the graph-timing
phases of each side), measured on the benchpkg suite with the CPU timing backend."""

from __future__ import annotations

import pytest
from _corerun import copy_benchpkg, entry, run_plan

from zlbench.models import load_json_model
from zlbench.models.timings import TIMINGS_JSON, OpTimings
from zlbench.plugins.phases import process_start_time
from zlbench.plugins.timing import reference_side

ADD = "benchmark/test_add.py::test_add"
SOFTMAX = "benchmark/test_softmax.py::test_softmax"


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    root = copy_benchpkg(tmp_path_factory.mktemp("phases") / "bp")
    entries = [entry(root, "add", ADD, dtypes=["float32"]), entry(root, "softmax", SOFTMAX)]
    run = run_plan(root, entries, "-p", "zlbench.plugins.phases")
    assert run.rc == 0, run.out
    return run


def _timings(run, name: str) -> OpTimings:
    return load_json_model(run.run_dir(name) / TIMINGS_JSON, OpTimings)


def test_first_op_carries_process_start_and_collection(timed):
    first, second = _timings(timed, "add"), _timings(timed, "softmax")
    assert first.first_in_process and not second.first_in_process
    assert first.process_start_s is not None and first.process_start_s > 0.1  # torch import
    assert first.collection_s is not None and first.collection_s > 0
    assert second.process_start_s is None and second.collection_s is None


def test_each_row_is_measured_once_per_side_and_its_phases_are_timed(timed):
    for name in ("add", "softmax"):
        t = _timings(timed, name)
        rows = len(timed.result(name).rows)
        assert rows > 0 and t.torch.calls == rows and t.gems.calls == rows
        for side in (t.torch, t.gems):
            assert side.first_call_s > 0 and side.warmup_s > 0
            assert side.capture_s > 0 and side.replays_s > 0


def test_phases_add_up_to_no_more_than_the_op_wall_time(timed):
    for name in ("add", "softmax"):
        t = _timings(timed, name)
        sides = [t.torch, t.gems]
        measured = sum(
            s.first_call_s + s.warmup_s + s.capture_s + s.replays_s + s.sync_s + s.other_s
            for s in sides
        )
        assert measured <= t.call_s + 0.05
        assert t.setup_s + t.call_s + t.teardown_s <= t.op_wall_s + 0.05


def test_without_the_plugin_no_timings_are_written(tmp_path):
    root = copy_benchpkg(tmp_path / "bp")
    run = run_plan(root, [entry(root, "add", ADD, dtypes=["float32"])])
    assert run.rc == 0, run.out
    assert not (run.run_dir("add") / TIMINGS_JSON).exists()


def test_process_start_time_is_in_the_past():
    import time

    started = process_start_time()
    assert started is not None and 0 < time.time() - started < 24 * 3600


def test_reference_side_reads_the_metric_of_upstreams_run_frame():
    class Metric:
        latency_base = None

    def run():
        metric = Metric()  # noqa: F841 - read through the frame
        return inner()

    def inner():
        import sys

        return reference_side(sys._getframe())

    assert run() is True
    Metric.latency_base = 1.0
    assert run() is False
    assert reference_side(None) is False
