"""Markdown of the codegen screen (``codegen.md``) and the one-line codegen
explanation of a judged row (report.md, junit.xml, ``zlbench explain``).

Pure: returns strings. Every string from an artifact goes through
:mod:`zlbench.report.escape`.
"""

from __future__ import annotations

from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    CLASS_LABELS,
    RESOURCES,
    UNPROVEN_CLASSES,
    CodegenClass,
    CodegenScreen,
    KernelNote,
    KernelScreen,
)
from zlbench.protocol.ops import display_names
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


def screen_names(screen: CodegenScreen) -> dict[str, str]:
    """Op key -> the one spelling a person reads (:func:`zlbench.protocol.ops.display_names`)
    of every op the screen names: the ops of its kernels, those without records."""
    keys = [o for k in screen.kernels for o in k.ops]
    return display_names([*keys, *screen.ops_without_records])


def render_codegen(screen: CodegenScreen, top: int = TOP) -> str:
    """The screen's markdown section: headline, counts, failures, top changes; every op
    spelled as the reports spell it (:func:`screen_names`)."""
    names = screen_names(screen)
    parts = [
        "## Codegen screen",
        f"**{headline(screen)}**",
        _inputs(screen),
        _decided(screen),
        table(["class", "kernels"], "lr", _count_rows(screen)),
    ]
    parts += _failed(screen, names)
    parts += _top_changes(screen, top, names)
    parts += _notes(screen, top)
    if screen.ops_without_records:
        ops = ", ".join(md_code(names[o], 60) for o in screen.ops_without_records[:20])
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


def decided_label(decided_by: str, base_compiler: str) -> str:
    """``PR vs base compiler <fingerprint>`` / ``PR vs the baseline's recording compiler``
    ("" for a screen written before it said)."""
    if decided_by == "base":
        return f"PR vs base compiler {base_compiler}"
    return "PR vs the baseline's recording compiler" if decided_by == "baseline" else ""


def _decided(s: CodegenScreen) -> str:
    """Which comparison classified the kernels (and so decided what is timed); against
    the base compiler, what the baseline's recording compiler would have said."""
    label = decided_label(s.decided_by, s.base_compiler)
    if not label:
        return ""
    line = f"Decided by: {md_text(label, 200)}"
    if s.decided_by != "base":
        return line
    where = md_text(s.base_rebuild or "?", 200)
    vs = sum(s.vs_baseline_counts.get(c.value, 0) for c in CHANGED_CLASSES)
    return (
        f"{line} (base side: {where}) · against the baseline's recording compiler "
        f"{vs} of {len(s.kernels)} kernels differ (context only: a kernel identical "
        "to the base's is not timed)"
    )


def _count_rows(s: CodegenScreen) -> list[list[str]]:
    return [[CLASS_LABELS[c], str(s.counts.get(c.value, 0))] for c in CodegenClass]


def _failed(s: CodegenScreen, names: dict[str, str]) -> list[str]:
    failed = s.failed()
    if not failed:
        return []
    rows = [
        [md_code(k.name, 60), md_code(k.config, 80), _ops(k, names), md_text(k.error or "", 200)]
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


def weight(k: KernelScreen | KernelNote) -> float:
    """Rank of a change: weighted sum of |resource deltas| (spills weigh most)."""
    return sum(abs(k.deltas.get(n, 0.0)) * w for n, w in _WEIGHTS.items())


def _top_changes(s: CodegenScreen, top: int, names: dict[str, str]) -> list[str]:
    changed = sorted(s.changed(), key=lambda k: (-weight(k), k.name, k.kernel_id))
    if not changed:
        return []
    head = ["kernel", "config", "class", "first stage"]
    head += [RESOURCE_LABELS[n] for n in RESOURCES] + ["ops", "diff"]
    rows = [_change_row(k, names) for k in changed[:top]]
    more = len(changed) - top
    note = f"_… {more} more changed kernels in codegen.json._" if more > 0 else ""
    return ["### Top changes by resource delta", table(head, "llll" + "r" * 5 + "ll", rows), note]


def _change_row(k: KernelScreen, names: dict[str, str]) -> list[str]:
    figures = [resource_cell(k, n) for n in RESOURCES]
    return [
        md_code(k.name, 60),
        md_code(k.config, 80),
        CLASS_LABELS[k.status],
        k.first_stage or "",
        *figures,
        _ops(k, names),
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


def _ops(k: KernelScreen, names: dict[str, str], n: int = 3) -> str:
    shown = ", ".join(md_code(names.get(o, o), 60) for o in k.ops[:n])
    return shown + (f" +{len(k.ops) - n}" if len(k.ops) > n else "")


# --------------------------------------------------------------------------- row notes

SETUP_CHANGED = "Changed outside the timed region: setup kernels, no row changed"
WHY_MAX = 200  # characters of one "why" line: a row's codegen explanation, in every medium
# What the screen found, in plain words (no stage names): the start of every why line.
CHANGE_WORDS = {
    CodegenClass.IDENTICAL: "identical",
    CodegenClass.TTGIR: "TTGIR differs",
    CodegenClass.LLIR_PTX: "LLIR/PTX differs (same TTGIR)",
    CodegenClass.SASS: "only SASS differs",
    CodegenClass.FAILED: "no longer compiles",
    CodegenClass.MISSING: "not rebuilt",
}
# The figures of a why line, in plain words: "regs +8", "SASS +12 instructions".
DELTA_WORDS = {
    "n_regs": ("regs", ""),
    "n_spills": ("spills", ""),
    "shared": ("shared", " B"),
    "sass_instructions": ("SASS", " instructions"),
}
_CLASS_ORDER = {CodegenClass.TTGIR: 0, CodegenClass.LLIR_PTX: 1, CodegenClass.SASS: 2}


def change_rank(note: KernelNote) -> tuple:
    """Sort key of a row's kernels, the one that matters first: a kernel that no
    longer compiles (or was not rebuilt), then the changed ones by :func:`weight`
    (largest first; on a tie the earlier differing stage), then the identical ones."""
    if note.status in (CodegenClass.FAILED, CodegenClass.MISSING):
        group = 0
    elif note.status in _CLASS_ORDER:
        group = 1
    else:
        group = 2
    return (group, -weight(note), _CLASS_ORDER.get(note.status, 3), note.name, note.kernel_id)


def deciding(notes: list[KernelNote]) -> KernelNote | None:
    """The kernel that explains a row: of the kernels that count for it (those it ran
    in its timed region, or all where the records do not say), the one with the
    largest change (:func:`change_rank`); None when none changed."""
    changed = [n for n in notes if n.status in UNPROVEN_CLASSES]
    return min(changed, key=change_rank) if changed else None


def change_words(note: KernelNote) -> str:
    """``TTGIR differs``, ``no longer compiles``...: what the screen found, plain."""
    return CHANGE_WORDS[note.status]


def delta_words(note: KernelNote, top: int | None = None) -> str:
    """``regs +126, shared -36864 B, SASS +793 instructions``: the changed figures (only
    the ``top`` that weigh most, :func:`weight`, when given), in this order."""
    changed = [n for n in DELTA_WORDS if note.deltas.get(n)]
    if top is not None:
        heavy = sorted(changed, key=lambda n: -abs(note.deltas[n]) * _WEIGHTS[n])[:top]
        changed = [n for n in changed if n in heavy]
    words = []
    for name in changed:
        label, unit = DELTA_WORDS[name]
        words.append(f"{label} {_signed(note.deltas[name])}{unit}")
    return ", ".join(words)


def setup_line(k: KernelScreen, names: dict[str, str] | None = None) -> str:
    """A changed kernel that ran only outside the timed regions, plain text:
    ``fill_kernel [BLOCK=1024]: TTGIR differs; 3 op(s): a, b, c``, each op spelled as
    ``names`` (:func:`screen_names`; None: as if its ops were the only ones) says."""
    names = names if names is not None else display_names(k.ops)
    config = f" [{k.config}]" if k.config else ""
    shown = [names.get(o, o) for o in k.ops[:3]]
    ops = ", ".join(shown) + (f" +{len(k.ops) - 3}" if len(k.ops) > 3 else "")
    head = f"{k.name}{config}: {CHANGE_WORDS[k.status]}"
    return one_line(f"{head}; {len(k.ops)} op(s): {ops}", 300)


def note_text(note: KernelNote) -> str:
    """One kernel of a row in full, plain text (``zlbench explain``): ``add_kernel
    [BLOCK=256 num_warps=4]: TTGIR differs; regs +8, spills +2; diff codegen/diffs/x.diff``."""
    config = f" [{note.config}]" if note.config else ""
    head = f"{note.name}{config}: {change_words(note)}"
    if deltas := delta_words(note):
        head += "; " + deltas
    if note.status in (CodegenClass.FAILED, CodegenClass.MISSING) and note.error:
        head += ": " + note.error.removeprefix("compile failed: ")
    if note.diff_file:
        head += f"; diff {note.diff_file}"
    return one_line(head, 400)


def fit_kernel(
    name: str, note: KernelNote, diff: str, limit: int, tail: str = "", words: str = ""
) -> str:
    """``name: figures; words; diff; tail`` (``; `` between the non-empty parts;
    ``words``: what changed, :func:`change_words` by default): the figures lead, and the
    fullest form within ``limit`` characters is kept: ``tail`` goes first, then the
    diff, then the figures that weigh least, one by one; ``name: words`` when nothing
    else fits (the caller bounds it)."""
    words = words or change_words(note)
    figures = sum(bool(note.deltas.get(n)) for n in DELTA_WORDS)
    forms = [[delta_words(note), words, diff, tail], [delta_words(note), words, diff]]
    forms += [[delta_words(note, k), words] for k in range(figures, 0, -1)]
    for rest in forms:
        text = f"{name}: " + "; ".join(p for p in rest if p)
        if len(text) <= limit:
            return text
    return f"{name}: {words}"


def row_explanation(notes: list[KernelNote], limit: int = WHY_MAX) -> str:
    """A row's codegen explanation, plain text, one line of at most ``limit``
    characters (escape it for the medium it goes to): the kernel that matters
    (:func:`deciding`), what changed in it, its diff file, and how many other
    changed kernels the row ran (those are in report.html and ``zlbench explain``)."""
    if not notes:
        return "codegen: kernels unknown (no record names this row)"
    top = deciding(notes)
    if top is None:
        return f"codegen: all {len(notes)} kernel(s) identical to the baseline's"
    others = sum(n.status in UNPROVEN_CLASSES for n in notes) - 1
    words = change_words(top)
    if top.status in (CodegenClass.FAILED, CodegenClass.MISSING) and top.error:
        words += f": {one_line(top.error.removeprefix('compile failed: '), 80)}"
    diff = f"diff {one_line(top.diff_file, 90)}" if top.diff_file else ""
    tail = f"+{others} other changed kernel(s)" if others > 0 else ""
    name = f"codegen: {one_line(top.name, 60)}"
    return one_line(fit_kernel(name, top, diff, limit, tail, words), limit)
