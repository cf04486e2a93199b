"""The sections of the markdown report after the failures: what moved (largest
moves, rows near their threshold, unconfirmed flags, improvements), the
thresholds in force, the code-generation summary, the chart and the environment.
Built from :class:`zlbench.report.blocks.Block` like the failure sections."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from zlbench.gate.numbers import counted
from zlbench.models import EnvFinding, GateVerdict, OpVerdict, Verdict
from zlbench.report.blocks import LEGEND, Block, change_block
from zlbench.report.codegen import SETUP_CHANGED
from zlbench.report.escape import md_code, md_fence, md_text, mermaid_label
from zlbench.report.facts import (
    NEAR,
    ReportExtras,
    improved,
    key_name,
    largest_moves,
    limit_of,
    name_of,
    near_threshold,
    nondefault_thresholds,
    op_limit,
    op_names,
    pct,
    rows_by_op,
    unconfirmed,
)

CHART_OPS = 15  # bars per chart: labels stay readable
CHART_LABEL = 20  # characters of a chart label


def moves(v: GateVerdict) -> Block | None:
    rows = largest_moves(v.rows)
    return change_block("Largest moves (rows: slower, then faster)", rows, LEGEND, op_names(v))


def near(v: GateVerdict) -> Block | None:
    rows = near_threshold(v.rows)
    intro = f"Passing rows whose judged change reached {NEAR:.0%} of their limit, not past it."
    title = f"Near the threshold ({counted(len(rows), 'row')})"
    return change_block(title, rows, intro, op_names(v))


def not_confirmed(v: GateVerdict) -> Block | None:
    rows = unconfirmed(v.rows)
    intro = "Flagged on the first measurement; the median of the re-measures passed."
    title = f"Flagged but not confirmed ({counted(len(rows), 'row')})"
    return change_block(title, rows, intro, op_names(v))


def improvements(v: GateVerdict) -> Block | None:
    rows = improved(v.rows)
    title = f"Improved rows ({len(rows)}: the baseline may be stale)"
    return change_block(title, rows, names=op_names(v))


def thresholds(v: GateVerdict) -> Block | None:
    if v.thresholds is None:
        return None
    src = md_text(v.thresholds_source or "baseline manifest", 200)
    diff = nondefault_thresholds(v.thresholds)
    if not diff:
        return Block(
            "Thresholds",
            f"zlbench's defaults (from {src}): estimator `{v.thresholds.estimator}`, "
            f"{v.thresholds.default:.0%} per row (a limit of {pct(limit_of(v.thresholds.default))} "
            "in judged change: the legend of *Largest moves* says why), floored at "
            f"{v.thresholds.noise_multiplier}× the baseline row's noise.",
        )
    lines = "\n".join(f"- {md_text(d, 200)}" for d in diff)
    return Block("Thresholds (not the defaults)", f"In force, from {src}:\n\n{lines}")


def _no_compile(v: GateVerdict) -> str:
    """``; 61 no longer compile (above)`` when kernels fail to compile ("" otherwise): a
    screen whose kernels all fail changed none of them, which alone reads as a pass."""
    n = len(v.codegen.failed) if v.codegen is not None else 0
    return f"; {n} no longer compile{'s' if n == 1 else ''} (above)" if n else ""


def codegen(v: GateVerdict, extras: ReportExtras) -> Block | None:
    """The codegen screen's counts (or why there is none) and, with ``--time
    changed``, the ops not timed with the proof that their kernels are unchanged."""
    cg = v.codegen
    if extras.codegen is None and cg is None:
        return None
    names = op_names(v)
    said = []
    if extras.codegen is not None:
        changed, total = extras.codegen
        said.append(f"{changed} of {total} kernels changed their generated code{_no_compile(v)}.")
    if cg is not None and cg.screen_file:
        said.append(f"Screen: {md_code(cg.screen_file, 200)} (`zlbench explain` per op).")
    if cg is not None and cg.note:
        said.append(md_text(cg.note, 300) + ".")
    intro = " ".join(said)
    if extras.setup_changed:
        intro += f"\n\n{SETUP_CHANGED} ({len(extras.setup_changed)}):\n\n"
        intro += "\n".join(f"- {md_text(line, 300)}" for line in extras.setup_changed)
    if cg is not None and cg.over_budget:
        intro += (
            f"\n\n`--time-budget`: {len(cg.over_budget)} op(s) whose timed kernels changed "
            "were not timed (beyond the GPU budget) and are not judged:\n\n"
        )
        intro += "\n".join(
            f"- {md_code(key_name(names, k))}: {md_text(why, 240)}"
            for k, why in sorted(cg.over_budget.items())
        )
    if cg is None or not cg.not_timed:
        return Block("Generated code", intro)
    intro += (
        f"\n\n`--time changed`: {len(cg.not_timed)} op(s) not timed: every kernel they "
        "launched rebuilt identical, and every row names its kernels."
    )
    cells = [
        [md_code(key_name(names, k)), md_text(why, 200)] for k, why in sorted(cg.not_timed.items())
    ]
    return Block("Generated code", intro, ["op not timed", "proof"], "ll", cells, noun="ops")


# ``name [config]: error`` (zlbench.workflow.codegen.failed_line)
_FAILED_LINE = re.compile(r"^(?P<kernel>[^\[:]+(?: \[[^\]]*\])?): (?P<error>.+)$")
FAILED_MAX = 200  # characters of a kernel's line when the error is said once


def _common_error(lines: list[str]) -> str | None:
    """The error every line of ``lines`` ends with (a line cut short with … counts when
    it is a prefix of it), or None when they differ or a line has another form."""
    found = [_FAILED_LINE.match(line) for line in lines]
    if len(lines) < 2 or not all(found):
        return None
    errors = [m.group("error") for m in found]
    whole = max(errors, key=len)
    same = all(e == whole or (e.endswith("…") and whole.startswith(e[:-1])) for e in errors)
    return whole if same and not whole.endswith("…") else None


def codegen_failed(v: GateVerdict) -> Block | None:
    """Kernels the baseline compiled that the compiler under test fails to: they fail
    the gate, whatever the timing says. When they all fail with one error (a compiler
    that builds nothing), the error is said once and each line names its kernel."""
    if v.codegen is None or not v.codegen.failed:
        return None
    failed = v.codegen.failed
    intro = "The baseline compiled these kernels; the compiler under test fails to (exit 1)"
    error = _common_error(failed)
    if error is None:
        lines = "\n".join(f"- {md_text(line, 400)}" for line in failed)
        intro += ":"
    else:
        kernels = [m.group("kernel") for line in failed if (m := _FAILED_LINE.match(line))]
        lines = "\n".join(f"- {md_code(k, FAILED_MAX - 4, table=False)}" for k in kernels)
        said = error.removeprefix("compile failed: ")
        intro += f", every one with the same error: {md_text(said, 300)}"
    return Block(f"Kernels that no longer compile ({len(failed)})", f"{intro}\n\n{lines}")


def _nice_ceil(x: float) -> float:
    """The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) at or above ``x`` > 0."""
    k = 10 ** math.floor(math.log10(x))
    return next(m * k for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * k >= x - 1e-12)


def _bars(
    title: str,
    ops: list[OpVerdict],
    values: list[float],
    limit: float | None,
    spelled: Mapping[str, str],
) -> str:
    """A mermaid bar chart of ``ops``, each labelled by its one spelling in ``spelled``
    (``facts.op_names``: ``mm``, with the test file only where two ops share the name)."""
    names = [name_of(spelled, o.repo, o.run_name) for o in ops]
    top = _nice_ceil(max([*values, limit or 0.0, 0.1]))
    lines = [
        "xychart-beta horizontal",
        f'    title "{title}"',
        f"    x-axis [{', '.join(mermaid_label(n, CHART_LABEL) for n in names)}]",
        f'    y-axis "%" 0 --> {top:g}',
        f"    bar [{', '.join(f'{x:.2f}' for x in values)}]",
    ]
    if limit is not None:
        lines.append(f"    line [{', '.join(f'{limit:.2f}' for _ in values)}]")
    return md_fence(lines, "mermaid")


def chart(v: GateVerdict) -> Block | None:
    """Two zero-based horizontal bar charts (mermaid): the ops that got slower, with
    their limit as a line, and the ops that got faster, each the CHART_OPS largest
    moves; the others are counted below them."""
    ops = [o for o in v.ops if o.judged_change is not None]
    if not ops:
        return None
    slower = sorted((o for o in ops if o.judged_change > 0), key=lambda o: -o.judged_change)
    faster = sorted((o for o in ops if o.judged_change < 0), key=lambda o: o.judged_change)
    chunks, left, names = [], [], op_names(v)
    if slower:
        shown = slower[:CHART_OPS]
        by_op = rows_by_op(v.rows)
        limits = [x for o in shown if (x := op_limit(o, by_op)) is not None]
        limit = max(limits) * 100 if limits else None
        values = [o.judged_change * 100 for o in shown]
        title = "Slower: judged change, % (line: the limit)"
        chunks.append(_bars(title, shown, values, limit, names))
        left += [f"{len(slower) - len(shown)} more slower"] if len(slower) > len(shown) else []
    if faster:
        shown = faster[:CHART_OPS]
        values = [-o.judged_change * 100 for o in shown]
        chunks.append(_bars("Faster: judged change, % faster", shown, values, None, names))
        left += [f"{len(faster) - len(shown)} more faster"] if len(faster) > len(shown) else []
    unchanged = len(ops) - len(slower) - len(faster)
    left += [f"{unchanged} unchanged"] if unchanged else []
    intro = (
        f"{len(slower)} op(s) slower, {len(faster)} faster (geomean of each op's judged "
        f"change; the {CHART_OPS} largest moves each way are drawn)."
    )
    outro = f"Not drawn: {', '.join(left)}; every op is in report.html." if left else ""
    return Block("Change per op", intro, chunks=chunks, outro=outro, noun="charts")


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
        s = " ".join(
            x for x in (md_code(e.triton_dist or "unknown"), md_code(e.triton_version or "")) if x
        )
        s += f", FlagTree commit {md_code(e.flagtree_commit)}" if e.flagtree_commit else ""
        s += f", build {md_code(e.compiler_build)}" if e.compiler_build else ""
        return s + (f" from {md_code(e.compiler_path, 160)}" if e.compiler_path else "")

    outro = f"Compiler under test: {compiler(cur)} (baseline: {compiler(base)})."
    if cur.compiler_build and base.compiler_build and cur.compiler_build != base.compiler_build:
        outro += " The builds differ (build: a hash over the backend's compiler.py and libtriton)."
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
