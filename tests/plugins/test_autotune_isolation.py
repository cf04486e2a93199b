"""Which tuner calls are an op's own (docs/design.md item 20): not what an earlier op
of the process left in a LibEntry's launch cache (``_tuners.forget_launch_caches``), not
zlbench's own work inside the benchmark (``state.own_work``).

Upstream's ``LibEntry`` keeps each launch key's first config and skips the tuner on
later launches. Without emptying that cache when an op starts, the second op runs the
first op's config: in a replay its own pinned config is never consulted (v7's ``sqrt``
ran ``sqrt_``'s BLOCK_SIZE 2048 for its own 1024 on an H100), in a record its kernel is
never written. And the launch capture reads tensor values with torch ops that FlagGems
serves with its own tuned kernels: counted as the op's, they made a replay a FALLBACK
(``key_missing``). Subprocess pytest sessions, ``TRITON_INTERPRET=1``, the fake FlagGems.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from autotune_harness import run_entries

pytest.importorskip("triton")

TWICE = "flag_gems.ops.twice:twice_kernel"
KEY = '[100,"torch.float32","torch.float32"]'
OPS = {"first": "test_first", "second": "test_second"}

TESTS = textwrap.dedent(
    """
    import torch
    from flag_gems.ops.twice import twice, twice_kernel

    def _run(label):
        x = torch.randn(100)
        torch.testing.assert_close(twice(x), x * 2)
        print(f"TWICE_{label}={twice_kernel.last_config.kwargs['BLOCK']}")

    def test_first():
        _run("first")

    def test_second():
        _run("second")

    def test_own_work():
        from zlbench.plugins import state

        x = torch.randn(100)
        with state.own_work():  # as the launch capture reads values
            torch.testing.assert_close(twice(x), x * 2)
        print(f"TWICE_own={twice_kernel.last_config.kwargs['BLOCK']}")
        _run("after")  # the op's own launch with the same key: its own config
    """
)


def _block(run, label: str) -> int:
    (line,) = run.lines(f"TWICE_{label}=")
    return int(line.split("=")[1])


def _pinned(tmp: Path, name: str, block: int) -> Path:
    """A run dir whose records pin twice_kernel's key to BLOCK=block."""
    config = {"kwargs": {"BLOCK": block}, "num_warps": 1, "num_stages": 1, "num_ctas": 1}
    records = {"schema_version": 1, "kind": "autotune_record_set"}
    records["kernels"] = {TWICE: {KEY: config}}
    out = tmp / name / "autotune_records"
    out.mkdir(parents=True)
    (out / "op.json").write_text(json.dumps(records))
    return out.parent


def test_each_op_of_a_process_records_the_kernel_it_launched(tmp_path):
    (tmp_path / "test_twice.py").write_text(TESTS)
    runs = run_entries(tmp_path, "test_twice.py", "rec", OPS)
    first, second = runs["first"], runs["second"]
    assert first.rc == 0, first.out
    assert list(first.records()[TWICE]) == [KEY]
    # the second op's launch reached the tuner (the warm DB answered it): recorded too
    assert second.records()[TWICE] == first.records()[TWICE]
    assert second.summary()["entries_reset"] == "1"
    assert first.summary()["entries_reset"] == "0"


def test_each_op_of_a_process_runs_its_own_pinned_config(tmp_path):
    (tmp_path / "test_twice.py").write_text(TESTS)
    pins = {"first": _pinned(tmp_path, "pin16", 16), "second": _pinned(tmp_path, "pin64", 64)}
    runs = run_entries(tmp_path, "test_twice.py", "rep", OPS, "replay", pins)
    first, second = runs["first"], runs["second"]
    assert first.rc == 0, first.out
    assert (_block(first, "first"), _block(second, "second")) == (16, 64)
    assert first.markers() == []
    for run in (first, second):
        summary = run.summary()
        assert (summary["kernels"], summary["pinned"], summary["bench_calls"]) == ("1", "1", "0")


def test_zlbench_own_work_is_neither_recorded_nor_pinned_nor_the_op_s_config(tmp_path):
    """The op's own launch after zlbench's runs its pin (BLOCK 128, a config the tuner
    does not list, so not what the own work's unpinned tuning chose) and is the one
    recorded; the own work is neither pinned nor a sweep nor a marker."""
    (tmp_path / "test_twice.py").write_text(TESTS)
    pins = {"own": _pinned(tmp_path, "pin128", 128)}
    rep = run_entries(tmp_path, "test_twice.py", "rep", {"own": "test_own_work"}, "replay",
                      pins)["own"]  # fmt: skip
    assert rep.rc == 0, rep.out
    assert _block(rep, "own") in (16, 32, 64) and _block(rep, "after") == 128
    assert rep.markers() == [] and "tuned_live" not in rep.out
    summary = rep.summary()
    assert (summary["kernels"], summary["pinned"], summary["bench_calls"]) == ("1", "1", "0")
    rec = run_entries(tmp_path, "test_twice.py", "rec", {"own": "test_own_work"})["own"]
    assert rec.rc == 0, rec.out
    assert list(rec.records()[TWICE]) == [KEY]  # the op's launch, once
