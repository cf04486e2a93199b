"""The sections of the markdown report, in reading order: what fails first (worst
first, then what to do and how to reproduce), then what moved and the context
(:mod:`zlbench.report.info`). Each is a :class:`zlbench.report.blocks.Block`.
"""

from __future__ import annotations

from zlbench.models import (
    FAILING_VERDICTS,
    GateVerdict,
    OpVerdict,
    Verdict,
)
from zlbench.report.ab import ab_block, accept_block, inconclusive_block, unmeasured_block
from zlbench.report.blocks import Block, change_block, op_label, reason_block
from zlbench.report.escape import md_code, md_fence, md_text
from zlbench.report.facts import (
    OpRows,
    ReportExtras,
    judged_on_ab,
    key_name,
    op_limit,
    op_names,
    op_rows,
    pct,
    rows_by_op,
    worst_first,
)
from zlbench.report.history import history_block
from zlbench.report.info import (
    chart,
    codegen,
    codegen_failed,
    counts,
    env_warning,
    environment,
    improvements,
    moves,
    near,
    not_confirmed,
    others,
    thresholds,
)
from zlbench.report.replay_text import deferred_block, replay_block
from zlbench.report.why import why_outro

LOG_LINES = 20
NEVER_MEASURED = "Never measured (time budget spent, or a systemic failure before they began)"


def _failing_ops(v: GateVerdict, verdict: Verdict) -> list[OpVerdict]:
    return [o for o in v.ops if o.verdict is verdict]


def regressions(v: GateVerdict, extras: ReportExtras) -> Block | None:
    rows = worst_first(r for r in v.rows if r.verdict is Verdict.REGRESSION)
    names = op_names(v)
    b = change_block(f"Regressed rows ({len(rows)}, worst first)", rows, names=names)
    if b is None:
        return None
    # the kernels verdict.json says the rows ran timed (gate with a codegen screen)
    b.outro = why_outro(rows, extras.explanations, names)
    b.decides = True
    return b


def aggregate(v: GateVerdict) -> Block | None:
    row_ops = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict in FAILING_VERDICTS}
    ops = [o for o in _failing_ops(v, Verdict.REGRESSION) if (o.repo, o.run_name) not in row_ops]
    if not ops:
        return None
    by_op, names = rows_by_op(v.rows), op_names(v)
    cells = [
        [
            op_label(o.repo, o.run_name, names),
            pct(o.judged_change),
            pct(op_limit(o, by_op)),
            md_text(o.reason),
        ]
        for o in ops
    ]
    title = f"Op aggregate regressions ({len(ops)})"
    intro = "The geometric mean of the op's rows crossed the op threshold; no single row did."
    header = ["op", "judged change (geomean)", "limit", "reason"]
    return Block(title, intro, header, "lrrl", cells, noun="ops", decides=True)


def failed_ops(v: GateVerdict) -> Block | None:
    ops = _failing_ops(v, Verdict.FAILED)
    if not ops:
        return None
    names = op_names(v)
    cells = [[op_label(o.repo, o.run_name, names), md_text(o.reason, 300)] for o in ops]
    title = f"Failed ops ({len(ops)})"
    return Block(title, "", ["op", "what happened"], "ll", cells, noun="ops", decides=True)


def fallbacks(v: GateVerdict) -> Block | None:
    rows = [r for r in v.rows if r.verdict is Verdict.FALLBACK]
    names = op_names(v)
    b = reason_block(f"Fallbacks ({len(rows)} rows)", rows, names) if rows else None
    with_rows = {(r.key.repo, r.key.run_name) for r in rows}
    op_level = [
        o for o in _failing_ops(v, Verdict.FALLBACK) if (o.repo, o.run_name) not in with_rows
    ]
    if not op_level:
        return b
    items = "\n".join(
        f"- {op_label(o.repo, o.run_name, names)}: {md_text(o.reason, 300)}" for o in op_level
    )
    if b is None:
        return Block(f"Fallbacks ({len(op_level)} ops)", items)
    b.outro = items
    return b


def missing(v: GateVerdict) -> Block | None:
    rows = [r for r in v.rows if r.verdict is Verdict.MISSING]
    return reason_block(f"Missing rows ({len(rows)})", rows, op_names(v))


def next_steps(v: GateVerdict) -> Block | None:
    if v.verdict == "PASS":
        return None
    regressed = [r for r in v.rows if r.verdict is Verdict.REGRESSION]
    baseline = v.baseline_dir or "BASELINE_DIR"
    steps = []
    if v.codegen is not None and v.codegen.failed:
        steps.append(
            f"**Kernels that no longer compile**: "
            f"{md_code(f'zlbench codegen --baseline {baseline}', 200)} rebuilds them on a "
            "CPU, no GPU needed; its codegen.md names each error."
        )
    if regressed:
        steps.append(
            "**Investigate**: re-measure an op with the command under *Reproduce*, once with "
            "this PR's compiler and once with the baseline's, and compare the two run dirs "
            f"(`zlbench compare A B`, or {md_code(f'zlbench compare {baseline} repro/RUN', 200)})."
        )
        steps.append(
            "**Accept**: if the slowdown is intended, record a new baseline with this "
            "compiler (`zlbench baseline refresh`, docs/baselines.md) or raise the op's "
            "threshold in the thresholds file (docs/thresholds.md)."
        )
    if any(r.confirmed is None and not judged_on_ab(r) for r in regressed):
        steps.append(
            "**Re-run**: rows marked *not re-measured* were judged once, without "
            "confirmation; re-running the gate job re-measures them."
        )
    failed = _failing_ops(v, Verdict.FAILED)
    if any(o.log_tail for o in failed):
        steps.append(
            "**Failed ops**: the log tails below end with the error; run.log is in the artifact."
        )
    elif failed:  # e.g. not timed because their kernels fail to compile: no log to show
        steps.append(
            "**Failed ops**: what happened to each is in *Failed ops* above (no log tail "
            "was recorded for them)."
        )
    if any(o.verdict is Verdict.FALLBACK for o in v.ops):
        steps.append(
            "**Fallbacks**: the replay found no pinned autotune config for a kernel; "
            "re-record the baseline if the kernel or its key changed on purpose."
        )
    if any(o.verdict is Verdict.MISSING for o in v.ops):
        steps.append("**Missing rows**: shapes the baseline measured and this run did not.")
    return Block("What to do next", "\n".join(f"- {s}" for s in steps)) if steps else None


def systemic(v: GateVerdict) -> Block | None:
    """Failures many ops share (batch.json 'systemic'): the reports lead with them."""
    if not v.systemic:
        return None
    lines = "\n".join(f"- {md_text(line, 400)}" for line in v.systemic)
    return Block(f"Systemic failures ({len(v.systemic)})", lines)


def not_measured(v: GateVerdict) -> Block | None:
    if not v.not_measured:
        return None
    intro = NEVER_MEASURED + "."
    names = op_names(v)
    cells = [[md_code(key_name(names, k))] for k in v.not_measured]
    title = f"Not measured ({len(v.not_measured)} ops)"
    return Block(title, intro, ["op"], "l", cells, noun="ops")


def _dtypes(o: OpVerdict, by_op: OpRows) -> str:
    """The dtypes of the op's failing rows, each once (``by_op``: ``rows_by_op``)."""
    bad = [r.key.dtype for r in op_rows(o, by_op) if r.verdict in FAILING_VERDICTS]
    return " ".join(dict.fromkeys(bad))


def reproduce(v: GateVerdict) -> Block | None:
    ops = [o for o in v.ops if o.verdict in FAILING_VERDICTS]  # every one: the headline's
    if not ops or not v.reproduce_template:
        return None
    intro = (
        "One command for every failing op: set `OP`, `REPO`, `RUN` and `DTYPES` from a row "
        "below and `FLAGGEMS_DIR` to the FlagGems checkout (`$ZLBENCH_FLAGGEMS_DIR`; "
        "vllm: `$ZLBENCH_FLAGGEMS_VLLM_DIR`). `OP` is the op as `zlbench run` takes it "
        "(with its test file where FlagGems has the op in several). Each op's full "
        "command is in verdict.json.\n\n" + md_fence([v.reproduce_template], "sh")
    )
    by_op, names = rows_by_op(v.rows), op_names(v)
    cells = [
        [
            op_label(o.repo, o.run_name, names),
            md_code(o.op),
            md_code(o.repo),
            md_code(o.run_name),
            md_code(_dtypes(o, by_op)),
            o.verdict.value,
        ]
        for o in ops
    ]
    header = ["op", "OP", "REPO", "RUN", "DTYPES", "verdict"]
    return Block(f"Reproduce ({len(ops)} ops)", intro, header, "llllll", cells, noun="ops")


def logs(v: GateVerdict) -> Block | None:
    ops = [o for o in v.ops if o.log_tail]
    if not ops:
        return None
    names = op_names(v)
    chunks = [
        f"{op_label(o.repo, o.run_name, names)} ({o.verdict.value}), last lines of run.log:\n\n"
        + md_fence(o.log_tail[-LOG_LINES:])
        for o in ops
    ]
    return Block("Logs of failed ops", chunks=chunks, noun="logs")


def _replay_blocks(v: GateVerdict, extras: ReportExtras) -> list[Block | None]:
    """The kernel replay's section and its deferred rows (issue 51), when it ran."""
    if extras.replay is None:
        return []
    names = op_names(v)
    # a replayed row the op path measured too (a sentinel's, an op timed anyway): the
    # judge kept the op path's verdict (gate.replay.apply_replay), its reason says so
    op_judged = [r.key for r in v.rows if r.ab is not None and r.ab.instrument != "kernel-replay"]
    return [
        replay_block(extras.replay, extras.replay_budget_s, names, op_judged),
        deferred_block(extras.replay, extras.replay_budget_s, names),
    ]


def blocks(v: GateVerdict, extras: ReportExtras) -> list[Block]:
    """Every section that has something to say, in reading order (an ERROR's:
    :func:`zlbench.report.error.error_blocks`)."""
    built = [
        env_warning(v),
        systemic(v),
        codegen_failed(v),
        inconclusive_block(v),
        unmeasured_block(v),
        regressions(v, extras),
        ab_block(v),
        *_replay_blocks(v, extras),
        accept_block(v),
        aggregate(v),
        failed_ops(v),
        not_measured(v),
        fallbacks(v),
        missing(v),
        next_steps(v),
        reproduce(v),
        moves(v),
        near(v),
        history_block(v, extras),  # issue 52: the results store's noise
        not_confirmed(v),
        improvements(v),
        thresholds(v),
        codegen(v, extras),
        chart(v),
        logs(v),
        counts(v),
        others(v),
        environment(v),
    ]
    return [b for b in built if b is not None]
