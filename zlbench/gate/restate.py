"""Restate a verdict after its rows were re-judged (A/B, accept list): the ops'
verdicts, the counts, the summary line, PASS/FAIL and the exit code (pure).

An op keeps what only the op knew (a failure, an op-level fallback, a missing,
new or skipped op); its other verdicts come from its rows again, and its
geomean is taken over the rows' judged ratios (the paired ones for rows
measured A/B, 1.0 for a row the A/B judged within its floor; accepted rows left
out) against the op's threshold (the paired threshold when every judged row was
measured A/B). The rules (the worst verdict, the geomean, PASS/FAIL/ERROR and the
exit code) are :mod:`zlbench.gate.aggregate`'s, as for the first verdict.
"""

from __future__ import annotations

import shlex
from collections import Counter

from zlbench.gate.aggregate import (
    JUDGED,
    OP_LEVEL,
    gate_outcome,
    geomean_reason,
    lead_of,
    op_outcome,
    rows_reason,
    screened,
    summary_line,
)
from zlbench.gate.numbers import inverse_change
from zlbench.gate.verdict import reproduce_command, timing_from_words
from zlbench.models import FAILING_VERDICTS, GateVerdict, OpVerdict, RowVerdict, Verdict


def _judged(rows: list[RowVerdict]) -> list[RowVerdict]:
    return [
        r
        for r in rows
        if r.verdict in JUDGED and r.ratio is not None and not (r.accepted and r.accepted.applied)
    ]


def _ratio(r: RowVerdict) -> float | None:
    """A row's ratio in its op's geomean: the paired one when measured A/B, 1.0 where
    the A/B judged it within its floor (gate.paired.within_floor: unchanged, as for the
    row), else the screen's."""
    if r.ab is None or r.ab.ratio is None:
        return r.ratio
    return 1.0 if r.ab.within_floor else r.ab.ratio


def restate_op(op: OpVerdict, rows: list[RowVerdict]) -> OpVerdict:
    judged = _judged(rows)
    ratios = [x for r in judged if (x := _ratio(r)) is not None]
    paired = bool(judged) and all(r.ab is not None and r.ab.ratio is not None for r in judged)
    t = judged[0].ab.threshold if paired and judged[0].ab else op.threshold
    own = {op.verdict} & OP_LEVEL
    out = op_outcome((r.verdict for r in rows), own, ratios, t)
    verdict, gm = out.verdict, out.geomean
    # an A/B re-judged the op: its screen's reason (e.g. the screen's geomean) is stale
    kept = verdict is op.verdict and (not paired or verdict in OP_LEVEL)
    reason = op.reason if kept else ""
    if not reason and verdict is not Verdict.PASS:
        geo = geomean_reason(gm, t, paired) if out.geomean_regressed else ""
        counted = rows_reason(rows, verdict)
        reason = counted or geo
        if counted and paired and geo and verdict is Verdict.REGRESSION:
            reason += f"; {geo}"  # what the A/B judged, not the screen
    if verdict is Verdict.PASS and any(r.ab and r.ab.inherited for r in rows):
        reason = next(r.reason for r in rows if r.ab and r.ab.inherited)
    update = {"verdict": verdict, "reason": reason, "geomean_ratio": gm, "threshold": t}
    update["judged_change"] = inverse_change(gm)
    if verdict not in FAILING_VERDICTS:
        update["reproduce"] = None
    return op.model_copy(update=update)


def restate(v: GateVerdict, rows: list[RowVerdict], **fields) -> GateVerdict:
    """``v`` with ``rows`` (same keys, re-judged) and every op, count and line that
    follows from them; ``fields`` set further GateVerdict fields (ab, accept...).
    An ERROR stays an ERROR."""
    by_op: dict[tuple[str, str], list[RowVerdict]] = {}
    for r in rows:
        by_op.setdefault((r.key.repo, r.key.run_name), []).append(r)
    ops = [restate_op(o, by_op.get((o.repo, o.run_name), [])) for o in v.ops]
    ops = [_with_reproduce(v, o, by_op.get((o.repo, o.run_name), [])) for o in ops]
    counts = Counter(r.verdict.value for r in rows)
    verdict, code = gate_outcome(ops, error=v.verdict == "ERROR")
    why = lead_of(v.summary, "ERROR") if verdict == "ERROR" else ""
    codegen = fields.get("codegen", v.codegen)
    update = {
        "rows": rows,
        "ops": ops,
        "counts": {x.value: counts[x.value] for x in Verdict if counts[x.value]},
        "verdict": verdict,
        "exit_code": code,
        "summary": summary_line(verdict, why, counts, ops, *screened(codegen), rows=rows),
    }
    return v.model_copy(update=update | fields)


def _with_reproduce(v: GateVerdict, op: OpVerdict, rows: list[RowVerdict]) -> OpVerdict:
    """An op that fails only after the re-judging (e.g. its A/B regressed) gets the
    ``zlbench run`` command every failing op has, from the verdict's template."""
    if op.verdict not in FAILING_VERDICTS or op.reproduce or not v.reproduce_template:
        return op
    words = shlex.split(v.reproduce_template)

    def after(flag: str) -> str | None:
        return words[words.index(flag) + 1] if flag in words[:-1] else None

    timing, shapes = after("--mode"), after("--shape-file")
    root = v.baseline_dir.rstrip("/") + "/"
    shape_file = shapes[len(root) :] if shapes and shapes.startswith(root) else None
    dtypes = list(dict.fromkeys(r.key.dtype for r in rows if r.verdict in FAILING_VERDICTS))
    how = timing_from_words(words)
    command = reproduce_command(op, dtypes, timing or "", v.baseline_dir, shape_file, how)
    return op.model_copy(update={"reproduce": command})
