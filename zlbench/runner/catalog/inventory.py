"""Inventory of FlagGems benchmark tests: which test functions measure which op.

Why: FlagGems names an operator by the first non-builtin pytest mark of its
benchmark test (its conftest's ``opid``), not by the file name; one file may
hold several ops and one op may appear in several files (``mm`` in
``test_blas_perf.py`` and ``test_blas_perf_parallel.py``). The inventory is an
AST scan (no import: collecting the real suite needs a GPU) of
``benchmark/test_*.py`` and ``benchmark/test_*/`` subfolders, with the
``op_name`` given to the Benchmark constructor, the Benchmark class (for the
shape-file class-name fallback), unconditional skips, and an optional
``pytest --collect-only`` verification (docs/design.md §5.18).
"""

from __future__ import annotations

import ast
import csv
import io
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import astuple, dataclass, fields, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import REPOS, atomic_write_text, read_text
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import run_name_for
from zlbench.runner.catalog import inventory_ast as _ast
from zlbench.runner.catalog.notes import note


@dataclass(frozen=True)
class InventoryRow:
    """One (op, test node) pair. A row of ``ops/inventory_<repo>.csv``."""

    repo: str  # main | vllm
    op: str  # the op id: first non-builtin pytest mark (what `--op` / `--ops` select)
    op_name: str  # literal op_name= passed to the Benchmark constructor ("" unknown)
    bench_class: str  # Benchmark class constructed in the test ("" unknown)
    file: str  # relative to the checkout, "/" separated: benchmark/test_add.py
    function: str  # test function name
    nodeid: str  # pytest node id (with "[id]" for ops given as pytest.param marks)
    skip: str  # "" or the reason of an unconditional skip
    collected: str  # "yes" | "no" | "" (not verified)

    @property
    def file_name(self) -> str:
        """Base name of the file (what ``op@test_file.py`` names)."""
        return self.file.rsplit("/", 1)[-1]


INVENTORY_FIELDS = [f.name for f in fields(InventoryRow)]


def inventory_path(ops_dir: str | os.PathLike, repo: str) -> Path:
    """``<ops_dir>/inventory_<repo>.csv``."""
    return Path(ops_dir) / f"inventory_{repo}.csv"


def benchmark_files(flaggems_dir: str | os.PathLike) -> list[Path]:
    """``benchmark/test_*.py`` and ``test_*.py`` under ``benchmark/test_*/`` folders."""
    bench = Path(flaggems_dir) / "benchmark"
    if not bench.is_dir():
        raise ZlbenchError(f"{flaggems_dir}: not a FlagGems checkout (no benchmark/ folder)")
    files = [p for p in bench.glob("test_*.py") if p.is_file()]
    for sub in bench.glob("test_*"):
        if sub.is_dir():
            files += [p for p in sub.rglob("test_*.py") if p.is_file()]
    return sorted(files)


def scan_checkout(
    flaggems_dir: str | os.PathLike,
    repo: str = "main",
    *,
    collected: list[str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[InventoryRow]:
    """AST scan of ``<flaggems_dir>/benchmark``; rows sorted by (op, file, nodeid).

    Test functions without any op mark are left out (nothing can select them).
    A file that does not parse (or is not UTF-8) is left out with one warning line
    naming it (``warn``, default stderr): one broken upstream file must not cost
    the inventory of every other op. ``collected``: the node ids of a
    ``pytest --collect-only`` run, to fill the ``collected`` column.
    """
    root = Path(flaggems_dir)
    rows: list[InventoryRow] = []
    say = warn or _stderr
    for path in benchmark_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as e:
            say(f"warning: {rel}: cannot parse (line {e.lineno}): {e.msg}; its ops are left out")
            continue
        except UnicodeDecodeError as e:
            say(f"warning: {rel}: not UTF-8 ({e.reason}); its ops are left out")
            continue
        for t in _ast.scan_module(tree):
            rows.append(
                InventoryRow(
                    repo=repo,
                    op=t.op,
                    op_name=t.op_name,
                    bench_class=t.bench_class,
                    file=rel,
                    function=t.function,
                    nodeid=f"{rel}::{t.function}{t.param_id and f'[{t.param_id}]'}",
                    skip=t.skip,
                    collected="",
                )
            )
    if collected is not None:
        rows = apply_collected(rows, collected)
    return sorted(rows, key=lambda r: (r.op, r.file, r.nodeid))


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def class_bases(flaggems_dir: str | os.PathLike) -> dict[str, list[str]]:
    """Class name -> base class names, for every class defined under benchmark/."""
    bases: dict[str, list[str]] = {}
    for path in sorted((Path(flaggems_dir) / "benchmark").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names = [_ast.dotted_tail(b) for b in node.bases]
                bases.setdefault(node.name, [n for n in names if n])
    return bases


def class_chain(bases: dict[str, list[str]], name: str) -> list[str]:
    """``name`` and its ancestors (as far as ``bases`` knows), depth first, nearest first."""
    out: list[str] = []
    stack = [name]
    while stack:
        cur = stack.pop(0)
        if cur and cur not in out:
            out.append(cur)
            stack = bases.get(cur, []) + stack
    return out


# The inventory CSV of the scripts zlbench replaces: one row per test function, named
# by the function without "test_"; op_names is the Benchmark's op_name, marked_skip "yes"
# for an unconditional skip (its reason was not recorded).
OLD_INVENTORY_FIELDS = ["repo", "op", "op_file", "file", "marked_skip", "collected", "op_names"]
OLD_SKIP_REASON = "unconditional skip (recorded by the old scripts, reason not recorded)"


def load_inventory(
    path: str | os.PathLike, warn: Callable[[str], None] | None = None
) -> list[InventoryRow]:
    """Read an inventory CSV; a missing or malformed file is a ZlbenchError.

    A file in the old scripts' format (:data:`OLD_INVENTORY_FIELDS`) is read with one
    warning line (``warn``, default stderr once per process): its op ids are the old
    names (the test function without ``test_``), as ``ops/inventory_vllm.csv`` was
    carried over (docs/ops.md)."""
    path = Path(path)
    text = read_text(path, missing="inventory not found (run `zlbench inventory`)")
    reader = csv.DictReader(io.StringIO(text))
    old = reader.fieldnames == OLD_INVENTORY_FIELDS
    if reader.fieldnames != INVENTORY_FIELDS and not old:
        raise ZlbenchError(f"{path}: not an inventory (expected columns {INVENTORY_FIELDS})")
    rows = []
    for n, rec in enumerate(reader, start=2):
        if None in rec or any(v is None for v in rec.values()):
            raise ZlbenchError(f"{path}: line {n}: wrong number of columns")
        rows.append(_from_old(path, n, rec) if old else InventoryRow(**rec))
    if old:
        note(
            f"warning: {path}: an inventory of the old scripts (op = test function without "
            "test_), read as such; `zlbench inventory` rebuilds it with zlbench's op ids",
            warn,
        )
    return rows


def _from_old(path: Path, line: int, rec: dict[str, str]) -> InventoryRow:
    """One row of the old scripts' inventory as zlbench's (node id ``file::test_<op>``)."""
    if rec["repo"] not in REPOS or not rec["op"] or not rec["file"]:
        raise ZlbenchError(f"{path}: line {line}: needs a repo of {REPOS}, an op and a file")
    function = f"test_{rec['op']}"
    return InventoryRow(
        repo=rec["repo"],
        op=rec["op"],
        op_name=rec["op_names"],
        bench_class="",
        file=rec["file"],
        function=function,
        nodeid=f"{rec['file']}::{function}",
        skip=OLD_SKIP_REASON if rec["marked_skip"] == "yes" else "",
        collected=rec["collected"],
    )


def inventory_op_keys(ops_dir: str | os.PathLike) -> list[str] | None:
    """Every op key an ops-file SPEC can name in the inventories under ``ops_dir``
    (``repo/op`` and ``repo/op__at__test_file.py``); None when there is none.
    The gate uses it to tell a tier file's op outside the baseline from a typo."""
    keys: set[str] = set()
    found = False
    for repo in REPOS:
        path = inventory_path(ops_dir, repo)
        if not path.is_file():
            continue
        found = True
        for row in load_inventory(path):
            keys |= {op_key(repo, row.op), op_key(repo, run_name_for(f"{row.op}@{row.file_name}"))}
    return sorted(keys) if found else None


def render_inventory(rows: list[InventoryRow]) -> str:
    """CSV text (header + rows)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(INVENTORY_FIELDS)
    for row in rows:
        writer.writerow(astuple(row))
    return buf.getvalue()


def write_inventory(path: str | os.PathLike, rows: list[InventoryRow]) -> None:
    """Atomic write of :func:`render_inventory`."""
    atomic_write_text(path, render_inventory(rows))


def carry_collected(new: list[InventoryRow], old: list[InventoryRow]) -> list[InventoryRow]:
    """Copy the ``collected`` column from an older inventory (same nodeid)."""
    seen = {r.nodeid: r.collected for r in old}
    return [replace(r, collected=seen.get(r.nodeid, r.collected)) for r in new]


def apply_collected(rows: list[InventoryRow], collected: list[str]) -> list[InventoryRow]:
    """Set ``collected`` yes/no from the node ids pytest collected.

    ``rows`` must be in source order (see :func:`scan_checkout`). A row for a
    whole function counts as collected when any of its parametrizations is.
    Rows for ``pytest.param`` marks whose computed id is not what pytest
    collected take pytest's ids, matched by position within the function, when
    the counts agree.
    """
    ids = set(collected)
    real_params: dict[str, list[str]] = {}
    for nodeid in collected:
        if "[" in nodeid:
            real_params.setdefault(nodeid.split("[", 1)[0], []).append(nodeid)
    ours: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if "[" in r.nodeid:
            ours.setdefault(r.nodeid.split("[", 1)[0], []).append(i)
    out = list(rows)
    for func, idxs in ours.items():
        real = real_params.get(func, [])
        if len(real) == len(idxs) and any(rows[i].nodeid not in ids for i in idxs):
            for i, nodeid in zip(idxs, real, strict=True):
                out[i] = replace(out[i], nodeid=nodeid)
    for i, r in enumerate(out):
        hit = r.nodeid in ids or r.nodeid in real_params
        out[i] = replace(r, collected="yes" if hit else "no")
    return out


GEMS_VENDOR_VAR = "GEMS_VENDOR"  # FlagGems' vendor override (skips its nvidia-smi probe)


def collect_nodeids(
    flaggems_dir: str | os.PathLike, *, env: dict[str, str] | None = None, timeout_s: float = 1800
) -> list[str]:
    """``pytest --collect-only -q`` over the benchmark files; the node ids it printed.

    Collection imports FlagGems, whose vendor probe runs nvidia-smi unless
    ``GEMS_VENDOR`` is set and can hang there (up to ``timeout_s``); the benchmark
    processes set it from torch (docs/design.md §5.9), this one sets
    ``GEMS_VENDOR=nvidia`` unless the environment already names a vendor."""
    root = Path(flaggems_dir)
    files = [p.relative_to(root).as_posix() for p in benchmark_files(root)]
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    argv += ["--continue-on-collection-errors", *files]
    env = dict(os.environ if env is None else env)
    if not env.get(GEMS_VENDOR_VAR):
        env[GEMS_VENDOR_VAR] = "nvidia"
    src = root / "src"
    if src.is_dir():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(
            argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise ZlbenchError(f"pytest --collect-only took over {timeout_s:g} s") from None
    ids = [ln.strip() for ln in proc.stdout.splitlines() if "::" in ln and " " not in ln.strip()]
    if not ids:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ZlbenchError(
            f"pytest --collect-only collected nothing (rc {proc.returncode}): {tail[0]}"
        )
    return ids


def verify_collect(
    flaggems_dir: str | os.PathLike, repo: str = "main", *, env: dict[str, str] | None = None
) -> list[InventoryRow]:
    """Scan, then run ``pytest --collect-only -q`` in the checkout to fill ``collected``."""
    return scan_checkout(flaggems_dir, repo, collected=collect_nodeids(flaggems_dir, env=env))
