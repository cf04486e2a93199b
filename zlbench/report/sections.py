"""The sections of the markdown report, in reading order: what fails first (worst
first, then what to do and how to reproduce), then what moved, then the context.

A :class:`Block` renders whole: a table cut to its first ``cap`` rows is still a
table, a cut list of code blocks keeps each block closed, and a cut always ends
with a note saying how many were left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zlbench.models import FAILING_VERDICTS, EnvFinding, GateVerdict, OpVerdict, RowVerdict, Verdict
from zlbench.report.escape import md_code, md_fence, md_text, mermaid_label
from zlbench.report.facts import (
    NEAR,
    ReportExtras,
    confirmed_text,
    largest_moves,
    limit_of,
    near_threshold,
    nondefault_thresholds,
    pct,
    unconfirmed,
    us_pair,
    worst_first,
)

CHANGE_HEADER = [
    "op",
    "dtype",
    "shape",
    "FlagGems µs",
    "kernel time",
    "torch µs",
    "judged change",
    "limit",
    "confirmed",
]
LEGEND = (
    "_µs: baseline → current. kernel time: the FlagGems latency change before the "
    "machine-speed correction. judged change: after it, the number the gate judges "
    "(median of the samples when re-measured). limit: the judged change at the row's "
    "threshold. + = slower._"
)
CHART_OPS = 40
LOG_LINES = 20


def table(header: list[str], align: str, rows: list[list[str]]) -> str:
    """A markdown table; ``align`` has one letter a column: l (left) or r (right)."""
    sep = ["---:" if a == "r" else "---" for a in align]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, sep, *rows])


@dataclass
class Block:
    """One section: heading, text, an optional table, optional chunks (code blocks)."""

    title: str
    intro: str = ""
    header: list[str] = field(default_factory=list)
    align: str = ""
    rows: list[list[str]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    outro: str = ""
    noun: str = "rows"

    def render(self, cap: int | None) -> str:
        rows, chunks = self.rows[:cap], self.chunks[:cap]
        hidden = len(self.rows) - len(rows) + len(self.chunks) - len(chunks)
        parts = [f"### {self.title}", self.intro]
        if self.header:
            parts.append(table(self.header, self.align, rows))
        parts += chunks
        if hidden:
            parts.append(f"_… {hidden} more {self.noun} not shown here: see the full report._")
        parts.append(self.outro)
        return "\n\n".join(p for p in parts if p) + "\n"


def op_label(repo: str, name: str) -> str:
    return md_code(f"{repo}/{name}")


def change_row(r: RowVerdict) -> list[str]:
    occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
    return [
        op_label(r.key.repo, r.key.op),
        md_code(r.key.dtype),
        md_code(r.key.shape + occ),
        us_pair(r.baseline_us, r.current_us),
        pct(r.kernel_change),
        us_pair(r.baseline_torch_us, r.current_torch_us),
        pct(r.judged_change),
        pct(r.limit),
        confirmed_text(r),
    ]


def change_block(title: str, rows: list[RowVerdict], intro: str = "") -> Block | None:
    if not rows:
        return None
    return Block(title, intro, CHANGE_HEADER, "llllrlrrl", [change_row(r) for r in rows])


def reason_block(title: str, rows: list[RowVerdict]) -> Block | None:
    if not rows:
        return None
    cells = [
        [
            op_label(r.key.repo, r.key.op),
            md_code(r.key.dtype),
            md_code(r.key.shape),
            md_text(r.reason),
        ]
        for r in rows
    ]
    return Block(title, "", ["op", "dtype", "shape", "reason"], "llll", cells)


def _failing_ops(v: GateVerdict, verdict: Verdict) -> list[OpVerdict]:
    return [o for o in v.ops if o.verdict is verdict]


def regressions(v: GateVerdict, extras: ReportExtras) -> Block | None:
    rows = worst_first(r for r in v.rows if r.verdict is Verdict.REGRESSION)
    b = change_block(f"Regressed kernels ({len(rows)}, worst first)", rows)
    if b is not None and extras.explanations:
        seen = dict.fromkeys(f"{r.key.repo}/{r.key.run_name}" for r in rows)
        notes = [
            f"- {md_code(k)}: {md_text(extras.explanations[k], 300)}"
            for k in seen
            if k in extras.explanations
        ]
        b.outro = "\n".join(["Why, from the code-generation screen:", *notes]) if notes else ""
    return b


def aggregate(v: GateVerdict) -> Block | None:
    row_ops = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict in FAILING_VERDICTS}
    ops = [o for o in _failing_ops(v, Verdict.REGRESSION) if (o.repo, o.run_name) not in row_ops]
    if not ops:
        return None
    cells = [
        [
            op_label(o.repo, o.run_name),
            pct(o.judged_change),
            pct(limit_of(o.threshold)),
            md_text(o.reason),
        ]
        for o in ops
    ]
    title = f"Op aggregate regressions ({len(ops)})"
    intro = "The geometric mean of the op's rows crossed the op threshold; no single row did."
    header = ["op", "judged change (geomean)", "limit", "reason"]
    return Block(title, intro, header, "lrrl", cells, noun="ops")


def failed_ops(v: GateVerdict) -> Block | None:
    ops = _failing_ops(v, Verdict.FAILED)
    if not ops:
        return None
    cells = [[op_label(o.repo, o.run_name), md_text(o.reason, 300)] for o in ops]
    title = f"Failed ops ({len(ops)})"
    return Block(title, "", ["op", "what happened"], "ll", cells, noun="ops")


def fallbacks(v: GateVerdict) -> Block | None:
    rows = [r for r in v.rows if r.verdict is Verdict.FALLBACK]
    b = reason_block(f"Fallbacks ({len(rows)} rows)", rows) if rows else None
    with_rows = {(r.key.repo, r.key.run_name) for r in rows}
    op_level = [
        o for o in _failing_ops(v, Verdict.FALLBACK) if (o.repo, o.run_name) not in with_rows
    ]
    if not op_level:
        return b
    items = "\n".join(
        f"- {op_label(o.repo, o.run_name)}: {md_text(o.reason, 300)}" for o in op_level
    )
    if b is None:
        return Block(f"Fallbacks ({len(op_level)} ops)", items)
    b.outro = items
    return b


def missing(v: GateVerdict) -> Block | None:
    rows = [r for r in v.rows if r.verdict is Verdict.MISSING]
    return reason_block(f"Missing rows ({len(rows)})", rows)


def next_steps(v: GateVerdict) -> Block | None:
    if v.verdict == "PASS":
        return None
    if v.verdict == "ERROR":
        steps = [
            "Nothing was judged: fix what the line above names and run the gate again.",
            "An environment mismatch means the results come from another machine type, "
            "FlagGems commit, timing mode or shape file than the baseline; run on the "
            "baseline's, or judge anyway with `--allow-env-mismatch` (every report says so).",
        ]
        return Block("What to do next", "\n".join(f"- {s}" for s in steps))
    regressed = [r for r in v.rows if r.verdict is Verdict.REGRESSION]
    steps = []
    if regressed:
        steps.append(
            "**Investigate**: re-measure an op with the command under *Reproduce*, once with "
            "this PR's compiler and once with the baseline's, and compare the two run dirs "
            "(`zlbench compare A B`, or `zlbench compare BASELINE_DIR repro/RUN`)."
        )
        steps.append(
            "**Accept**: if the slowdown is intended, record a new baseline with this "
            "compiler (`zlbench baseline refresh`, docs/baselines.md) or raise the op's "
            "threshold in the thresholds file (docs/thresholds.md)."
        )
    if any(r.confirmed is None for r in regressed):
        steps.append(
            "**Re-run**: rows marked *not re-measured* were judged once, without "
            "confirmation; re-running the gate job re-measures them."
        )
    if _failing_ops(v, Verdict.FAILED):
        steps.append(
            "**Failed ops**: the log tails below end with the error; run.log is in the artifact."
        )
    if any(o.verdict is Verdict.FALLBACK for o in v.ops):
        steps.append(
            "**Fallbacks**: the replay found no pinned autotune config for a kernel; "
            "re-record the baseline if the kernel or its key changed on purpose."
        )
    if any(o.verdict is Verdict.MISSING for o in v.ops):
        steps.append("**Missing rows**: shapes the baseline measured and this run did not.")
    return Block("What to do next", "\n".join(f"- {s}" for s in steps)) if steps else None


def _dtypes(v: GateVerdict, o: OpVerdict) -> str:
    bad = [
        r.key.dtype
        for r in v.rows
        if (r.key.repo, r.key.run_name) == (o.repo, o.run_name) and r.verdict in FAILING_VERDICTS
    ]
    return " ".join(dict.fromkeys(bad))


def reproduce(v: GateVerdict) -> Block | None:
    ops = [o for o in v.ops if o.verdict in FAILING_VERDICTS and o.reproduce]
    if not ops or not v.reproduce_template:
        return None
    intro = (
        "One command for every failing op: set `OP`, `REPO`, `RUN` and `DTYPES` from a row "
        "below and `FLAGGEMS_DIR` to the FlagGems checkout (`$ZLBENCH_FLAGGEMS_DIR`; "
        "vllm: `$ZLBENCH_FLAGGEMS_VLLM_DIR`). Each op's full command is in verdict.json.\n\n"
        + md_fence([v.reproduce_template], "sh")
    )
    cells = [
        [
            md_code(o.op),
            md_code(o.repo),
            md_code(o.run_name),
            md_code(_dtypes(v, o)),
            o.verdict.value,
        ]
        for o in ops
    ]
    header = ["OP", "REPO", "RUN", "DTYPES", "verdict"]
    return Block(f"Reproduce ({len(ops)} ops)", intro, header, "lllll", cells, noun="ops")


def logs(v: GateVerdict) -> Block | None:
    ops = [o for o in v.ops if o.log_tail]
    if not ops:
        return None
    chunks = [
        f"{op_label(o.repo, o.run_name)} ({o.verdict.value}), last lines of run.log:\n\n"
        + md_fence(o.log_tail[-LOG_LINES:])
        for o in ops
    ]
    return Block("Logs of failed ops", chunks=chunks, noun="logs")


def moves(v: GateVerdict) -> Block | None:
    return change_block("Largest moves (slower, then faster)", largest_moves(v.rows), LEGEND)


def near(v: GateVerdict) -> Block | None:
    rows = near_threshold(v.rows)
    intro = f"Passing rows whose judged change reached {NEAR:.0%} of their limit."
    return change_block(f"Near the threshold ({len(rows)})", rows, intro)


def not_confirmed(v: GateVerdict) -> Block | None:
    rows = unconfirmed(v.rows)
    intro = "Flagged on the first measurement; the median of the re-measures passed."
    return change_block(f"Flagged but not confirmed ({len(rows)})", rows, intro)


def improvements(v: GateVerdict) -> Block | None:
    rows = [r for r in v.rows if r.verdict is Verdict.IMPROVEMENT]
    rows.sort(key=lambda r: r.judged_change if r.judged_change is not None else 0)
    return change_block(f"Improvements ({len(rows)}: the baseline may be stale)", rows)


def thresholds(v: GateVerdict) -> Block | None:
    if v.thresholds is None:
        return None
    src = md_text(v.thresholds_source or "baseline manifest", 200)
    diff = nondefault_thresholds(v.thresholds)
    if not diff:
        return Block(
            "Thresholds",
            f"zlbench's defaults (from {src}): estimator `{v.thresholds.estimator}`, "
            f"{v.thresholds.default:.0%} per row, floored at "
            f"{v.thresholds.noise_multiplier}× the baseline row's noise.",
        )
    lines = "\n".join(f"- {md_text(d, 200)}" for d in diff)
    return Block("Thresholds (not the defaults)", f"In force, from {src}:\n\n{lines}")


def codegen(extras: ReportExtras) -> Block | None:
    if extras.codegen is None:
        return None
    changed, total = extras.codegen
    return Block("Generated code", f"{changed} of {total} kernels changed their generated code.")


def chart(v: GateVerdict) -> Block | None:
    ops = [o for o in v.ops if o.judged_change is not None]
    if not ops:
        return None
    shown = sorted(ops, key=lambda o: -abs(o.judged_change))[:CHART_OPS]
    shown.sort(key=lambda o: -o.judged_change)
    labels = ", ".join(mermaid_label(o.run_name) for o in shown)
    values = ", ".join(f"{o.judged_change * 100:.2f}" for o in shown)
    lines = [
        "xychart-beta",
        '    title "Judged change per op, % (+ = slower)"',
        f"    x-axis [{labels}]",
        '    y-axis "judged change %"',
        f"    bar [{values}]",
    ]
    more = f" (the {CHART_OPS} largest of {len(ops)})" if len(ops) > CHART_OPS else ""
    return Block(f"Change per op{more}", md_fence(lines, "mermaid"))


def _env_row(f: EnvFinding) -> list[str]:
    if f.mismatch:
        status = "**mismatch**"
    elif f.baseline and f.current and f.baseline != f.current:
        status = "differs (informational)"
    else:
        status = ""
    return [md_text(f.field), md_code(f.baseline or "—"), md_code(f.current or "—"), status]


def environment(v: GateVerdict) -> Block:
    cur, base = v.current_env, v.baseline_env

    def compiler(e) -> str:
        s = f"{md_code(e.triton_dist or 'unknown')} {md_code(e.triton_version or '')}"
        return s + (f", FlagTree commit {md_code(e.flagtree_commit)}" if e.flagtree_commit else "")

    outro = f"Compiler under test: {compiler(cur)} (baseline: {compiler(base)})."
    rows = [_env_row(f) for f in v.environment]
    return Block("Environment", "", ["field", "baseline", "results", ""], "llll", rows, outro=outro)


def env_warning(v: GateVerdict) -> Block | None:
    bad = [f for f in v.environment if f.mismatch]
    if not bad:
        return None
    if v.allow_env_mismatch:
        head = "> [!WARNING]\n> Judged despite an environment mismatch (`--allow-env-mismatch`):"
    else:
        head = "> [!CAUTION]\n> Not judged: the environment differs from the baseline's:"
    items = [
        f"> - {md_text(f.field)}: baseline {md_code(f.baseline or '—')}, "
        f"results {md_code(f.current or '—')}"
        for f in bad
    ]
    return Block("Environment mismatch", "\n".join([head, *items]))


def others(v: GateVerdict) -> Block | None:
    new = sum(1 for r in v.rows if r.verdict is Verdict.NEW)
    skipped = sum(1 for r in v.rows if r.verdict is Verdict.SKIPPED)
    if not (new or skipped):
        return None
    text = f"{new} new row(s) not in the baseline; {skipped} skipped (dismissed or unsupported)."
    return Block("Not judged", text)


def counts(v: GateVerdict) -> Block | None:
    ops = {k: sum(1 for o in v.ops if o.verdict is k) for k in Verdict}
    shown = [k for k in Verdict if v.counts.get(k.value) or ops[k]]
    if not shown:
        return None
    cells = [
        ["rows", *(str(v.counts.get(k.value, 0)) for k in shown)],
        ["ops", *(str(ops[k]) for k in shown)],
    ]
    return Block("Counts", "", ["", *(k.value for k in shown)], "l" + "r" * len(shown), cells)


def blocks(v: GateVerdict, extras: ReportExtras) -> list[Block]:
    """Every section that has something to say, in reading order."""
    if v.verdict == "ERROR":  # nothing was judged: no judged numbers
        built = [env_warning(v), failed_ops(v), next_steps(v), logs(v), counts(v), environment(v)]
        return [b for b in built if b is not None]
    built = [
        env_warning(v),
        regressions(v, extras),
        aggregate(v),
        failed_ops(v),
        fallbacks(v),
        missing(v),
        next_steps(v),
        reproduce(v),
        moves(v),
        near(v),
        not_confirmed(v),
        improvements(v),
        thresholds(v),
        codegen(extras),
        chart(v),
        logs(v),
        counts(v),
        others(v),
        environment(v),
    ]
    return [b for b in built if b is not None]
