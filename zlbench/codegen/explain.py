"""``zlbench explain``: one op's rows, the kernels each launched and what the
codegen screen found in them (pure: returns text).
"""

from __future__ import annotations

from zlbench.codegen.select import kernel_note, matches_spec, row_notes
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.models.codegen_screen import UNPROVEN_CLASSES, CodegenScreen, KernelScreen
from zlbench.models.run import RowKey
from zlbench.models.verdict import RowVerdict
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import spec_matches
from zlbench.report.codegen import note_text


def op_matches(spec: str, row: RowKey) -> bool:
    """``spec`` names this row's op: a SPEC (``repo/run_name``, ``[repo:]op@file``) or op name."""
    return matches_spec(spec, op_key(row.repo, row.run_name), row.op)


def _op_kernels(screen: CodegenScreen, spec: str) -> list[KernelScreen]:
    return [
        k
        for k in screen.kernels
        if any(op_matches(spec, r) for r in k.rows) or any(spec_matches(spec, o) for o in k.ops)
    ]


def explain_op(
    screen: CodegenScreen, spec: str, verdicts: list[RowVerdict] | None, diff_root: str = ""
) -> str:
    """Text for one op: each row (with its verdict when given), its kernels, their
    class, first differing stage, resource deltas and diff path (under ``diff_root``)."""
    kernels = _op_kernels(screen, spec)
    judged = [v for v in verdicts or [] if op_matches(spec, v.key)]
    if not kernels and not judged:
        raise ZlbenchError(f"op {spec!r}: no row or kernel of it in the codegen screen")
    launched = {r for k in kernels for r in k.rows if op_matches(spec, r)}
    rows = [v.key for v in judged] or sorted(launched, key=_row_order)
    by_row = {v.key: v for v in judged}
    notes = row_notes(rows, screen, diff_prefix=diff_root)
    unproven = sum(k.status in UNPROVEN_CLASSES for k in kernels)
    lines = [f"{spec}: {len(rows)} row(s), {len(kernels)} kernel(s), {unproven} not identical"]
    for row in rows:
        v = by_row.get(row)
        verdict = f"  {v.verdict.value}{_ratio(v)}" if v else ""
        lines.append(f"  {row.dtype} {row.shape}{_occ(row)}{verdict}")
        lines += [f"    {note_text(n)}" for n in notes[row]] or ["    kernels unknown"]
    named = {n.kernel_id for ns in notes.values() for n in ns}
    rest = [k for k in kernels if k.kernel_id not in named]
    setup = [k for k in rest if _only_outside(k, spec)]
    rest = [k for k in rest if k not in setup]
    if rest:
        lines.append("  kernels of the op that no row names:")
        lines += [f"    {note_text(kernel_note(k, diff_root))}" for k in rest]
    if setup:
        lines.append(
            "  launched outside the timed region only (setup kernels: they change no row):"
        )
        lines += [f"    {note_text(kernel_note(k, diff_root))}" for k in setup]
    note = TimedKernels.of(screen).note(
        {o for k in kernels for o in k.ops if spec_matches(spec, o)}
    )
    if note:
        lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"


def _only_outside(k: KernelScreen, spec: str) -> bool:
    """Every op of ``spec`` that launched ``k`` launched it only outside a timed region."""
    mine = [o for o in k.ops if spec_matches(spec, o)]
    return bool(mine) and all(o in k.setup_ops for o in mine)


def _ratio(v: RowVerdict) -> str:
    """The judged kernel-time change, ``+`` = slower (as in report.md)."""
    return f" {v.judged_change * 100:+.1f} %" if v.judged_change is not None else ""


def _occ(row: RowKey) -> str:
    return f" #{row.occurrence}" if row.occurrence else ""


def _row_order(r: RowKey) -> tuple:
    return (r.repo, r.run_name, r.dtype, r.shape, r.occurrence)
