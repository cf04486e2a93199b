"""Process-level behaviour: crashes leave no result.json, several ops per process
(docs/design.md §5.20)."""

from __future__ import annotations

import re

from _corerun import copy_benchpkg, entry, run_plan

ADD = "benchmark/test_add.py::test_add"
PROBE = "benchmark/test_inputs_probe.py::test_inputs_probe"
MIS = "benchmark/test_misbehaving.py::"


def _keys(res):
    return [(r.op, r.dtype, r.shape, r.occurrence) for r in res.rows]


def test_process_killed_mid_op_leaves_no_result_json(tmp_path):
    root = copy_benchpkg(tmp_path / "fg")
    entries = [
        entry(root, "add", ADD, dtypes=["float32"]),
        entry(root, "crash_segv", MIS + "test_crash_segv"),
    ]
    run = run_plan(root, entries, "--mode", "kernel")
    assert run.rc < 0 or run.rc > 1, run.out[-2000:]
    run.lines.fnmatch_lines(
        ["ZLBENCH_OP_END run_name=add status=PASS", "ZLBENCH_OP_BEGIN run_name=crash_segv"]
    )
    assert "ZLBENCH_OP_END run_name=crash_segv" not in run.out
    assert run.result("add").rows
    assert not (run.run_dir("crash_segv") / "result.json").exists()


def test_several_ops_in_one_process_equal_one_op_per_process(tmp_path):
    """Same row keys and the same (seeded) inputs whether ops share a process or not.

    ``--mode kernel`` also shows that upstream's do_bench is replaced (on the CPU
    the original would fail: triton finds no GPU driver).
    """
    root = copy_benchpkg(tmp_path / "fg")
    ops = {
        "add": entry(root, "add", ADD, dtypes=["float32"]),
        "inputs_probe": entry(root, "inputs_probe", PROBE),
    }
    shared = run_plan(root, list(ops.values()), "--mode", "kernel")
    assert shared.rc == 0, shared.out[-3000:]
    together = {name: _keys(shared.result(name)) for name in ops}
    probes_together = re.findall(r"INPUT_PROBE .*", shared.out)
    for name, e in ops.items():
        alone_root = copy_benchpkg(tmp_path / f"alone-{name}")
        alone_entry = entry(alone_root, name, e.nodeids[0], dtypes=e.dtypes)
        alone = run_plan(alone_root, [alone_entry], "--mode", "kernel")
        assert alone.rc == 0, alone.out[-3000:]
        assert _keys(alone.result(name)) == together[name]
        if name == "inputs_probe":
            assert re.findall(r"INPUT_PROBE .*", alone.out) == probes_together
    assert len(probes_together) == 2 and together["add"]
