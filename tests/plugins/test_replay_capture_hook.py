"""The launch capture through the real hook: the codegen recorder installed
(``CompiledKernel.launch_metadata`` wrapped), real Triton compiles for sm_90 under the
stand-in driver (launches do nothing, the wrapper runs), a fake op in flight; the
``launches.json`` written next to ``index.json`` at op end."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("triton")

from tests.support.codegen import run_script, subprocess_env  # noqa: E402
from zlbench.models import CODEGEN_INDEX, CodegenIndex, load_json_model  # noqa: E402
from zlbench.models.replay import (  # noqa: E402
    LAUNCHES_JSON,
    CaptureRowAt,
    LaunchCapture,
    order_unknown,
)

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    import torch
    from zlbench.models import PlanEntry, WorkerPlan
    from zlbench.plugins import codegen, state
    from zlbench.plugins.compiler import standin

    run_dir = Path(sys.argv[1])
    recorder = codegen.Recorder(sass=False)
    standin.activate("cuda:90", launch="skip")
    codegen.install(recorder)
    import flag_gems.ops as ops

    entry = PlanEntry(op="add", run_name="add", run_dir=str(run_dir), nodeids=["t::a"])
    session = state.Session(plan=WorkerPlan(entries=[entry]))
    state._ACTIVE = session
    op = session.current = state.OpState(entry=entry, dtype="float32", shape="[64, 128]")
    x, y = torch.randn(64, 128), torch.arange(64 * 128, dtype=torch.float32).view(64, 128)
    ops.add(x, y)  # outside the timed region: not captured
    for _ in range(3):
        with state.timed_region():
            ops.add(x, y[:, :])
    op.shape = "mm"
    a, b = torch.randn(32, 64), torch.randn(64, 32)
    for _ in range(2):  # the first call's autotune sweep launches every config
        with state.timed_region():
            ops.mm(a, b)
    op.shape = "torch"  # a row whose timed calls launch no Triton kernel
    for _ in range(2):
        with state.timed_region():
            torch.add(x, y)
    op.shape = "chain"  # one launch key run twice, the second on the first's output
    keep = []
    for _ in range(2):
        with state.timed_region():
            s = ops.add(x, y)
            keep.append(ops.add(s, y))
    recorder.on_end(op)
""")


@pytest.mark.proc
def test_the_hook_writes_each_rows_timed_launches_next_to_the_index(tmp_path):
    run_dir = tmp_path / "add"
    env = subprocess_env(tmp_path)
    env["ZLBENCH_FAKE_SLOWDOWN"] = "1"
    run_script(SCRIPT, [str(run_dir)], env)
    cg = run_dir / "codegen"
    index = load_json_model(cg / CODEGEN_INDEX, CodegenIndex)
    capture = load_json_model(cg / LAUNCHES_JSON, LaunchCapture)
    ids = {r.id: r for r in index.records}
    add_row, mm_row, torch_row, chain_row = capture.rows
    # the capture lists every row it saw timed: one that launched nothing with no launch
    assert capture.lists_every_row and capture.unnamed_calls == 0
    assert capture.every_launch_hooked  # no FlagGems C extension in this process
    assert (torch_row.shape, torch_row.launches) == ("torch", [])
    only = CaptureRowAt(occurrence=0, expected=frozenset({0}))  # its one row
    assert capture.proves_no_launch("add", "float32", "torch", only)
    assert capture.launched_nothing(torch_row) and not capture.launched_nothing(add_row)
    assert (add_row.op, add_row.dtype, add_row.shape, add_row.occurrence) == (
        "add", "float32", "[64, 128]", 0)  # fmt: skip
    assert not add_row.truncated and not add_row.why_not
    assert add_row.order == [0]  # one run a call, on the same storages every call
    # the chain's two runs share a key but not their storages: no order is given. No
    # buffer passes between two of its launches (it has one), so the row replays its one
    # launch twice on the first run's storages, the same layouts (docs/replay.md)
    [twice] = chain_row.launches
    assert twice.count == 2 and chain_row.order is None
    assert not order_unknown(chain_row.launches, chain_row.order)

    [add] = add_row.launches
    assert ids[add.kernel_id].request.kernel.name == "add_kernel" == add.kernel
    assert add.grid == [64 * 128 // 256, 1, 1] and add.count == 1 and not add.why_not
    args = {a.name: a for a in add.args}
    assert list(args) == ["x_ptr", "y_ptr", "out_ptr", "n", "alpha", "BLOCK"]
    assert (args["n"].kind, args["n"].value) == ("int", 64 * 128)
    assert (args["alpha"].kind, args["alpha"].value) == ("float", 1.0)
    assert (args["BLOCK"].kind, args["BLOCK"].value) == ("int", 256)  # a constexpr
    for name in ("x_ptr", "y_ptr", "out_ptr"):
        t = args[name]
        assert (t.kind, t.dtype, t.shape, t.strides, t.storage) == (
            "tensor", "float32", [64, 128], [128, 1], 64 * 128)  # fmt: skip
        assert t.data is None and t.stats is not None
    assert [args[n].buffer for n in ("x_ptr", "y_ptr", "out_ptr")] == [0, 1, 2]
    y = args["y_ptr"].stats
    assert (y.min, y.max, y.integral, y.nonfinite) == (0, 64 * 128 - 1, True, 0)

    [mm] = mm_row.launches  # the sweep's other configs ran in the first call only
    rec = ids[mm.kernel_id]
    assert rec.request.kernel.name == "mm_kernel" == mm.kernel
    assert any(u.timed and u.shape == "mm" for u in rec.used_by)
    margs = {a.name: a for a in mm.args}
    assert (margs["M"].value, margs["N"].value, margs["K"].value) == (32, 32, 64)
    block = {c.path[0]: c.value for c in rec.request.constexprs}
    names = [a.name for a in mm.args]
    assert margs["BLOCK_M"].value == block[names.index("BLOCK_M")]
    assert mm.grid == [32 // margs["BLOCK_M"].value, 32 // margs["BLOCK_N"].value, 1]
    assert sum(r.request.kernel.name == "mm_kernel" for r in index.records) == 3
