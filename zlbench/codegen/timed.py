"""Which of a row's kernels are *timed* (pure: no triton, no files).

The recorder marks every kernel use with whether it ran inside the row's timed
region (``KernelUse.timed``, docs/codegen.md); the screen keeps, per kernel, the
ops and rows where it ran timed and those where it ran only outside
(``KernelScreen.timed_ops`` / ``setup_ops`` / ``timed_rows`` / ``setup_rows``).

A kernel *counts* for a row when it ran inside that row's timed region, or where
the attribution is not known: a row none of whose kernels is marked timed (a
baseline recorded before the attribution, or a row whose timed side launched no
recorded kernel) counts every kernel it launched. A kernel that failed to compile
or could not be rebuilt always counts: a setup kernel that does not build breaks
its row as surely as a timed one. For an op the same holds with its rows and its
uses outside any row. Only the kernels that count make a row or an op *changed*,
and only they explain a row; a changed kernel that counts nowhere is a *setup*
kernel, listed once, apart.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    UNNAMED_SHAPE,
    CodegenClass,
    CodegenScreen,
    KernelScreen,
)
from zlbench.models.run import RowKey

RowRef = tuple[str, str, str, str]
NO_ATTRIBUTION = "baseline without timed-kernel attribution: setup kernels count as timed"
# Classes that count wherever the kernel ran: nothing proves that it even builds.
ALWAYS_COUNTS = frozenset({CodegenClass.FAILED, CodegenClass.MISSING})


def row_ref(row: RowKey) -> RowRef:
    """What a codegen record and a baseline row agree on: repo, run, dtype, shape."""
    return (row.repo, row.run_name, row.dtype, row.shape)


def unnamed_ref(ref: RowRef) -> RowRef:
    """The row that kernel uses of ``ref``'s op and dtype without a shape stand for
    (:data:`~zlbench.models.codegen_screen.UNNAMED_SHAPE`)."""
    return (ref[0], ref[1], ref[2], UNNAMED_SHAPE)


def known_ref(ref: RowRef, known: Collection[RowRef]) -> RowRef | None:
    """``ref`` when a kernel use names it; else its :func:`unnamed_ref` when uses of
    its op and dtype named no shape (the kernels launched while that dtype's rows were
    in flight, unnamed: they include this row's); else None (the records do not say
    what this row launched)."""
    if ref in known:
        return ref
    loose = unnamed_ref(ref)
    return loose if loose in known else None


@dataclass
class TimedKernels:
    """The screen's kernels by op and by row, with where each one ran."""

    screen: CodegenScreen
    by_op: dict[str, list[KernelScreen]] = field(default_factory=dict)
    by_row: dict[RowRef, list[KernelScreen]] = field(default_factory=dict)
    rows_of_op: dict[str, set[RowRef]] = field(default_factory=dict)
    timed_ops: set[str] = field(default_factory=set)  # ops with a kernel marked timed
    timed_rows: set[RowRef] = field(default_factory=set)  # rows with a kernel marked timed
    setup_in_op: dict[str, set[str]] = field(default_factory=dict)  # kernel id -> ops
    setup_in_row: dict[str, set[RowRef]] = field(default_factory=dict)  # kernel id -> rows

    @classmethod
    def of(cls, screen: CodegenScreen) -> TimedKernels:
        t = cls(screen)
        for k in screen.kernels:
            for op in k.ops:
                t.by_op.setdefault(op, []).append(k)
            for ref in dict.fromkeys(row_ref(r) for r in k.rows):
                t.by_row.setdefault(ref, []).append(k)
                if ref[3] != UNNAMED_SHAPE:  # a stand-in for unnamed rows, no row itself
                    t.rows_of_op.setdefault(f"{ref[0]}/{ref[1]}", set()).add(ref)
            t.timed_ops.update(k.timed_ops)
            t.timed_rows.update(row_ref(r) for r in k.timed_rows)
            t.setup_in_op[k.kernel_id] = set(k.setup_ops)
            t.setup_in_row[k.kernel_id] = {row_ref(r) for r in k.setup_rows}
        return t

    @property
    def attributed(self) -> bool:
        """Whether the screen's records say where any kernel ran at all."""
        return any(k.timed_ops or k.setup_ops for k in self.screen.kernels)

    # ---- rows

    def row_kernels(self, ref: RowRef) -> list[KernelScreen]:
        """The kernels that count for the row ``ref`` (module docstring); a row no use
        names by shape has those of its dtype's unnamed uses (:func:`known_ref`)."""
        ref = known_ref(ref, self.by_row) or ref
        kernels = self.by_row.get(ref, [])
        if ref not in self.timed_rows:
            return list(kernels)
        return [k for k in kernels if _counts(k, ref in self.setup_in_row[k.kernel_id])]

    # ---- ops

    def op_kernels(self, op: str) -> list[KernelScreen]:
        """The kernels that count for the op ``op``: those that count for one of its
        rows, and those it launched outside any row that are not setup kernels."""
        kernels = self.by_op.get(op, [])
        if op not in self.timed_ops:
            return list(kernels)
        counted = {
            k.kernel_id for ref in self.rows_of_op.get(op, ()) for k in self.row_kernels(ref)
        }
        return [
            k
            for k in kernels
            if k.kernel_id in counted or _counts(k, op in self.setup_in_op[k.kernel_id])
        ]

    def op_setup(self, op: str) -> list[KernelScreen]:
        """The op's kernels that do not count for it (they ran outside its timed regions)."""
        counted = {k.kernel_id for k in self.op_kernels(op)}
        return [k for k in self.by_op.get(op, []) if k.kernel_id not in counted]

    def unattributed_ops(self, ops: Iterable[str]) -> list[str]:
        """Those of ``ops`` with kernels but none marked timed: every kernel counts."""
        return sorted(op for op in ops if self.by_op.get(op) and op not in self.timed_ops)

    # ---- the whole screen

    def setup_changed(self) -> list[KernelScreen]:
        """Changed kernels that count for no op: they ran only outside the timed regions."""
        counted = {k.kernel_id for op in self.by_op for k in self.op_kernels(op)}
        return [
            k
            for k in self.screen.kernels
            if k.status in CHANGED_CLASSES and k.kernel_id not in counted
        ]

    def note(self, ops: Iterable[str]) -> str:
        """One line when some of ``ops`` count their setup kernels as timed, else ""."""
        bare = self.unattributed_ops(ops)
        if not bare:
            return ""
        if not self.attributed:
            return NO_ATTRIBUTION
        shown = ", ".join(bare[:3]) + (f" and {len(bare) - 3} more" if len(bare) > 3 else "")
        return (
            f"{len(bare)} op(s) with no kernel marked timed ({shown}): setup kernels count as timed"
        )


def _counts(k: KernelScreen, setup_here: bool) -> bool:
    return not setup_here or k.status in ALWAYS_COUNTS
