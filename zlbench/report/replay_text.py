"""The report's words on the kernel-replay tier (issue 51, ``<gate>/replay/replay.json``).

Pure: every function returns a markdown string; every string from an artifact goes
through :mod:`zlbench.report.escape`. Also the vocabulary of why a changed row was
not replayed (the ``FALLBACK_*`` reasons the plan writes,
:mod:`zlbench.codegen.replay_plan`) and the short label each reason is counted under
in the coverage line (:func:`reason_label`), so a reason is spelled once.

The counts add up: a replay run's ``changed_rows`` are its replayed rows, its rows
timed through FlagGems (instrument ``op``, each with a reason) and its deferred rows;
the rows its capture proved to time no Triton kernel (``no_launch``) are counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from zlbench.models.replay import (
    DEFAULT_L2,
    INTERMEDIATE_BUFFER,
    DeferredRow,
    ReplayedRow,
    ReplayRun,
    error_text,
)
from zlbench.models.run import RowKey
from zlbench.report.blocks import Block, Names
from zlbench.report.escape import md_code, md_text, one_line
from zlbench.report.facts import row_op

# Why a changed row is timed through FlagGems (the op path) and not replayed: the plan's
# reasons (zlbench.codegen.replay_plan), word for word.
FALLBACK_NO_RECORDS = "no codegen records for this op"
FALLBACK_UNRECORDED = "kernel(s) its record pass ran without a record"  # after a count
FALLBACK_NOT_NAMED = "the codegen records do not name its kernels"
FALLBACK_NOT_REBUILT = "not rebuilt by the screen"  # after "kernel `name` "
FALLBACK_NO_CAPTURE = "no capture for this op"
FALLBACK_NO_ROW = "no launches captured for this row"
# the capture's rows of its dtype and shape are numbered otherwise than the baseline's
# rows imply (LaunchCapture.row_of: a capture merged from row parts): which is its, unknown
FALLBACK_OCCURRENCES = "its capture's rows of this dtype and shape are not the baseline's"
# the capture saw the row's timed calls launch no Triton kernel (LaunchCapture.
# launched_nothing): its changed kernels ran outside them; timed through FlagGems still
FALLBACK_LAUNCHED_NOTHING = "its timed calls launched no Triton kernel (capture)"
FALLBACK_GRAPH = "launch captured in a CUDA graph"
FALLBACK_SIDE_STREAM = "side stream"
FALLBACK_INTERMEDIATE = INTERMEDIATE_BUFFER  # models.replay: the worker says it too
FALLBACK_TRUNCATED = "truncated capture"
FALLBACK_UNKNOWN_KERNEL = "not in the baseline's codegen records"  # after "kernel <id> "
FALLBACK_UNSUPPORTED = "unsupported argument"  # then the argument's name
FALLBACK_ADDRESSES = "a table of device addresses"  # after FALLBACK_UNSUPPORTED's name
FALLBACK_NOT_CAPTURED = "not among its captured launches"  # after "changed kernel `name` "
FALLBACK_OVER_BUDGET = "beyond the replay budget (its op is timed through FlagGems anyway)"

# reason -> the label it is counted under in the coverage line: the first entry whose
# text the reason contains. The replay's own failures (zlbench.plugins.replay: a tensor
# digest or a binary that differs from the screen's, a fault, a hang) are matched by
# their words; any other reason is counted under itself.
REASON_LABELS: tuple[tuple[str, str], ...] = (
    (FALLBACK_NO_RECORDS, "no codegen records"),
    (FALLBACK_UNRECORDED, "unrecorded kernels"),
    (FALLBACK_NOT_NAMED, "kernels not named by the records"),
    (FALLBACK_NOT_REBUILT, "kernel not rebuilt"),
    (FALLBACK_NO_CAPTURE, "no capture"),
    (FALLBACK_NO_ROW, "no capture"),
    (FALLBACK_OCCURRENCES, "capture rows not the baseline's"),
    (FALLBACK_LAUNCHED_NOTHING, "no Triton kernel timed"),
    (FALLBACK_GRAPH, "captured in a CUDA graph"),
    (FALLBACK_SIDE_STREAM, "side stream"),
    (FALLBACK_INTERMEDIATE, "intermediate buffer"),
    (FALLBACK_TRUNCATED, "truncated capture"),
    ("capture failed", "capture failed"),
    (FALLBACK_UNKNOWN_KERNEL, "kernel not in the baseline"),
    (FALLBACK_UNSUPPORTED, "unsupported argument"),
    (FALLBACK_NOT_CAPTURED, "incomplete capture"),
    (FALLBACK_OVER_BUDGET, "beyond the replay budget"),
    # the worker's words (plugins.replay.worker): outputs that differ, counted by what
    # the base's own runs did, not one label per error (v7's 37 such rows on an H100
    # were 30 labels, 2026-12-07)
    ("runs agree", "outputs differ (the base's own runs agree)"),
    ("runs differ too", "outputs differ (so do the base's own runs)"),
    ("outputs differ", "outputs differ"),
    ("broke the replay in an earlier row", "quarantined"),  # models.replay.QUARANTINED
    ("values not read", "values not read (FlagGems first-run lock)"),
    ("out of memory", "out of memory"),
    ("illegal memory access", "fault or hang"),
    ("digest", "digest mismatch"),
    ("differs from the screen's", "digest mismatch"),
    ("hang", "fault or hang"),
    ("timed out", "fault or hang"),
    ("faulted", "fault or hang"),
    ("CUDA error", "fault or hang"),
    ("launch failed", "launch failed"),  # plugins.replay.timing: any other error
)
LABEL_MAX = 60  # characters of a reason counted under itself
WHY_CELL_MAX = 100  # characters of a reason in a table cell


def reason_label(why: str) -> str:
    """The short label a fallback reason is counted under (:data:`REASON_LABELS`);
    a reason none of them matches is its own label (one line, cut)."""
    for text, label in REASON_LABELS:
        if text in why:
            return label
    return one_line(why, LABEL_MAX) or "no reason given"


ALSO_OP = "; also through FlagGems, whose verdict stands"
# a row whose capture proves that its timed calls launch no Triton kernel (ReplayRun.
# no_launch): judged without timing
NO_LAUNCH_CELL = "none: no Triton kernel in its timed calls (capture)"


def instrument_cell(row: ReplayedRow | None, op_judged: bool = False) -> str:
    """What timed a row, for a per-row column: ``kernel replay`` (``kernel replay
    (outputs differ)`` when the PR's outputs differed from the base's; ``(outputs race:
    ...)`` with both errors when they differed as the base's own runs do), ``op (why)`` for
    a changed row timed through FlagGems, ``op`` for a row the replay tier had nothing
    to do with (None). ``op_judged``: the op path measured the row too (a sentinel, an
    op the gate times anyway), and the verdict is its (:data:`ALSO_OP`)."""
    if row is None:
        return "op"
    if row.instrument == "kernel-replay":
        if row.outputs == "differ":
            return "kernel replay (outputs differ)"
        if row.outputs == "racy":
            runs = f"{row.base_runs} runs" if row.base_runs else "runs"
            return (
                f"kernel replay (outputs race: PR vs base {_g(row.max_error)}, the base's "
                f"own {runs} {_g(row.base_spread)})" + (ALSO_OP if op_judged else "")
            )
        cell = "kernel replay" if row.changed else "kernel replay (unchanged, --time all)"
        return cell + (ALSO_OP if op_judged else "")
    return f"op ({md_text(row.why, WHY_CELL_MAX)})" if row.why else "op"


def _g(x: float | None) -> str:
    return "?" if x is None else error_text(x)


def fallback_counts(run: ReplayRun) -> list[tuple[str, int]]:
    """(label, rows) of the changed rows timed through FlagGems, most rows first, then by
    label (an unchanged row that ``--time all`` could not replay is no changed row's)."""
    counts = Counter(reason_label(r.why) for r in run.rows if r.instrument == "op" and r.changed)
    return sorted(counts.items(), key=lambda lc: (-lc[1], lc[0]))


# What a replay's L2 policy other than the default did before each timed call
# (``gate --replay-l2``, models.replay.L2_POLICIES)
L2_WORDS = {
    "flush": "L2 zeroed and buffers restored before each call",
    "clean": "L2 read over, not zeroed, before each call",
    "warm": "no L2 flush, buffers restored once a sample",
}


def coverage_line(run: ReplayRun, budget_s: float | None = None) -> str:
    """``Kernel replay: 38 of 45 changed rows replayed (84 %); 4 timed through FlagGems
    (2 captured in a CUDA graph, 1 digest mismatch, 1 intermediate buffer); 3 deferred
    beyond the `--time-budget` of 90 s.`` ``budget_s``: the gate's ``--time-budget``
    (``timing.json``'s ``budget_s``), None when not known. A policy other than the
    default says so: ``; timed under `--replay-l2 warm` (no L2 flush, ...)``."""
    if not run.changed_rows and not run.unchanged_replayed and not run.no_launch:
        return "Kernel replay: no changed rows to replay."
    parts = [f"Kernel replay: {run.coverage()}"]
    counts = fallback_counts(run)
    if counts:
        said = ", ".join(f"{n} {md_text(label, LABEL_MAX)}" for label, n in counts)
        parts.append(f"{sum(n for _, n in counts)} timed through FlagGems ({said})")
    if run.deferred:
        budget = f" of {budget_s:g} s" if budget_s is not None else ""
        parts.append(f"{len(run.deferred)} deferred beyond the `--time-budget`{budget}")
    if run.l2 != DEFAULT_L2:
        parts.append(f"timed under `--replay-l2 {run.l2}` ({L2_WORDS[run.l2]})")
    return "; ".join(parts) + "."


DEFERRED_TITLE = "Deferred beyond the time budget"
DEFERRED_HEADER = ["op", "dtype", "shape", "code change", "command"]


def _deferred_row(d: DeferredRow, names: Names) -> list[str]:
    occ = f" #{d.key.occurrence}" if d.key.occurrence else ""
    return [
        md_code(row_op(d.key, names)),
        md_code(d.key.dtype),
        md_code(d.key.shape + occ),
        f"{d.score:g}",
        md_code(d.command, 300),
    ]


def deferred_block(
    run: ReplayRun, budget_s: float | None = None, names: Names = None
) -> Block | None:
    """The deferred rows as a :class:`~zlbench.report.blocks.Block` (None when none):
    each with its code-change score (the order they were taken in) and the command that
    times it; ``names``: op key -> its spelling (``facts.op_names``)."""
    if not run.deferred:
        return None
    budget = f" of {budget_s:g} s" if budget_s is not None else ""
    intro = (
        f"{len(run.deferred)} changed row(s) were not timed: replaying them would pass the "
        f"`--time-budget`{budget}. They are not judged. Rows were taken by how much their "
        "code changed, largest first (code change: 1000 a spill, 10 a register, 1 a SASS "
        "instruction or changed diff line); each command times the row's op with no budget."
    )
    rows = [_deferred_row(d, names) for d in run.deferred]
    return Block(DEFERRED_TITLE, intro, DEFERRED_HEADER, "lllrl", rows)


REPLAY_TITLE = "Kernel replay"
REPLAY_HEADER = ["op", "dtype", "shape", "timed by"]


def replay_block(
    run: ReplayRun,
    budget_s: float | None = None,
    names: Names = None,
    op_judged: Collection[RowKey] = (),
) -> Block:
    """The replay tier's section: the coverage line, then every changed row with what
    timed it (:func:`instrument_cell`; ``op_judged``: the rows whose verdict is the op
    path's, measured there too), replayed rows first, then the rows proven by their
    capture to time no Triton kernel (:data:`NO_LAUNCH_CELL`)."""
    rows = sorted(run.rows, key=lambda r: (r.instrument != "kernel-replay", r.key.label()))
    judged = set(op_judged)
    cells = [(r.key, instrument_cell(r, r.key in judged)) for r in rows]
    cells += [(k, NO_LAUNCH_CELL) for k in sorted(run.no_launch, key=lambda k: k.label())]
    table = [
        [
            md_code(row_op(key, names)),
            md_code(key.dtype),
            md_code(key.shape + (f" #{key.occurrence}" if key.occurrence else "")),
            cell,
        ]
        for key, cell in cells
    ]
    intro = coverage_line(run, budget_s) + (
        " A replayed row is timed standalone, the PR's and the base's binaries of its "
        "kernels interleaved on this GPU, and judged by the same pair rule as the A/B."
    )
    return Block(REPLAY_TITLE, intro, REPLAY_HEADER, "llll", table)
