"""--time-budget (zlbench.codegen.select.within_budget): the changed ops timed in a
stated priority within a GPU budget (sentinels always, the PR tier first, the largest
code change first), every one left out listed with its rank; and through the gate."""

from __future__ import annotations

from zlbench.codegen.select import change_size, ops_to_time, within_budget
from zlbench.models import BaselineResult, BaselineRow, RowKey
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen

SHAPE = "[torch.Size([64])]"
CHANGED = CodegenClass.TTGIR


def _result(op: str) -> BaselineResult:
    rows = [BaselineRow(op=op, dtype="float16", shape=SHAPE)]
    return BaselineResult(repo="main", run_name=op, op=op, timing="cudagraph", rows=rows)


def _kernel(op: str, status: CodegenClass, sass: float = 0.0) -> KernelScreen:
    row = RowKey(repo="main", run_name=op, op=op, dtype="float16", shape=SHAPE)
    return KernelScreen(
        kernel_id=f"id-{op}", name=f"{op}_k", status=status, ops=[f"main/{op}"], rows=[row],
        deltas={"sass_instructions": sass} if sass else {},
    )  # fmt: skip


OPS = ["add", "mm", "sum", "gelu", "cat", "topk"]
BASE = {f"main/{op}": _result(op) for op in OPS}
SCREEN = CodegenScreen(
    baseline_dir="b",
    kernels=[
        _kernel("add", CodegenClass.IDENTICAL),  # a sentinel, unchanged
        _kernel("mm", CHANGED, sass=40),  # PR tier
        _kernel("sum", CHANGED, sass=2),  # PR tier
        _kernel("gelu", CHANGED, sass=500),  # not in the tier: the largest change
        _kernel("cat", CHANGED, sass=10),
        _kernel("topk", CodegenClass.IDENTICAL),  # proven unchanged: never timed
    ],
)
COSTS = {"main/add": 5.0, "main/mm": 30.0, "main/sum": 30.0, "main/gelu": 30.0}  # cat: unknown


def test_within_the_budget_sentinels_then_the_tier_then_the_largest_change():
    plan = ops_to_time(SCREEN, BASE, sentinels=["add"])
    assert set(plan.time) == {"main/add", "main/mm", "main/sum", "main/gelu", "main/cat"}
    cut = within_budget(plan, SCREEN, COSTS, budget_s=70.0, first={"main/mm", "main/sum"})
    # add (sentinel, 5 s) + mm (tier, larger change, 30 s) + sum (tier, 30 s) = 65 s;
    # gelu's 30 s and cat's default 30 s do not fit
    assert set(cut.time) == {"main/add", "main/mm", "main/sum"}
    assert set(cut.over_budget) == {"main/gelu", "main/cat"}
    assert cut.over_budget["main/gelu"].startswith(
        "changed, not timed: beyond the GPU budget of 70 s (priority 4 of 5, about 30 s): "
    )
    assert "priority 5 of 5" in cut.over_budget["main/cat"]  # a smaller change than gelu's
    assert cut.skip == plan.skip and "main/topk" in cut.skip  # proofs kept


def test_outside_the_tier_the_largest_code_change_goes_first():
    plan = ops_to_time(SCREEN, BASE, sentinels=["add"])
    cut = within_budget(plan, SCREEN, COSTS, budget_s=40.0)  # no tier
    assert set(cut.time) == {"main/add", "main/gelu"}  # 500 SASS instructions: first
    ranks = sorted(
        (int(w.split("priority ")[1].split(" ")[0]), k) for k, w in cut.over_budget.items()
    )
    assert [k for _, k in ranks] == ["main/mm", "main/cat", "main/sum"]


def test_a_sentinel_is_timed_whatever_the_budget_and_a_failed_rebuild_ranks_first():
    plan = ops_to_time(SCREEN, BASE, sentinels=["add"])
    cut = within_budget(plan, SCREEN, COSTS, budget_s=1.0)
    assert set(cut.time) == {"main/add"} and len(cut.over_budget) == 4
    assert change_size([_kernel("x", CodegenClass.MISSING)]) == float("inf")
    assert change_size([_kernel("x", CHANGED)]) == 1.0  # a change with no SASS figure counts
    # changed before SASS, so not disassembled: the size of its first stage's diff
    early = _kernel("x", CHANGED).model_copy(update={"changed_lines": 37})
    assert change_size([early, _kernel("y", CHANGED, sass=-5)]) == 42.0
    assert change_size([_kernel("x", CodegenClass.IDENTICAL)]) == 0.0
