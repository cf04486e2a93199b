"""Op selectors -> inventory rows -> pytest node ids.

A selector is an op (``softmax``) or an op with the file that holds it
(``mm@test_blas_perf.py``) when the op appears in several files (the names of
an op: :mod:`zlbench.protocol.ops`). A selector that is an old scripts' name of one op
resolves to it with a warning; an unknown op that is the old name of several says
whose (``'blas_benchmark' is the old name of addmm@...``, :mod:`.old_names`); other unknown
ops name their closest matches; ambiguous ones list the ``op@file`` candidates. All
are ZlbenchError (one line, exit 2).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from zlbench.errors import ZlbenchError
from zlbench.protocol.ops import run_name_for, split_selector
from zlbench.runner.catalog.inventory import InventoryRow
from zlbench.runner.catalog.notes import Warn
from zlbench.runner.catalog.old_names import OldNames, derive_old_names


@dataclass(frozen=True)
class Selection:
    """What one selector resolved to."""

    selector: str  # as given: "op" or "op@test_file.py"
    op: str
    run_name: str  # selector with "@" -> "__at__"
    rows: tuple[InventoryRow, ...]

    @property
    def nodeids(self) -> list[str]:
        return [r.nodeid for r in self.rows]

    @property
    def skip(self) -> str:
        """The unconditional-skip reason when every row of the op is skipped, else ""."""
        return self.rows[0].skip if all(r.skip for r in self.rows) else ""


def _file_matches(row: InventoryRow, file: str) -> bool:
    """``file`` names a file by base name, path tail or path (``.py`` optional)."""
    want = file if file.endswith(".py") else f"{file}.py"
    return row.file == want or row.file.endswith("/" + want)


def _unknown(op: str, rows: list[InventoryRow], where: str, old: OldNames | None) -> ZlbenchError:
    """The error of an unknown op: whose old name it is, else its closest matches
    (difflib's are misleading for an old name: ``abs_inplace`` -> ``linspace``)."""
    old = old if old is not None else OldNames(derive_old_names(rows))
    repo = rows[0].repo if rows else ""
    if line := old.line(repo, op):
        return ZlbenchError(f"unknown op {op!r}{where}: {line}")
    close = difflib.get_close_matches(op, sorted({r.op for r in rows}), n=5, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    return ZlbenchError(f"unknown op {op!r}{where}{hint}")


def select(
    inventory: list[InventoryRow],
    selector: str,
    *,
    repo: str | None = None,
    old: OldNames | None = None,
    warn: Warn | None = None,
) -> Selection:
    """Resolve one selector; unknown / ambiguous / bad file -> ZlbenchError.

    ``repo``: only rows of that repo (None: the inventory must hold one repo's rows).
    An op found in several files needs ``op@file``; several test functions of
    one file with the same op mark are one op (all their node ids). ``old``: the
    old names (None: derived from the inventory): a selector naming no op but the
    old name of one resolves to it with one warning line to ``warn``
    (``zlbench run --op abs_inplace``); the old name of several ops is the error of
    an unknown op, saying whose.
    """
    rows = [r for r in inventory if repo is None or r.repo == repo]
    op, file = split_selector(selector)
    mine = [r for r in rows if r.op == op]
    if not mine:
        old = old if old is not None else OldNames(derive_old_names(rows))
        where = repo or (rows[0].repo if rows else "")
        if len({n.selector for n in old.lookup(where, selector)}) == 1:  # one op: use it
            (current,) = old.using(selector, where, selector, warn)
            return select(inventory, current, repo=repo, old=old)
        raise _unknown(op, rows, f" in repo {repo!r}" if repo else "", old)
    files = sorted({r.file for r in mine})
    if file is not None:
        mine = [r for r in mine if _file_matches(r, file)]
        if not mine:
            names = ", ".join(f.rsplit("/", 1)[-1] for f in files)
            raise ZlbenchError(f"op {op!r} is not in {file!r}; it is in: {names}")
        files = sorted({r.file for r in mine})
    if len(files) > 1:
        cands = ", ".join(f"{op}@{f.rsplit('/', 1)[-1]}" for f in files)
        n = len(files)
        raise ZlbenchError(f"op {op!r} is ambiguous, it is in {n} files: use one of {cands}")
    return Selection(selector, op, run_name_for(selector), tuple(mine))


def resolve(inventory: list[InventoryRow], selector: str, *, repo: str | None = None) -> list[str]:
    """The pytest node ids of one selector (see :func:`select`)."""
    return select(inventory, selector, repo=repo).nodeids


def all_selectors(inventory: list[InventoryRow], *, repo: str | None = None) -> list[str]:
    """One selector per op, sorted: ``op``, or ``op@file`` for each file of an op in several."""
    files: dict[str, set[str]] = {}
    for r in inventory:
        if repo is None or r.repo == repo:
            files.setdefault(r.op, set()).add(r.file_name)
    out = []
    for op in sorted(files):
        names = sorted(files[op])
        out += [op] if len(names) == 1 else [f"{op}@{n}" for n in names]
    return out
