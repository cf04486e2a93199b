"""Which ops a batch runs: selectors -> inventory -> (repo, run_name, node ids).

Selection is exactly one of ``--all``, ``--ops SPEC...`` or ``--ops-file F`` (one
SPEC a line, ``#`` comments). A SPEC (:mod:`zlbench.protocol.ops`, the grammar of
every command) is ``op``, ``op@test_file.py`` (when the op is found in several
files), either with a repo prefix (``vllm:op``), or an op key ``main/run_name``.
A SPEC without repo is looked up in every repo of ``repos`` (default ``["main"]``)
and selected wherever it exists; it is unknown only when no repo has it.

A SPEC or dismiss entry naming no op of a repo but an old scripts' name there
(``abs_inplace``, :mod:`zlbench.runner.catalog.old_names`) resolves to its op(s)
with one warning line (``old name abs_inplace: using abs_ (ops/old_names.csv)``); a
current op id always wins. :func:`current_specs` is the same translation for the
commands that match SPECs against a baseline (gate, report).

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
from zlbench.protocol.ops import parse_spec, read_ops_file, selector_for, split_selector
from zlbench.runner.catalog.dismiss import DismissEntry, find_dismissal, load_dismiss
from zlbench.runner.catalog.inventory import InventoryRow, inventory_path, load_inventory
from zlbench.runner.catalog.notes import Warn, note
from zlbench.runner.catalog.old_names import (
    OLD_NAMES_FILE,
    OldNames,
    derive_old_names,
    load_old_names,
    old_names_source,
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
    # Row picks (runner.batch.parts.row_picks): only these rows, each (benchmark op,
    # dtype, index within them); () = every row.
    rows: tuple[tuple[str, str, int], ...] = ()

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

    def has_inventory(self, repo: str) -> bool:
        return repo in self._rows or inventory_path(self.ops_dir, repo).is_file()

    def has_op(self, repo: str, op_id: str) -> bool:
        return any(row.op == op_id for row in self.rows(repo))

    def old(self, repo: str) -> OldNames:
        """The old names of ``repo``: the ops dir's old_names.csv, else derived from
        its inventory (a private ops dir gets the same rule; none without either)."""
        if repo not in self._old:
            path = self.ops_dir / OLD_NAMES_FILE
            if path.is_file():
                self._old[repo] = OldNames(load_old_names(path), old_names_source(self.ops_dir))
            elif self.has_inventory(repo):
                self._old[repo] = OldNames(derive_old_names(self.rows(repo)))
            else:
                self._old[repo] = OldNames()
        return self._old[repo]


def _resolve(inv: _Inventories, repo: str, op: str) -> SelectedOp:
    sel = select(inv.rows(repo), op, old=inv.old(repo))
    return SelectedOp(repo, sel.selector, sel.run_name, tuple(sel.nodeids), sel.skip)


def _current(
    inv: _Inventories, spec: str, repos: list[str], ids: set[tuple[str, str]]
) -> list[str]:
    """``spec``, or the SPECs of the ops it names when it is an old name (one warning
    line): a name that is an op id of a repo looked in (its inventory, or ``ids``:
    ``(repo, op id)`` pairs known to be current, e.g. a baseline's) is never
    translated, and says so when it is an old name too."""
    repo, op = parse_spec(spec)
    op_id = split_selector(op)[0]
    looked = [repo] if repo is not None else repos
    current = False
    for r in looked:
        here = (r, op_id) in ids or (inv.has_inventory(r) and inv.has_op(r, op_id))
        if here and (line := inv.old(r).line(r, op_id)):
            note(f"note: {op_id!r} is an op of {r} (selected); {line} (not selected)", inv.warn)
        current = current or here
    if current:
        return [spec]
    out = [f"{r}:{sel}" for r in looked for sel in inv.old(r).using(spec, r, op, inv.warn)]
    return out or [spec]


def current_specs(
    ops_dir: Path,
    specs: Iterable[str],
    *,
    repos: Iterable[str] = REPOS,
    current: Iterable[str] = (),
    warn: Warn | None = None,
) -> list[str]:
    """``specs`` with every old scripts' op name replaced by the SPECs of its op(s)
    (``abs_inplace`` -> ``main:abs_``, one warning line each; ``<ops_dir>/old_names.csv``,
    else derived from the ops dir's inventories), for a command that matches SPECs
    against something other than the inventory (gate, report: the baseline's op keys).
    ``current``: op keys (``repo/run_name``) whose op ids are current besides the
    inventory's; a current op id always wins. A name that is no old name is kept, for
    the caller's own error."""
    inv = _Inventories(ops_dir, warn)
    ids = {
        (k.split("/", 1)[0], split_selector(selector_for(k.split("/", 1)[1]))[0]) for k in current
    }
    return [c for spec in specs for c in _current(inv, spec, list(repos), ids)]


def _resolve_spec(inv: _Inventories, spec: str, repos: list[str]) -> list[SelectedOp]:
    repo, op = parse_spec(spec)
    if repo is not None:
        return [_resolve(inv, repo, op)]
    op_id = split_selector(op)[0]
    having = [r for r in repos if inv.has_op(r, op_id)]
    # Where no repo has it, the first repo's resolver names the closest matches.
    return [_resolve(inv, r, op) for r in having or repos[:1]]


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
            for current in _current(inv, spec, repo_list, set()):
                chosen += _resolve_spec(inv, current, repo_list)
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
