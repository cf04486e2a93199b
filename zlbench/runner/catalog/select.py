"""Which ops a batch runs: selectors -> inventory -> (repo, run_name, node ids).

Selection is exactly one of ``--all``, ``--ops SPEC...`` or ``--ops-file F`` (one
SPEC a line, ``#`` comments). A SPEC (:mod:`zlbench.protocol.ops`, the grammar of
every command) is ``op``, ``op@test_file.py`` (when the op is found in several
files), either with a repo prefix (``vllm:op``), or an op key ``main/run_name``.
A SPEC without repo is looked up in every repo of ``repos`` (default ``["main"]``)
and selected wherever it exists; it is unknown only when no repo has it.

A SPEC or dismiss entry naming no op of a repo but an old scripts' name there
(``abs_inplace``, :mod:`zlbench.runner.catalog.old_names`) resolves to its op(s)
with one note line; a current op id always wins.

From the selection are removed, and reported as such: dismissed ops
(ops/dismiss.txt) and ops whose every test is skipped unconditionally (the
inventory's ``skip`` column). ``restrict_to`` (``"<repo>/<run_name>"`` keys, e.g.
a baseline's op set) intersects the selection. Unknown op, ambiguous op,
missing inventory and an empty selection are ZlbenchError (one line, exit 2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import REPOS
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import parse_spec, read_ops_file, split_selector
from zlbench.runner.catalog.dismiss import DismissEntry, find_dismissal, load_dismiss
from zlbench.runner.catalog.inventory import InventoryRow, inventory_path, load_inventory
from zlbench.runner.catalog.notes import Warn, note
from zlbench.runner.catalog.old_names import (
    OLD_NAMES_FILE,
    OldNames,
    derive_old_names,
    load_old_names,
    translate_dismiss,
)
from zlbench.runner.catalog.resolve import all_selectors, select

DISMISS_FILE = "dismiss.txt"


@dataclass(frozen=True)
class SelectedOp:
    repo: str
    op: str  # the selector: "mm" or "mm@test_blas_perf.py"
    run_name: str  # op with "@" -> "__at__"
    nodeids: tuple[str, ...]
    skip: str = ""  # unconditional-skip reason ("" = runs)
    # A row part of an op (runner.batch.parts): (k, n), k 1-based, and the op's own
    # run_name; run_name is then the part's, "<whole>~<k>of<n>".
    part: tuple[int, int] | None = None
    whole: str = ""

    @property
    def key(self) -> str:
        return op_key(self.repo, self.run_name)

    @property
    def whole_run_name(self) -> str:
        """The op's run_name (its own, or the op a part belongs to)."""
        return self.whole or self.run_name

    @property
    def whole_key(self) -> str:
        """The key of the op (its own, or the op a part belongs to)."""
        return op_key(self.repo, self.whole_run_name)


@dataclass
class OpSelection:
    """The ops to run, and those selected but left out (with why)."""

    ops: list[SelectedOp] = field(default_factory=list)
    dismissed: list[tuple[SelectedOp, DismissEntry]] = field(default_factory=list)
    skipped: list[SelectedOp] = field(default_factory=list)  # unconditional skips
    outside: list[SelectedOp] = field(default_factory=list)  # not in restrict_to

    def keys(self) -> list[str]:
        return [o.key for o in self.ops]


class _Inventories:
    """Loads ``inventory_<repo>.csv`` once per repo, on first use."""

    def __init__(self, ops_dir: Path, warn: Warn | None = None):
        self.ops_dir = Path(ops_dir)
        self.warn = warn
        self._rows: dict[str, list[InventoryRow]] = {}
        self._old: dict[str, OldNames] = {}

    def rows(self, repo: str) -> list[InventoryRow]:
        if repo not in self._rows:
            path = inventory_path(self.ops_dir, repo)
            if not path.is_file():
                raise ZlbenchError(
                    f"no inventory for repo {repo!r}: {path} is missing "
                    "(create it with `zlbench inventory`)"
                )
            self._rows[repo] = load_inventory(path, warn=self.warn)
        return self._rows[repo]

    def has_op(self, repo: str, op_id: str) -> bool:
        return any(row.op == op_id for row in self.rows(repo))

    def old(self, repo: str) -> OldNames:
        """The old names of ``repo``: the ops dir's old_names.csv, else derived from
        its inventory (a private ops dir gets the same rule)."""
        if repo not in self._old:
            path = self.ops_dir / OLD_NAMES_FILE
            names = load_old_names(path) if path.is_file() else derive_old_names(self.rows(repo))
            self._old[repo] = OldNames(names)
        return self._old[repo]


def _resolve(inv: _Inventories, repo: str, op: str) -> SelectedOp:
    sel = select(inv.rows(repo), op, old=inv.old(repo))
    return SelectedOp(repo, sel.selector, sel.run_name, tuple(sel.nodeids), sel.skip)


def _resolve_old(inv: _Inventories, spec: str, repo: str, op: str) -> list[SelectedOp] | None:
    """The ops of old name ``op`` in ``repo`` (None: it is none there), with a note; an
    old name of tests in several files is ambiguous, as a current op id is."""
    found = inv.old(repo).lookup(repo, op)
    if not found:
        return None
    line = inv.old(repo).line(repo, op)
    files = {n.file_name for n in found}
    if len(files) > 1:
        raise ZlbenchError(f"op spec {spec!r}: {line}, in {len(files)} files: name one of them")
    note(f"note: {line}: selected as such", inv.warn)
    return [_resolve(inv, repo, n.selector) for n in found]


def _resolve_spec(inv: _Inventories, spec: str, repos: list[str]) -> list[SelectedOp]:
    repo, op = parse_spec(spec)
    op_id = split_selector(op)[0]
    for r in [repo] if repo is not None else repos:
        if inv.has_op(r, op_id) and (line := inv.old(r).line(r, op_id)):
            note(f"note: {op_id!r} is an op of {r} (selected); {line} (not selected)", inv.warn)
    if repo is not None:
        if not inv.has_op(repo, op_id) and (old := _resolve_old(inv, spec, repo, op)):
            return old
        return [_resolve(inv, repo, op)]
    having = [r for r in repos if inv.has_op(r, op_id)]
    if having:
        return [_resolve(inv, r, op) for r in having]
    old = [sel for r in repos for sel in _resolve_old(inv, spec, r, op) or []]
    # Where no repo has it, the first repo's resolver names the closest matches.
    return old or [_resolve(inv, repos[0], op)]


def _specs_of(all_ops: bool, specs: Iterable[str], ops_file: Path | None) -> list[str] | None:
    given = [bool(all_ops), bool(list(specs)), ops_file is not None]
    if sum(given) != 1:
        raise ZlbenchError("select ops with exactly one of --all, --ops SPEC... or --ops-file F")
    if all_ops:
        return None
    out = list(specs) if not ops_file else read_ops_file(ops_file)
    if not out:
        raise ZlbenchError(f"{ops_file}: empty selection (no op listed)")
    return out


def select_ops(
    ops_dir: Path,
    *,
    all_ops: bool = False,
    specs: Iterable[str] = (),
    ops_file: Path | None = None,
    repos: Iterable[str] = (),
    restrict_to: set[str] | None = None,
    dismiss_file: Path | None = None,
    recheck_left_out: bool = False,
    warn: Warn | None = None,
) -> OpSelection:
    """Resolve the selection; see the module docstring. ``dismiss_file`` defaults to
    ``<ops_dir>/dismiss.txt`` (a missing file dismisses nothing).
    ``recheck_left_out``: dismissed and unconditionally skipped ops are run too
    (to see whether they still need to be left out). ``warn``: where warning and
    note lines go (default: stderr, each once per process)."""
    specs = list(specs)
    spec_list = _specs_of(all_ops, specs, ops_file)
    repo_list = list(dict.fromkeys(repos)) or ["main"]
    for r in repo_list:
        if r not in REPOS:
            raise ZlbenchError(f"unknown repo {r!r} (known: {', '.join(REPOS)})")
    inv = _Inventories(ops_dir, warn)
    chosen: list[SelectedOp] = []
    if spec_list is None:
        for r in repo_list:
            chosen += [_resolve(inv, r, s) for s in all_selectors(inv.rows(r))]
    else:
        for spec in spec_list:
            chosen += _resolve_spec(inv, spec, repo_list)
    dismiss_path = Path(dismiss_file) if dismiss_file else Path(ops_dir) / DISMISS_FILE
    dismiss = load_dismiss(dismiss_path, warn=warn)
    for r in dict.fromkeys(op.repo for op in chosen):
        dismiss = translate_dismiss(dismiss, r, lambda o, r=r: inv.has_op(r, o), inv.old(r), warn)
    if recheck_left_out:
        dismiss, chosen = [], [replace(op, skip="") for op in chosen]
    return _filter(chosen, dismiss, restrict_to)


def _filter(
    chosen: list[SelectedOp], dismiss: list[DismissEntry], restrict_to: set[str] | None
) -> OpSelection:
    result = OpSelection()
    seen: set[str] = set()
    for op in chosen:
        if op.key in seen:
            continue
        seen.add(op.key)
        entry = find_dismissal(dismiss, op.repo, op.op)
        if restrict_to is not None and op.key not in restrict_to:
            result.outside.append(op)
        elif entry is not None:
            result.dismissed.append((op, entry))
        elif op.skip:
            result.skipped.append(op)
        else:
            result.ops.append(op)
    if not result.ops:
        raise ZlbenchError(f"empty selection: nothing to run ({_why_empty(result, len(seen))})")
    return result


def _why_empty(result: OpSelection, total: int) -> str:
    parts = [f"{total} op(s) selected"]
    if result.outside:
        parts.append(f"{len(result.outside)} not in the allowed op set (baseline)")
    if result.dismissed:
        parts.append(f"{len(result.dismissed)} dismissed")
    if result.skipped:
        parts.append(f"{len(result.skipped)} skipped unconditionally")
    return ", ".join(parts)
