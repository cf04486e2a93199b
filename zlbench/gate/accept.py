"""The accept list applied to judged rows (pure; docs/judging.md "Accepting an
intended regression").

An entry matches a row by op (op name or run_name), and by dtype and shape when
it gives them; the most specific matching entry wins (later entries win ties),
as in the thresholds file. A matched REGRESSION whose judged change (against
the base compiler when the row was measured A/B, else against the stored
baseline) is within the entry's allowance becomes a PASS marked accepted; one
beyond it stays a REGRESSION and says so. Every matched row carries its entry,
whatever its verdict, so no report can hide one; entries that match no row are
returned for the reports as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from zlbench.gate.numbers import pct
from zlbench.models import (
    AcceptedNote,
    AcceptEntry,
    AcceptList,
    RowKey,
    RowVerdict,
    Verdict,
    load_yaml_model,
)


def load_accept(path: str | Path) -> AcceptList:
    """``--accept FILE``; a bad entry (no reason, no op, an allowance out of range, an
    unknown field) is one ZlbenchError line naming the field."""
    return load_yaml_model(path, AcceptList)


def match_entry(entries: Iterable[AcceptEntry], key: RowKey) -> AcceptEntry | None:
    best: tuple[int, AcceptEntry] | None = None
    for e in entries:
        if e.op not in (key.op, key.run_name):
            continue
        if (e.dtype is not None and e.dtype != key.dtype) or (
            e.shape is not None and e.shape != key.shape
        ):
            continue
        spec = (e.dtype is not None) + (e.shape is not None)
        if best is None or spec >= best[0]:
            best = (spec, e)
    return best[1] if best else None


def judged_change(row: RowVerdict) -> float | None:
    """The change the row is judged on: against the base when measured A/B."""
    if row.ab is not None and row.ab.change is not None:
        return row.ab.change
    return row.judged_change


def accept_row(row: RowVerdict, entry: AcceptEntry) -> RowVerdict:
    """``row`` with its accept entry; a REGRESSION within the allowance becomes PASS."""
    change = judged_change(row)
    if row.verdict is not Verdict.REGRESSION or change is None:
        return row.model_copy(update={"accepted": AcceptedNote(entry=entry, applied=False)})
    allowed = f"accepted up to {pct(entry.change)}: {entry.reason}"
    if change <= entry.change:
        note = AcceptedNote(entry=entry, applied=True)
        reason = f"{pct(change)} {allowed}"
        return row.model_copy(update={"verdict": Verdict.PASS, "accepted": note, "reason": reason})
    note = AcceptedNote(entry=entry, applied=False, exceeded=True)
    reason = f"{pct(change)} is beyond the allowance ({allowed})"
    return row.model_copy(update={"accepted": note, "reason": reason})


def apply_accept(
    rows: list[RowVerdict], entries: list[AcceptEntry]
) -> tuple[list[RowVerdict], list[AcceptEntry]]:
    """(rows with their accept entries applied, entries that matched no row)."""
    used: set[int] = set()
    out = []
    for row in rows:
        entry = match_entry(entries, row.key)
        if entry is None:
            out.append(row)
            continue
        used.add(id(entry))
        out.append(accept_row(row, entry))
    return out, [e for e in entries if id(e) not in used]
