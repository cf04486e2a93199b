"""Markdown of the codegen screen (``codegen.md``) and the one-line codegen
explanation of a judged row (report.md, junit.xml, ``zlbench explain``).

Pure: returns strings. Every string from an artifact goes through
:mod:`zlbench.report.escape`.
"""

from __future__ import annotations

from zlbench.models.codegen_screen import (
    CLASS_LABELS,
    RESOURCES,
    UNPROVEN_CLASSES,
    CodegenClass,
    CodegenScreen,
    KernelNote,
    KernelScreen,
)
from zlbench.report.blocks import table
from zlbench.report.escape import md_code, md_text, one_line

TOP = 20
RESOURCE_LABELS = {
    "n_regs": "regs",
    "n_spills": "spills",
    "shared": "shared B",
    "sass_instructions": "SASS instr",
    "compile_s": "compile s",
}
# How much one unit of each figure weighs when ranking changes (spills first).
_WEIGHTS = {"n_spills": 1000.0, "n_regs": 10.0, "shared": 0.01, "sass_instructions": 1.0}


def headline(screen: CodegenScreen) -> str:
    """``N of M kernels changed`` (+ failed / missing counts when any)."""
    total = len(screen.kernels)
    extra = [
        f"{screen.counts.get(c.value, 0)} {CLASS_LABELS[c]}"
        for c in (CodegenClass.FAILED, CodegenClass.MISSING)
        if screen.counts.get(c.value, 0)
    ]
    tail = f" ({', '.join(extra)})" if extra else ""
    return f"{len(screen.changed())} of {total} kernels changed{tail}"


def render_codegen(screen: CodegenScreen, top: int = TOP) -> str:
    """The screen's markdown section: headline, counts, failures, top changes."""
    parts = [
        "## Codegen screen",
        f"**{headline(screen)}**",
        _inputs(screen),
        table(["class", "kernels"], "lr", _count_rows(screen)),
    ]
    parts += _failed(screen)
    parts += _top_changes(screen, top)
    parts += _notes(screen, top)
    if screen.ops_without_records:
        ops = ", ".join(md_code(o, 60) for o in screen.ops_without_records[:20])
        more = len(screen.ops_without_records) - 20
        parts.append(
            f"Ops without codegen records (always timed): {ops}"
            + (f" and {more} more" if more > 0 else "")
        )
    return "\n\n".join(p for p in parts if p) + "\n"


def _inputs(s: CodegenScreen) -> str:
    wall = f"{s.wall_s:.1f} s" if s.wall_s is not None else "?"
    return (
        f"Baseline {md_code(s.baseline_dir, 120)} rebuilt by {md_code(s.compiler or '?', 80)} "
        f"· {s.jobs} job(s) · {wall}"
    )


def _count_rows(s: CodegenScreen) -> list[list[str]]:
    return [[CLASS_LABELS[c], str(s.counts.get(c.value, 0))] for c in CodegenClass]


def _failed(s: CodegenScreen) -> list[str]:
    failed = s.failed()
    if not failed:
        return []
    rows = [
        [md_code(k.name, 60), md_code(k.config, 80), _ops(k), md_text(k.error or "", 200)]
        for k in failed
    ]
    return ["### Failed to compile", table(["kernel", "config", "ops", "error"], "llll", rows)]


def _notes(s: CodegenScreen, top: int) -> list[str]:
    """Rebuild remarks (a kernel source that changed, a baseline not deterministic):
    a change they name may not be the compiler's."""
    lines = [
        f"- {md_code(k.name, 60)} {md_code(k.kernel_id, 20)}: {md_text(n, 200)}"
        for k in s.kernels
        for n in k.notes
    ]
    if not lines:
        return []
    more = len(lines) - top
    tail = [f"- … {more} more in codegen.json"] if more > 0 else []
    return ["### Notes", "\n".join(lines[:top] + tail)]


def weight(k: KernelScreen) -> float:
    """Rank of a change: weighted sum of |resource deltas| (spills weigh most)."""
    return sum(abs(k.deltas.get(n, 0.0)) * w for n, w in _WEIGHTS.items())


def _top_changes(s: CodegenScreen, top: int) -> list[str]:
    changed = sorted(s.changed(), key=lambda k: (-weight(k), k.name, k.kernel_id))
    if not changed:
        return []
    head = ["kernel", "config", "class", "first stage"]
    head += [RESOURCE_LABELS[n] for n in RESOURCES] + ["ops", "diff"]
    rows = [_change_row(k) for k in changed[:top]]
    more = len(changed) - top
    note = f"_… {more} more changed kernels in codegen.json._" if more > 0 else ""
    return ["### Top changes by resource delta", table(head, "llll" + "r" * 5 + "ll", rows), note]


def _change_row(k: KernelScreen) -> list[str]:
    figures = [resource_cell(k, n) for n in RESOURCES]
    return [
        md_code(k.name, 60),
        md_code(k.config, 80),
        CLASS_LABELS[k.status],
        k.first_stage or "",
        *figures,
        _ops(k),
        md_code(k.diff_file or "", 80),
    ]


def resource_cell(k: KernelScreen, name: str) -> str:
    """``32→40 (+8)``; ``32`` when unchanged; empty when unknown."""
    a = getattr(k.baseline, name)
    b = getattr(k.current, name) if k.current else None
    if a is None or b is None:
        return ""
    if name == "compile_s":
        return f"{a:.2f}→{b:.2f}"
    return str(a) if a == b else f"{a}→{b} ({_signed(b - a)})"


def _signed(x: float) -> str:
    return f"{x:+g}"


def _ops(k: KernelScreen, n: int = 3) -> str:
    shown = ", ".join(md_code(o, 60) for o in k.ops[:n])
    return shown + (f" +{len(k.ops) - n}" if len(k.ops) > n else "")


# --------------------------------------------------------------------------- row notes

SETUP_CHANGED = "Changed outside the timed region: setup kernels, no row changed"


def setup_line(k: KernelScreen) -> str:
    """A changed kernel that ran only outside the timed regions, plain text:
    ``fill_kernel [BLOCK=1024]: TTGIR changed (first stage ttgir); 3 op(s): a, b, c``."""
    config = f" [{k.config}]" if k.config else ""
    stage = f" (first stage {k.first_stage})" if k.first_stage else ""
    ops = ", ".join(k.ops[:3]) + (f" +{len(k.ops) - 3}" if len(k.ops) > 3 else "")
    head = f"{k.name}{config}: {CLASS_LABELS[k.status]}{stage}"
    return one_line(f"{head}; {len(k.ops)} op(s): {ops}", 300)


def note_text(note: KernelNote) -> str:
    """One kernel of a row, plain text: ``add_kernel [BLOCK=256 num_warps=4]: TTGIR
    changed (first stage ttgir); regs +8, spills +2; diff codegen/diffs/x.diff``."""
    config = f" [{note.config}]" if note.config else ""
    head = f"{note.name}{config}: {CLASS_LABELS[note.status]}"
    if note.first_stage:
        head += f" (first stage {note.first_stage})"
    deltas = [
        f"{RESOURCE_LABELS[n]} {_signed(note.deltas[n])}"
        for n in RESOURCES
        if note.deltas.get(n) and n != "compile_s"
    ]
    if deltas:
        head += "; " + ", ".join(deltas)
    if note.status in (CodegenClass.FAILED, CodegenClass.MISSING) and note.error:
        head += "; " + note.error
    if note.diff_file:
        head += f"; diff {note.diff_file}"
    return one_line(head, 400)


FULL_NOTES = 2  # changed kernels a row's explanation spells out; the rest by name


def row_explanation(notes: list[KernelNote], full: int = FULL_NOTES) -> str:
    """A row's codegen explanation, plain text (escape it for the medium it goes to):
    its first ``full`` changed kernels in full, the others by name."""
    if not notes:
        return "codegen: kernels unknown (no record names this row)"
    changed = [n for n in notes if n.status in UNPROVEN_CLASSES]
    if not changed:
        return f"codegen: all {len(notes)} kernel(s) identical to the baseline's"
    text = "codegen: " + " | ".join(note_text(n) for n in changed[:full])
    rest = list(dict.fromkeys(n.name for n in changed[full:]))
    if rest:
        shown = ", ".join(rest[:5]) + (f" +{len(rest) - 5}" if len(rest) > 5 else "")
        text += f" | {len(changed) - full} more changed: {shown}"
    return text
