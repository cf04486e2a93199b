"""The reports of an ERROR verdict: the gate could not judge (an environment that
differs from the baseline's, results that hold another op set or no row, a batch
that measured nothing), so every report says what went wrong and what to do, first
and only (docs/reports.md, "An ERROR"): no verdict counts, no geomean, no chart, no
table of rows, and junit.xml holds one error testcase.

* :func:`unjudged`: the verdict as written for an ERROR (verdict.json too): its
  reason, inputs, environment findings, the batch's notes and the ops that failed,
  without the rows and counts of a judgement that did not happen;
* :func:`error_header` and :func:`error_blocks`: report.md and comment.md;
* :func:`error_steps`: what to do, in plain text (every medium).

Pure: returns strings and models. Every artifact string goes through
:mod:`zlbench.report.escape` (the HTML template autoescapes).
"""

from __future__ import annotations

from zlbench.gate.aggregate import lead_of
from zlbench.models import GateVerdict, Verdict
from zlbench.report.blocks import Block
from zlbench.report.escape import md_code, md_text
from zlbench.report.facts import compiler_line, key_name, op_names
from zlbench.report.info import codegen_failed, env_warning
from zlbench.report.sections import NEVER_MEASURED, failed_ops, logs, systemic

NAMED = 20  # unmeasured ops named in an ERROR report (the rest counted)


def unjudged(v: GateVerdict) -> GateVerdict:
    """An ERROR verdict without what a judgement would have made: no rows, no counts,
    no machine-speed correction, no markers; of the ops only those that FAILED (their
    log tails say why nothing was measured). Any other verdict is returned as is."""
    if v.verdict != "ERROR":
        return v
    failed = [o for o in v.ops if o.verdict is Verdict.FAILED]
    codegen = v.codegen
    if codegen is not None:  # what no longer compiles stays; the timing plan is moot
        codegen = codegen.model_copy(update={"not_timed": {}, "over_budget": {}})
    update = {
        "rows": [],
        "counts": {},
        "ops": failed,
        "machine_speed": [],
        "markers": [],
        "drift": [],
        "codegen": codegen,
    }
    return v.model_copy(update=update)


def reason(v: GateVerdict) -> str:
    """Why the gate judged nothing: the ERROR's lead, plain text."""
    return lead_of(v.summary, "ERROR")


def error_steps(v: GateVerdict) -> list[str]:
    """What to do about an ERROR, plain text (the caller escapes nothing: no artifact
    string is in it), most likely first."""
    steps = []
    mismatched = [f.field for f in v.environment if f.mismatch]
    if v.gpu_difference is not None and not v.gpu_difference.accepted:
        steps.append(
            "This runner is another GPU than the baseline's: record a baseline on it "
            "(the command is in the line above), or judge on a runner of the baseline's GPU."
        )
    if mismatched:
        steps.append(
            "The results were measured in another environment than the baseline "
            f"({', '.join(mismatched)} differ): measure on the baseline's (same GPU model, "
            "FlagGems commit, timing and shape file), gate against a baseline recorded in "
            "this one, or judge anyway with --allow-env-mismatch (every report then says so)."
        )
    if any(o.log_tail for o in v.ops if o.verdict is Verdict.FAILED) or v.systemic:
        steps.append(
            "Ops failed before anything was measured: the failure is named above and the "
            "log tails below end with it; fix it and run the gate again."
        )
    steps.append(
        "Nothing was judged (no row passed or failed; exit code 2): fix what the first "
        "line names and run the gate again."
    )
    return steps


def error_header(v: GateVerdict, marker: str, icon: str) -> str:
    """report.md's head for an ERROR: the title (after ``marker``, the comment's, and
    ``icon``), the reason, the inputs, the compilers."""
    lines = [
        marker,
        f"## {icon} zlbench gate: ERROR (nothing judged)",
        "",
        md_text(reason(v), 1200),
        "",
        f"Baseline {md_code(v.baseline, 80)} ({md_code(v.baseline_dir, 120)}) · results "
        f"{md_code(v.results_dir, 120)}"
        + (f" · {md_text(v.generated, 40)}" if v.generated else ""),
        "",
        md_text(compiler_line(v), 600),
    ]
    return "\n".join(lines) + "\n"


def _not_measured(v: GateVerdict) -> Block | None:
    if not v.not_measured:
        return None
    names = op_names(v)
    shown = ", ".join(md_code(key_name(names, k)) for k in v.not_measured[:NAMED])
    more = len(v.not_measured) - NAMED
    text = f"{NEVER_MEASURED}: "
    text += shown + (f" and {more} more." if more > 0 else ".")
    return Block(f"Not measured ({len(v.not_measured)} ops)", text)


def error_blocks(v: GateVerdict) -> list[Block]:
    """The sections of an ERROR report, in reading order: what went wrong (the
    mismatched fields, the systemic failures, the kernels that no longer compile, the
    failed ops), what to do, then the failed ops' log tails."""
    v = unjudged(v)
    steps = Block("What to do", "\n".join(f"- {md_text(s, 600)}" for s in error_steps(v)))
    built = [env_warning(v), systemic(v), codegen_failed(v), failed_ops(v), _not_measured(v)]
    built += [steps, logs(v)]
    return [b for b in built if b is not None]
