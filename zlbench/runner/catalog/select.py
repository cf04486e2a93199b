"""Which ops a batch runs: selectors -> inventory -> (repo, run_name, node ids).

Selection is exactly one of ``--all``, ``--ops SPEC...`` or ``--ops-file F`` (one
SPEC a line, ``#`` comments). A SPEC (:mod:`zlbench.protocol.ops`, the grammar of
every command) is ``op``, ``op@test_file.py`` (when the op is found in several
files), either with a repo prefix (``vllm:op``), or an op key ``main/run_name``.
A SPEC without repo is looked up in every repo of ``repos`` (default ``["main"]``)
and selected wherever it exists; it is unknown only when no repo has it.

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

    def __init__(self, ops_dir: Path):
        self.ops_dir = Path(ops_dir)
        self._rows: dict[str, list[InventoryRow]] = {}

    def rows(self, repo: str) -> list[InventoryRow]:
        if repo not in self._rows:
            path = inventory_path(self.ops_dir, repo)
            if not path.is_file():
                raise ZlbenchError(
                    f"no inventory for repo {repo!r}: {path} is missing "
                    "(create it with `zlbench inventory`)"
                )
            self._rows[repo] = load_inventory(path)
        return self._rows[repo]


def _resolve(inv: _Inventories, repo: str, op: str) -> SelectedOp:
    sel = select(inv.rows(repo), op)
    return SelectedOp(repo, sel.selector, sel.run_name, tuple(sel.nodeids), sel.skip)


def _resolve_spec(inv: _Inventories, spec: str, repos: list[str]) -> list[SelectedOp]:
    repo, op = parse_spec(spec)
    if repo is not None:
        return [_resolve(inv, repo, op)]
    op_id = split_selector(op)[0]
    having = [r for r in repos if any(row.op == op_id for row in inv.rows(r))]
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
) -> OpSelection:
    """Resolve the selection; see the module docstring. ``dismiss_file`` defaults to
    ``<ops_dir>/dismiss.txt`` (a missing file dismisses nothing).
    ``recheck_left_out``: dismissed and unconditionally skipped ops are run too
    (to see whether they still need to be left out)."""
    specs = list(specs)
    spec_list = _specs_of(all_ops, specs, ops_file)
    repo_list = list(dict.fromkeys(repos)) or ["main"]
    for r in repo_list:
        if r not in REPOS:
            raise ZlbenchError(f"unknown repo {r!r} (known: {', '.join(REPOS)})")
    inv = _Inventories(ops_dir)
    chosen: list[SelectedOp] = []
    if spec_list is None:
        for r in repo_list:
            chosen += [_resolve(inv, r, s) for s in all_selectors(inv.rows(r))]
    else:
        for spec in spec_list:
            chosen += _resolve_spec(inv, spec, repo_list)
    dismiss = load_dismiss(Path(dismiss_file) if dismiss_file else Path(ops_dir) / DISMISS_FILE)
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
