"""The codegen screen in the verdict and the reports (docs/codegen.md, "Gate
integration"): :func:`screen_evidence` gives the judge (:mod:`zlbench.gate.decide`)
what the screen proved (a kernel that stopped compiling fails the gate, sentinels whose
kernels are identical); after judging :func:`explain` adds each explained row's
kernels, and :func:`report_extras` the reports' parts (the explanations, the IR diffs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from zlbench.codegen.screen import SCREEN_MD
from zlbench.codegen.select import EXPLAINED, explain_row, row_notes
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.gate.decide import Evidence, ScreenEvidence, decide
from zlbench.history.record import kernel_pairs
from zlbench.models import (
    UNPROVEN_CLASSES,
    CodegenClass,
    GateVerdict,
    KernelNote,
    KernelScreen,
    RowVerdict,
    Verdict,
    resolve_inside,
)
from zlbench.protocol.layout import op_key
from zlbench.report.codegen import row_explanation, screen_names, setup_line
from zlbench.report.escape import one_line
from zlbench.report.facts import ReportExtras, op_names
from zlbench.workflow.codegen_plan import identical_sentinels
from zlbench.workflow.codegen_step import CodegenStep, not_timed_line

IR_DIFF_LIMIT = 200_000  # characters of IR diff per op in report.html


def _noted(r: RowVerdict, notes: list[KernelNote]) -> bool:
    """Rows that carry their kernels in verdict.json: the explained verdicts and any
    row that launched a kernel the screen did not prove identical."""
    return r.verdict in EXPLAINED or any(n.status in UNPROVEN_CLASSES for n in notes)


def screen_evidence(step: CodegenStep | None, rows: list[RowVerdict]) -> ScreenEvidence | None:
    """What the screen proved that changes verdicts (:mod:`zlbench.gate.decide`): the
    ops held back for compile failures, each of their rows' own failing kernel, the
    compile lead, the sentinels whose kernels are identical. None without a screen."""
    if step is None:
        return None
    failures: dict = {}
    if step.held_back and step.screen is not None:
        held = [r.key for r in rows if op_key(r.key.repo, r.key.run_name) in step.held_back]
        for key, notes in row_notes(held, step.screen, step.diff_prefix).items():
            own = [n for n in notes if n.status is CodegenClass.FAILED]
            if own:
                failures[key] = not_timed_line(own[0].name, own[0].config, own[0].error)
    return ScreenEvidence(
        summary=step.summary,
        held_back=dict(step.held_back),
        row_failures=failures,
        compile_lead=compile_lead(step) if step.summary.failed else "",
        identical_sentinels=identical_sentinels(step),
    )


def explain(v: GateVerdict, step: CodegenStep | None) -> GateVerdict:
    """``v`` with each explained row's kernels (``codegen``) and its explanation in its
    reason, every row's ``kernel_code`` (no verdict changes: the judge decided them). A
    row of an op held back for a compile failure already names its failing kernel."""
    if step is None or step.screen is None:
        return v
    notes = row_notes([r.key for r in v.rows], step.screen, step.diff_prefix)
    rows = []
    for r in v.rows:
        if op_key(r.key.repo, r.key.run_name) not in step.held_back:
            r = explain_row(r, notes[r.key])
        noted = _noted(r, notes[r.key])
        code = {"kernel_code": kernel_pairs(notes[r.key])}
        rows.append(r.model_copy(update={"codegen": notes[r.key], **code} if noted else code))
    return v.model_copy(update={"rows": rows})


def apply_screen(v: GateVerdict, step: CodegenStep | None) -> GateVerdict:
    """``v`` decided on the screen's evidence (compile failures, no sentinels), then
    explained: the codegen summary, each explained row's kernels and explanation; the
    rows of the ops held back for compile failures FAILED with that failure as reason;
    a kernel that no longer compiles fails the gate: FAIL, exit 1, led by
    :func:`compile_lead`. The screen alone: a gate decides on all of its evidence at
    once."""
    if step is None:
        return v
    ev = screen_evidence(step, v.rows)
    assert ev is not None
    ev = replace(ev, identical_sentinels=frozenset())
    return explain(decide(v, Evidence(screen=ev)), step)


def compile_lead(step: CodegenStep) -> str:
    """The verdict's lead when kernels fail to compile, one line: how many, the error,
    where (kernels, ops not timed, the screen's report)."""
    kernels = step.screen.failed() if step.screen is not None else []
    n = len(step.summary.failed)
    errors = Counter(_error(k) for k in kernels)
    error, _ = errors.most_common(1)[0] if errors else ("compile failed", 0)
    other = f" (+{len(errors) - 1} other error(s))" if len(errors) > 1 else ""
    names = list(dict.fromkeys(k.name for k in kernels))
    functions = f"{len(names)} kernel functions: " if len(names) != n else ""
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    where = [functions + names[0] + more] * bool(names)
    if step.held_back:
        where.append(f"{len(step.held_back)} op(s) not timed, their rows FAILED")
    if step.summary.screen_file:
        where.append(str(Path(step.summary.screen_file).with_name(SCREEN_MD)))
    text = f"{n} kernel(s) the baseline compiled fail to compile: {error}{other}"
    return one_line(text + (f" ({'; '.join(where)})" if where else ""), 500)


def _error(k: KernelScreen) -> str:
    return one_line((k.error or "compile failed").removeprefix("compile failed: "), 200)


# --------------------------------------------------------------------------- the reports


def _op_notes(rows: Iterable[RowVerdict], verdicts: frozenset) -> dict[str, list[KernelNote]]:
    """Op key -> the kernels of its rows with these verdicts, each once."""
    out: dict[str, dict[str, KernelNote]] = {}
    for r in rows:
        if r.verdict in verdicts and r.codegen:
            for n in r.codegen:
                out.setdefault(op_key(r.key.repo, r.key.run_name), {}).setdefault(n.kernel_id, n)
    return {k: list(v.values()) for k, v in out.items()}


def report_extras(v: GateVerdict, step: CodegenStep | None, artifact_url: str) -> ReportExtras:
    """The reports' extras: the run's link, the screen's counts, per failing op its
    codegen explanation and (for report.html) the IR diffs of its changed kernels."""
    extras = ReportExtras(artifact_url=artifact_url)
    if step is None or step.screen is None:
        return extras
    extras.codegen = (step.summary.changed, step.summary.kernels)
    names = screen_names(step.screen) | op_names(v)  # spelled as the report spells its ops
    setup = TimedKernels.of(step.screen).setup_changed()
    extras.setup_changed = [setup_line(k, names) for k in setup]
    regressed = _op_notes(v.rows, frozenset({Verdict.REGRESSION}))
    extras.explanations = {k: row_explanation(ns) for k, ns in regressed.items()}
    explained = _op_notes(v.rows, EXPLAINED)
    extras.ir_diffs = {k: t for k, ns in explained.items() if (t := _diffs(step, ns))}
    return extras


def _diffs(step: CodegenStep, notes: list[KernelNote]) -> str:
    """The diff files of ``notes`` (read from the screen's dir), up to IR_DIFF_LIMIT."""
    texts = []
    left = IR_DIFF_LIMIT + 1  # characters still wanted: never read a whole huge file
    for n in notes:
        if not n.diff_file or step.dir is None or left <= 0:
            continue
        try:  # a path from an artifact: read only inside the screen's dir
            path = resolve_inside(step.dir, n.diff_file.removeprefix(step.diff_prefix))
            if not path.is_file():  # a FIFO would hang the report
                continue
            with path.open(encoding="utf-8", errors="replace") as f:
                texts.append(f.read(left))
            left -= len(texts[-1]) + 1
        except (OSError, ZlbenchError):
            continue
    text = "\n".join(texts)
    if len(text) > IR_DIFF_LIMIT:
        text = text[:IR_DIFF_LIMIT] + "\n… (cut: the whole diff is in the codegen/diffs/ dir)\n"
    return text
