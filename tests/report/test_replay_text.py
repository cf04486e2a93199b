"""The report's words on the kernel-replay tier (zlbench.report.replay_text, issue 51):
the per-row instrument cell, the coverage line whose counts add up, the deferred rows'
section with the command per row; exact strings for a small ReplayRun."""

from __future__ import annotations

from zlbench.models import RowKey
from zlbench.models.replay import DeferredRow, ReplayedRow, ReplayRun
from zlbench.report.replay_text import (
    coverage_line,
    deferred_block,
    fallback_counts,
    instrument_cell,
    reason_label,
)

SH = "[torch.Size([64])]"


def key(op: str, shape: str = SH, occurrence: int = 0) -> RowKey:
    return RowKey(
        repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape, occurrence=occurrence
    )


def op_row(op: str, why: str, shape: str = SH) -> ReplayedRow:
    return ReplayedRow(key=key(op, shape), instrument="op", why=why)


CMD = "zlbench gate --baseline baselines/v7 --ops mm --time changed"
RUN = ReplayRun(
    changed_rows=7,
    rows=[
        ReplayedRow(key=key("abs"), instrument="kernel-replay", outputs="match", pairs=16),
        ReplayedRow(key=key("exp"), instrument="kernel-replay", outputs="differ", pairs=16),
        op_row("softmax", "launch captured in a CUDA graph"),
        op_row("softmax", "launch captured in a CUDA graph", "[torch.Size([8])]"),
        op_row("cat", "replayed binary differs from the screen's"),
    ],
    deferred=[
        DeferredRow(key=key("mm"), score=1020.0, command=CMD),
        DeferredRow(key=key("mm", occurrence=1), score=3.5, command=CMD),
    ],
)


def test_the_instrument_cell_says_what_timed_the_row():
    assert [instrument_cell(r) for r in [None, *RUN.rows]] == [
        "op",
        "kernel replay",
        "kernel replay (outputs differ)",
        "op (launch captured in a CUDA graph)",
        "op (launch captured in a CUDA graph)",
        "op (replayed binary differs from the screen's)",
    ]


def test_the_instrument_cell_escapes_the_reason():
    cell = instrument_cell(op_row("a", "kernel `x|y` not in the baseline's codegen records"))
    assert cell == "op (kernel \\`x\\|y\\` not in the baseline's codegen records)"


def test_the_coverage_line_counts_add_up():
    assert coverage_line(RUN, 90.0) == (
        "Kernel replay: 2 of 7 changed rows replayed (29 %); 3 timed through FlagGems "
        "(2 captured in a CUDA graph, 1 digest mismatch); 2 deferred beyond the "
        "`--time-budget` of 90 s."
    )
    assert coverage_line(RUN).endswith("; 2 deferred beyond the `--time-budget`.")
    assert RUN.replayed + sum(n for _, n in fallback_counts(RUN)) + len(RUN.deferred) == 7


def test_the_coverage_line_of_a_run_that_replayed_everything():
    run = ReplayRun(changed_rows=1, rows=[ReplayedRow(key=key("abs"), instrument="kernel-replay")])
    assert coverage_line(run) == "Kernel replay: 1 of 1 changed rows replayed (100 %)."
    assert coverage_line(ReplayRun()) == "Kernel replay: no changed rows to replay."
    racy = ReplayedRow(key=key("add"), instrument="kernel-replay", outputs="racy",
                       max_error=0.4, base_spread=0.3)  # fmt: skip
    run = ReplayRun(changed_rows=3, rows=[run.rows[0], racy, racy.model_copy(update={
        "key": key("mul"), "max_error": 0.9})])  # fmt: skip
    assert coverage_line(run) == (  # mul's PR is farther off than its base's spread
        "Kernel replay: 3 of 3 changed rows replayed (100 %), 1 of them with outputs "
        "that race as the base's own do."
    )


def test_a_replay_timed_under_another_l2_policy_says_so():
    """The default (warm) is not said; flush and clean are, each in its own words."""
    run = ReplayRun(changed_rows=1, rows=[ReplayedRow(key=key("abs"), instrument="kernel-replay")],
                    l2="warm")  # fmt: skip
    assert "--replay-l2" not in coverage_line(run)  # the default: unsaid
    flush = coverage_line(run.model_copy(update={"l2": "flush"}))
    assert flush == (
        "Kernel replay: 1 of 1 changed rows replayed (100 %); timed under `--replay-l2 "
        "flush` (L2 zeroed and buffers restored before each call)."
    )
    assert "`--replay-l2 clean` (L2 read over" in coverage_line(
        run.model_copy(update={"l2": "clean"})
    )


def test_unchanged_rows_replayed_by_time_all_are_said_apart_and_never_counted_as_changed():
    same = ReplayedRow(key=key("add"), instrument="kernel-replay", outputs="match", changed=False)
    lost = op_row("mul", "fault or hang: timed out").model_copy(update={"changed": False})
    run = RUN.model_copy(update={"rows": [*RUN.rows, same, lost]})
    assert instrument_cell(same) == "kernel replay (unchanged, --time all)"
    assert coverage_line(run, 90.0).startswith(
        "Kernel replay: 2 of 7 changed rows replayed (29 %); 1 unchanged row(s) too "
        "(--time all); 3 timed through FlagGems (2 captured"
    )
    assert run.replayed + sum(n for _, n in fallback_counts(run)) + len(run.deferred) == 7
    aa = ReplayRun(rows=[same, lost])  # an A/A: nothing changed, every row replayed
    assert coverage_line(aa) == (
        "Kernel replay: no changed rows; 1 unchanged row(s) replayed (--time all)."
    )


def test_each_reason_is_counted_under_its_label():
    assert [
        reason_label(why)
        for why in (
            "no capture for this op",
            "no launches captured for this row",
            "side stream",
            "intermediate buffer between launches that run more than once",
            "truncated capture",
            "kernel 3f2a not in the baseline's codegen records",
            "unsupported argument fn (other)",
            "tensor data digest mismatch",
            "row timed out (hang?)",
            "CUDA error: an illegal memory access was encountered",
            "no default stream",
            "changed kernel `k` not among its captured launches",
            "something new\nand odd",
            # v7's broad change on an H100 (2026-12-07): the worker's own words
            "PR and base outputs differ after replay (max error 0.00108); the base's own "
            "two runs agree",
            "PR and base outputs differ after replay (max error 579); the base's own five "
            "runs differ too (max error 201)",
            "PR and base outputs differ after replay (max error 2.5)",  # before the runs
            "not tried: kernel `fused_moe_kernel` broke the replay in an earlier row of this op",
            "values not read: every launch held a FlagGems first-run lock",
            "base launch failed: OutOfMemoryError: CUDA out of memory. Tried to allocate 7.00 GiB",
            "base launch failed: RuntimeError: Triton Error [CUDA]: out of memory",
            "base launch failed: RuntimeError: Triton Error [CUDA]: an illegal memory access "
            "was encountered",
            "pr launch failed: ValueError: pointer argument cannot be accessed",
        )
    ] == [
        "no capture",
        "no capture",
        "side stream",
        "intermediate buffer",
        "truncated capture",
        "kernel not in the baseline",
        "unsupported argument",
        "digest mismatch",
        "fault or hang",
        "fault or hang",
        "no default stream",
        "incomplete capture",
        "something new and odd",
        "outputs differ (the base's own runs agree)",
        "outputs differ (so do the base's own runs)",
        "outputs differ",
        "quarantined",
        "values not read (FlagGems first-run lock)",
        "out of memory",
        "out of memory",
        "fault or hang",
        "launch failed",
    ]


def test_the_deferred_section_lists_each_row_with_its_command():
    block = deferred_block(RUN, 90.0)
    assert block is not None and block.render(None) == (
        "### Deferred beyond the time budget\n\n"
        "2 changed row(s) were not timed: replaying them would pass the `--time-budget` of "
        "90 s. They are not judged. Rows were taken by how much their code changed, largest "
        "first (code change: 1000 a spill, 10 a register, 1 a SASS instruction or changed "
        "diff line); each command times the row's op with no budget.\n\n"
        "| op | dtype | shape | code change | command |\n"
        "| --- | --- | --- | ---: | --- |\n"
        f"| `mm` | `bfloat16` | `{SH}` | 1020 | `{CMD}` |\n"
        f"| `mm` | `bfloat16` | `{SH} #1` | 3.5 | `{CMD}` |\n"
    )


def test_no_deferred_rows_no_section():
    assert deferred_block(ReplayRun(changed_rows=2)) is None
