"""Timed-kernel attribution for codegen records made before it (pure: no files).

A baseline recorded before ``KernelUse.timed`` existed says of no kernel whether it
ran inside its row's timed region, so its screen counts setup kernels as timed
(:mod:`zlbench.codegen.timed`). A later run of the same ops (a replay pass, or a
gate's measure step) records the attribution; :func:`attribute` copies it onto the
baseline's uses, matching each use by its record id (the same compile request), else
by kernel and row (kernel name and qualname, run, op, dtype, shape, occurrence: a
compile request's id also moves with triton's own cache key, e.g. under a copy of the
same triton at another path). A use is attributed only where every matching use the
runs saw agrees; otherwise, or where no run saw it, it stays unknown (it counts as
timed, as before). Uses that already carry an attribution are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zlbench.models.codegen import CodegenIndex, CompileRecord, KernelUse
from zlbench.models.replay import LaunchCapture

RowOfUse = tuple[str, str, str | None, str | None, int]


@dataclass
class Attribution:
    """What :func:`attribute` did with a baseline's uses."""

    uses: int = 0  # kernel uses in the baseline's records
    kept: int = 0  # already attributed
    timed: int = 0  # newly attributed: inside the timed region
    setup: int = 0  # newly attributed: outside it only
    by_id: int = 0  # of the new ones, matched by record id (the rest by kernel and row)
    unknown: int = 0  # no run saw them, or the runs disagreed
    unknown_ops: set[str] = field(default_factory=set)

    def add(self, other: Attribution) -> None:
        for k in ("uses", "kept", "timed", "setup", "by_id", "unknown"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.unknown_ops |= other.unknown_ops

    def as_dict(self) -> dict[str, object]:
        return {
            "uses": self.uses,
            "kept": self.kept,
            "timed": self.timed,
            "setup": self.setup,
            "matched_by_record_id": self.by_id,
            "unknown": self.unknown,
            "unknown_ops": sorted(self.unknown_ops),
        }


def _row(use: KernelUse) -> RowOfUse:
    return (use.run_name, use.op, use.dtype, use.shape, use.occurrence)


def _kernel(rec: CompileRecord) -> tuple[str, str]:
    return (rec.request.kernel.name, rec.request.kernel.qualname)


@dataclass
class Seen:
    """Every attributed use of some runs, by record id and by kernel, with its value."""

    by_id: dict[tuple[str, RowOfUse], set[bool]] = field(default_factory=dict)
    by_kernel: dict[tuple[tuple[str, str], RowOfUse], set[bool]] = field(default_factory=dict)

    @classmethod
    def of(cls, indexes: Iterable[CodegenIndex]) -> Seen:
        seen = cls()
        for index in indexes:
            for rec in index.records:
                for use in rec.used_by:
                    if use.timed is None:
                        continue
                    seen.by_id.setdefault((rec.id, _row(use)), set()).add(use.timed)
                    seen.by_kernel.setdefault((_kernel(rec), _row(use)), set()).add(use.timed)
        return seen

    def value(self, rec: CompileRecord, use: KernelUse) -> tuple[bool | None, bool]:
        """(the agreed attribution or None, whether it came from the record id)."""
        got = self.by_id.get((rec.id, _row(use)))
        if got is not None:
            return (next(iter(got)) if len(got) == 1 else None), True
        got = self.by_kernel.get((_kernel(rec), _row(use)))
        if got is not None and len(got) == 1:
            return next(iter(got)), False
        return None, False


def attribute(index: CodegenIndex, seen: Seen) -> tuple[CodegenIndex, Attribution]:
    """``index`` with its unattributed uses attributed from ``seen`` (module
    docstring), and what was done; ``index`` itself is not changed."""
    out = index.model_copy(deep=True)
    done = Attribution()
    for rec in out.records:
        for use in rec.used_by:
            done.uses += 1
            if use.timed is not None:
                done.kept += 1
                continue
            value, by_id = seen.value(rec, use)
            if value is None:
                done.unknown += 1
                done.unknown_ops.add(use.op)
                continue
            use.timed = value
            done.by_id += by_id
            done.timed += value
            done.setup += not value
    return out, done


def with_replay_timed(capture: LaunchCapture, run: CodegenIndex, known: set[str]) -> LaunchCapture:
    """``capture`` (a replay-mode run's) with each row's ``replay_timed``: the record ids
    that run's codegen index ``run`` says it launched inside that row's timed calls (its
    uses with ``timed`` true, by dtype and shape, any occurrence). Not known (None) for
    every row when the run has a timed use of no named row, or one not attributed (its
    row cannot be told), or a timed kernel whose id ``known`` (the baseline's record ids
    of the op) lacks: a kernel compiled under another id would read as not timed. A
    record pass's attribution counts every kernel its autotune sweep timed, the replay
    mode's only those the gate's measurement launches (docs/measurements.md,
    thirty-fourth session: v7's upsample_nearest3d)."""
    timed: dict[tuple[str, str], set[str]] = {}
    for rec in run.records:
        for use in rec.used_by:
            if use.timed is False:
                continue
            if use.timed is None or use.dtype is None or use.shape is None or rec.id not in known:
                return capture.model_copy(
                    update={
                        "rows": [r.model_copy(update={"replay_timed": None}) for r in capture.rows]
                    }  # fmt: skip
                )
            timed.setdefault((use.dtype, use.shape), set()).add(rec.id)
    rows = [
        r.model_copy(update={"replay_timed": sorted(timed.get((r.dtype, r.shape), set()))})
        for r in capture.rows
    ]
    return capture.model_copy(update={"rows": rows})


__all__ = ["Attribution", "Seen", "attribute", "with_replay_timed"]
