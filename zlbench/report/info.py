"""The sections of the markdown report after the failures: what moved (largest
moves, rows near their threshold, unconfirmed flags, improvements), the
thresholds in force, the code-generation summary, the chart and the environment.
Built from :class:`zlbench.report.blocks.Block` like the failure sections."""

from __future__ import annotations

from zlbench.models import EnvFinding, GateVerdict, Verdict
from zlbench.report.blocks import LEGEND, Block, change_block
from zlbench.report.codegen import SETUP_CHANGED
from zlbench.report.escape import md_code, md_fence, md_text, mermaid_label
from zlbench.report.facts import (
    NEAR,
    ReportExtras,
    improved,
    largest_moves,
    near_threshold,
    nondefault_thresholds,
    unconfirmed,
)

CHART_OPS = 40


def moves(v: GateVerdict) -> Block | None:
    return change_block("Largest moves (slower, then faster)", largest_moves(v.rows), LEGEND)


def near(v: GateVerdict) -> Block | None:
    rows = near_threshold(v.rows)
    intro = f"Passing rows whose judged change reached {NEAR:.0%} of their limit, not past it."
    return change_block(f"Near the threshold ({len(rows)})", rows, intro)


def not_confirmed(v: GateVerdict) -> Block | None:
    rows = unconfirmed(v.rows)
    intro = "Flagged on the first measurement; the median of the re-measures passed."
    return change_block(f"Flagged but not confirmed ({len(rows)})", rows, intro)


def improvements(v: GateVerdict) -> Block | None:
    rows = improved(v.rows)
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


def codegen(v: GateVerdict, extras: ReportExtras) -> Block | None:
    """The codegen screen's counts (or why there is none) and, with ``--time
    changed``, the ops not timed with the proof that their kernels are unchanged."""
    cg = v.codegen
    if extras.codegen is None and cg is None:
        return None
    said = []
    if extras.codegen is not None:
        changed, total = extras.codegen
        said.append(f"{changed} of {total} kernels changed their generated code.")
    if cg is not None and cg.screen_file:
        said.append(f"Screen: {md_code(cg.screen_file, 200)} (`zlbench explain` per op).")
    if cg is not None and cg.note:
        said.append(md_text(cg.note, 300) + ".")
    intro = " ".join(said)
    if extras.setup_changed:
        intro += f"\n\n{SETUP_CHANGED} ({len(extras.setup_changed)}):\n\n"
        intro += "\n".join(f"- {md_text(line, 300)}" for line in extras.setup_changed)
    if cg is None or not cg.not_timed:
        return Block("Generated code", intro)
    intro += (
        f"\n\n`--time changed`: {len(cg.not_timed)} op(s) not timed: every kernel they "
        "launched rebuilt identical, and every row names its kernels."
    )
    cells = [[md_code(k), md_text(why, 200)] for k, why in sorted(cg.not_timed.items())]
    return Block("Generated code", intro, ["op not timed", "proof"], "ll", cells, noun="ops")


def codegen_failed(v: GateVerdict) -> Block | None:
    """Kernels the baseline compiled that the compiler under test fails to: they fail
    the gate, whatever the timing says."""
    if v.codegen is None or not v.codegen.failed:
        return None
    lines = "\n".join(f"- {md_text(line, 400)}" for line in v.codegen.failed)
    intro = "The baseline compiled these kernels; the compiler under test fails to (exit 1):"
    return Block(f"Kernels that no longer compile ({len(v.codegen.failed)})", f"{intro}\n\n{lines}")


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
