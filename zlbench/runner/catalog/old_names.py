"""The old scripts' op names (``ops/old_names.csv``) -> zlbench's selectors.

Why: the scripts zlbench replaces (run_pytest.sh, run_batch.py) named an op by its
benchmark test function without ``test_`` (``abs_inplace``); zlbench names it by the
test's first pytest mark (``abs_``, :mod:`zlbench.runner.catalog.inventory`). For
237 of the 1123 tests of FlagGems ed2508bcb5a0 the two differ, so an old ops list
or dismiss list named ops zlbench did not know, and the closest-match hint was
misleading (``abs_inplace`` -> ``linspace``). docs/ops.md, "Old op names".

The mapping is derived from an inventory (:func:`derive_old_names`: one row per
test whose old name is not its op id) and shipped as ``ops/old_names.csv``
(``benchmarks/old_names.py`` writes it). Rules of its use:

* a current op id always wins; an old name that is also an op id (``true_divide``:
  zlbench's op, and the old name of ``div_tensor``) selects the op, with a note;
* an old name selects every op of its test function (``blas_benchmark``: ``addmm``,
  ``bmm``, ...); one found in several files is ambiguous in an ops list, as a
  current op id is;
* each use says so in one warning line (``old name abs_inplace: using abs_
  (ops/old_names.csv)``, :meth:`OldNames.using`, :mod:`.notes`), in every command:
  ``--ops`` / ``--ops-file`` of batch, baseline refresh and ab
  (:func:`zlbench.runner.catalog.select.select_ops`), of gate and report
  (:func:`zlbench.runner.catalog.select.current_specs`, before the baseline is
  matched) and ``zlbench run --op`` (:func:`zlbench.runner.catalog.resolve.select`).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass, fields, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import atomic_write_text, read_text
from zlbench.protocol.ops import split_selector
from zlbench.runner.catalog.dismiss import DismissEntry
from zlbench.runner.catalog.inventory import InventoryRow
from zlbench.runner.catalog.notes import Warn, note

OLD_NAMES_FILE = "old_names.csv"


@dataclass(frozen=True)
class OldName:
    """One row of ``ops/old_names.csv``: the old name of one test -> its op."""

    repo: str
    old_name: str  # the test function without "test_" (how the old scripts named it)
    selector: str  # zlbench's: op, or op@test_file.py when the op is in several files
    nodeid: str  # the test that old name named (the first, for a parametrized one)

    @property
    def file_name(self) -> str:
        """Base name of the test's file."""
        return self.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


OLD_NAME_FIELDS = [f.name for f in fields(OldName)]


def old_name_of(row: InventoryRow) -> str:
    """The old scripts' name of a test: its function without the ``test_`` prefix."""
    return row.function.removeprefix("test_")


def derive_old_names(rows: Iterable[InventoryRow]) -> list[OldName]:
    """One OldName per (repo, old name, selector) where the old name is not the op id,
    sorted; the selector carries ``@file`` when the op is in several files."""
    rows = list(rows)
    files: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        files.setdefault((r.repo, r.op), set()).add(r.file_name)
    out: dict[tuple[str, str, str], OldName] = {}
    for r in rows:
        old = old_name_of(r)
        if not old or old == r.op:
            continue
        several = len(files[(r.repo, r.op)]) > 1
        selector = f"{r.op}@{r.file_name}" if several else r.op
        out.setdefault((r.repo, old, selector), OldName(r.repo, old, selector, r.nodeid))
    return sorted(out.values(), key=astuple)


def render_old_names(names: list[OldName]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(OLD_NAME_FIELDS)
    writer.writerows(astuple(n) for n in names)
    return buf.getvalue()


def write_old_names(path: str | os.PathLike, names: list[OldName]) -> None:
    atomic_write_text(path, render_old_names(names))


def old_names_source(ops_dir: str | os.PathLike) -> str:
    """How a warning names the old-names file of ``ops_dir``: ``ops/old_names.csv``."""
    return f"{Path(ops_dir).name or Path(ops_dir).resolve().name}/{OLD_NAMES_FILE}"


def load_old_names(path: str | os.PathLike) -> list[OldName]:
    """Read ``old_names.csv``; a missing file is no mapping, a malformed one an error."""
    path = Path(path)
    if not path.is_file():
        return []
    reader = csv.DictReader(io.StringIO(read_text(path)))
    if reader.fieldnames != OLD_NAME_FIELDS:
        raise ZlbenchError(f"{path}: not an old-names file (expected columns {OLD_NAME_FIELDS})")
    out = []
    for n, rec in enumerate(reader, start=2):
        if None in rec or any(v is None or v == "" for v in rec.values()):
            raise ZlbenchError(f"{path}: line {n}: expected {len(OLD_NAME_FIELDS)} non-empty cells")
        out.append(OldName(**rec))
    return out


DERIVED = "derived from the inventory"  # OldNames.source without an old_names.csv


class OldNames:
    """The mapping of one ops dir, per repo: old name -> the rows it names; ``source``
    says where it came from in the warning of a use (``ops/old_names.csv``)."""

    def __init__(self, names: Iterable[OldName] = (), source: str = DERIVED):
        self.source = source
        self._map: dict[tuple[str, str], list[OldName]] = {}
        for n in names:
            self._map.setdefault((n.repo, n.old_name), []).append(n)

    def lookup(self, repo: str, selector: str) -> list[OldName]:
        """The rows old name ``selector`` names in ``repo`` ([] when it is none); an
        ``@file`` keeps those of that file (base name, ``.py`` optional)."""
        name, _, file = selector.partition("@")
        found = self._map.get((repo, name), [])
        if file:
            want = file if file.endswith(".py") else f"{file}.py"
            found = [n for n in found if n.file_name == want]
        return list(found)

    def using(self, spec: str, repo: str, selector: str, warn: Warn | None = None) -> list[str]:
        """The selectors old name ``selector`` stands for in ``repo`` ([] when it is
        none there), said in one warning line (``old name abs_inplace: using abs_
        (ops/old_names.csv)``); an old name of tests in several files must name its
        file, as an ambiguous op id must (ZlbenchError). The one rule of every
        command's ``--ops`` / ``--ops-file`` and of ``zlbench run --op``; the caller
        first made sure ``selector`` is no current op id (a current op id wins)."""
        found = self.lookup(repo, selector)
        if not found:
            return []
        files = {n.file_name for n in found}
        if len(files) > 1:
            line = self.line(repo, selector)
            raise ZlbenchError(f"op spec {spec!r}: {line}, in {len(files)} files: name one of them")
        using = [n.selector for n in found]
        note(f"warning: old name {selector}: using {', '.join(using)} ({self.source})", warn)
        return using

    def line(self, repo: str, selector: str) -> str:
        """``'abs_inplace' is the old name of abs_`` ("" when it is none)."""
        found = self.lookup(repo, selector)
        if not found:
            return ""
        return f"{selector!r} is the old name of {', '.join(n.selector for n in found)}"


def translate_dismiss(
    entries: list[DismissEntry],
    repo: str,
    has_op: Callable[[str], bool],
    old: OldNames,
    warn: Warn | None = None,
) -> list[DismissEntry]:
    """``entries`` plus, for each entry of ``repo`` (or of every repo) naming no op of
    ``repo`` (``has_op``: is this an op id there) but an old name there, one entry per
    op of that name, for ``repo`` (an old dismiss list meant the main repo by a bare
    name), each with a note line. An entry naming an op keeps it, noted when it is an
    old name too."""
    out = list(entries)
    for e in entries:
        if e.repo not in (None, repo):
            continue
        op_id = split_selector(e.op)[0]
        line = old.line(repo, e.op)
        if not line:
            continue
        where = f"note: dismiss list line {e.line}"
        if has_op(op_id):
            note(f"{where}: {e.op!r} is an op of {repo} (dismissed); {line} (not dismissed)", warn)
            continue
        found = old.lookup(repo, e.op)
        note(f"{where}: {line}: dismissed as {', '.join(n.selector for n in found)}", warn)
        out += [replace(e, op=n.selector, repo=repo) for n in found]
    return out
