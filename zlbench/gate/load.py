"""Read a results dir and a baseline dir into plain in-memory sets.

A results dir is any of: a batch dir (``ops_status.csv`` and/or
``<repo>/<run_name>/result.json``), a gate output dir (``results/`` holding the
batch, ``confirm/<k>/`` holding the confirmation re-measures) or a single run
dir (``result.json``). Reading only: nothing here writes a file. Every problem
with the input is one :class:`ZlbenchError` line naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import check_intact
from zlbench.gate.conflicts import check_same_op, check_unique_rows, worse_status
from zlbench.models import (
    BaselineManifest,
    BaselineResult,
    MarkerKind,
    OpStatus,
    Row,
    RowKey,
    RunResult,
    RunStatus,
    counts_of_kind,
    load_json_model,
    load_yaml_model,
    read_ops_status,
    resolve_inside,
)
from zlbench.models.packed import packed_label
from zlbench.protocol.layout import (
    BATCH_JSON,
    CODEGEN_SCREEN_DIR,
    CONFIRM_DIR,
    INTERRUPTED,
    MANIFEST_YAML,
    OPS_STATUS,
    RESULT_JSON,
    RESULTS_DIR,
    RUN_LOG,
    VERDICT_JSON,
    op_key,
)

LOG_TAIL_LINES = 20
LOG_TAIL_BYTES = 64 * 1024  # of a run.log read for its tail, at most


def in_scope(key: str, scope: Collection[str] | None) -> bool:
    """Whether op ``key`` is among the op keys of ``scope`` (None: every op)."""
    return scope is None or key in scope


@dataclass
class OpRun:
    """One op of a results dir: its status and, when it finished, its result."""

    repo: str
    run_name: str
    op: str  # the selector (``zlbench run --op``)
    status: RunStatus | None
    result: RunResult | None = None
    op_status: OpStatus | None = None
    log_tail: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return op_key(self.repo, self.run_name)

    def rows(self) -> dict[RowKey, Row]:
        if self.result is None:
            return {}
        return {r.key(self.repo, self.run_name): r for r in self.result.rows}


@dataclass
class ResultsSet:
    path: Path
    ops: dict[str, OpRun]
    # One mapping per confirmation pass (``<gate out>/confirm/<k>/``).
    confirm: list[dict[RowKey, Row]] = field(default_factory=list)

    def rows(self) -> dict[RowKey, Row]:
        out: dict[RowKey, Row] = {}
        for run in self.ops.values():
            out.update(run.rows())
        return out

    def sample_rows(self) -> dict[RowKey, Row]:
        """Rows fit to confirm a first measurement with: of ops that PASSed and whose
        configs stayed pinned (a pass that failed or fell back proves nothing)."""
        out: dict[RowKey, Row] = {}
        for run in self.ops.values():
            res = run.result
            if run.status is not RunStatus.PASS or res is None:
                continue
            if counts_of_kind(res.marker_counts, MarkerKind.REPLAY_FALLBACK):
                continue
            out.update(run.rows())
        return out


@dataclass
class BaselineSet:
    path: Path
    manifest: BaselineManifest
    ops: dict[str, BaselineResult]


# --------------------------------------------------------------------------- results


def load_results(path: str | Path) -> ResultsSet:
    """Every op of a results dir. Paths found in it (run_dir, links) must stay inside
    it, and conflicting records of one op or row are refused or judged by the
    stricter (:mod:`zlbench.gate.conflicts`)."""
    path = Path(path)
    if not path.is_dir():
        raise ZlbenchError(f"{path}: results dir not found")
    if (path / RESULT_JSON).is_file():
        return ResultsSet(path, _ops_of([_load_run_dir(path)]))
    if (path / RESULTS_DIR).is_dir():
        inner = load_results(resolve_inside(path, RESULTS_DIR))
        inner.confirm = [load_results(p).sample_rows() for p in _confirm_passes(path)]
        inner.path = path
        return inner
    return ResultsSet(path, _load_batch_dir(path))


def check_results_root(path: str | Path, results: ResultsSet, wanted: Collection[str]) -> None:
    """Refuse a ``--results`` dir that is part of a results root, with the root to
    pass instead: a gate dir's ``results/`` (its ``confirm/`` and ``codegen/``
    would be left out: unconfirmed flags, untimed ops judged missing) and one op's
    run dir when the gate judges more ops than it holds (``wanted``: the op keys in
    scope; every other op would be "missing")."""
    path = Path(path)
    if path.name == RESULTS_DIR and _looks_like_gate_dir(path.parent):
        raise ZlbenchError(
            f"{path} is the {RESULTS_DIR}/ of gate dir {path.parent}: pass the gate dir "
            f"(its {CONFIRM_DIR}/ and {CODEGEN_SCREEN_DIR}/ say what was re-measured and timed)"
        )
    if not (path / RESULT_JSON).is_file() or not set(wanted) - set(results.ops):
        return
    key = next(iter(results.ops), "?")
    root = _root_above(path)
    hint = f"pass {root}" if root else "pass the gate dir or batch dir that holds it"
    raise ZlbenchError(
        f"{path} is one op's run dir ({key}); {hint}, or judge only that op with --ops {key}"
    )


def _looks_like_gate_dir(path: Path) -> bool:
    return (
        (path / CONFIRM_DIR).is_dir()
        or (path / CODEGEN_SCREEN_DIR).is_dir()
        or (path / VERDICT_JSON).is_file()
    )


def _root_above(run_dir: Path) -> Path | None:
    """The batch dir (``<batch>/<repo>/<run_name>``) above a run dir, or the gate
    dir when that batch is a gate dir's ``results/``; None when neither."""
    batch = run_dir.parent.parent if len(run_dir.parts) > 2 else run_dir.resolve().parent.parent
    if not ((batch / OPS_STATUS).is_file() or (batch / BATCH_JSON).is_file()):
        return None
    if batch.name == RESULTS_DIR and _looks_like_gate_dir(batch.parent):
        return batch.parent
    return batch


def _confirm_passes(gate_dir: Path) -> list[Path]:
    """The ``confirm/<k>/`` dirs of a gate dir in pass order, each inside it."""
    root = resolve_inside(gate_dir, CONFIRM_DIR)
    if not root.is_dir():
        return []
    names = sorted((p.name for p in root.iterdir()), key=pass_order)
    passes = [resolve_inside(gate_dir, f"{CONFIRM_DIR}/{n}") for n in names]
    return [p for p in passes if p.is_dir()]


def pass_order(name: str) -> tuple[int, str]:
    """The order of a gate dir's ``confirm/<name>/`` passes: numbered ones by number,
    then any others by name."""
    # ASCII digits only: "²" is a digit to str.isdigit() but not to int()
    return (int(name), "") if name.isascii() and name.isdigit() else (1 << 30, name)


def _ops_of(runs: Iterable[OpRun]) -> dict[str, OpRun]:
    return {r.key: r for r in runs}


def _load_run_dir(run_dir: Path, status: OpStatus | None = None) -> OpRun:
    """One op's run dir (already known to lie inside its results dir); its
    ops_status.csv row when it has one, which must be of the same op."""
    result_file = resolve_inside(run_dir, RESULT_JSON)
    result = None
    if result_file.is_file():
        result = load_json_model(result_file, RunResult)
        check_unique_rows(result_file, result.rows)
        if status is not None:
            check_same_op(result_file, result, status.repo, status.run_name)
    if result is None and status is None:
        raise ZlbenchError(f"{run_dir}: neither result.json nor an ops_status.csv entry")
    src = status or result
    st = worse_status(status.status if status else None, result.status if result else None)
    log = log_tail(resolve_inside(run_dir, RUN_LOG))
    return OpRun(src.repo, src.run_name, src.op, st, result, status, log)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a run's log: a regular file only (a FIFO or device
    an artifact put there would block), its last :data:`LOG_TAIL_BYTES` bytes only."""
    try:
        if not path.is_file():
            return []
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return []
    return text.rstrip("\n").splitlines()[-lines:] if text.strip() else []


def _load_batch_dir(path: Path) -> dict[str, OpRun]:
    if (path / INTERRUPTED).exists():  # partial: its missing ops would read as missing
        raise ZlbenchError(
            f"{path}: the run that wrote it was interrupted ({INTERRUPTED}): its results "
            "are partial; re-run the gate (or `zlbench batch --resume` it)"
        )
    status_file = path / OPS_STATUS
    statuses = read_ops_status(status_file) if status_file.is_file() else []
    runs: dict[str, OpRun] = {}
    read: set[str] = set()  # real paths of the result.json files read for ops_status rows
    for st in statuses:
        rel = st.run_dir or op_key(st.repo, st.run_name)
        run = _load_run_dir(resolve_inside(path, rel, f"{status_file}: run_dir"), st)
        runs[run.key] = run
        read.add(os.path.realpath(path / rel / RESULT_JSON))
    for result_file in sorted(path.glob("*/*/result.json")):
        rel = result_file.parent.relative_to(path).as_posix()
        run_dir = resolve_inside(path, rel, str(result_file))
        if os.path.realpath(result_file) in read:
            continue
        run = _load_run_dir(run_dir)
        check_same_op(result_file, run.result, *rel.split("/"))  # type: ignore[arg-type]
        if run.key in runs:
            raise ZlbenchError(
                f"{result_file}: a second record of op {run.key}; which one to judge is not known"
            )
        runs[run.key] = run
    if not runs and not status_file.is_file():
        raise ZlbenchError(
            f"{path}: not a results dir (no result.json, ops_status.csv or "
            "<repo>/<run_name>/result.json)"
        )
    return runs


# --------------------------------------------------------------------------- baseline


def load_baseline(path: str | Path) -> BaselineSet:
    """A baseline dir, refused unless it matches its manifest (content hashes, shape
    file: :func:`zlbench.gate.baselines.check_intact`) and holds sane rows."""
    path = Path(path)
    if not path.is_dir():
        raise ZlbenchError(f"{path}: baseline dir not found")
    manifest = load_yaml_model(resolve_inside(path, MANIFEST_YAML), BaselineManifest)
    check_intact(path, manifest)
    keys = manifest.ops or sorted(
        op_key(p.parent.parent.name, p.parent.name) for p in path.glob(f"*/*/{RESULT_JSON}")
    )
    ops = {key: _load_baseline_op(path, key) for key in keys}
    if not ops:
        raise ZlbenchError(f"{path}: baseline holds no ops")
    return BaselineSet(path, manifest, ops)


def _load_baseline_op(path: Path, key: str) -> BaselineResult:
    where = f"{path / MANIFEST_YAML}: field 'ops': entry {key!r}"
    if key.count("/") != 1:
        raise ZlbenchError(f"{where} is not <repo>/<run_name>")
    result_file = resolve_inside(path, key, where) / RESULT_JSON
    if not result_file.is_file():
        raise ZlbenchError(
            f"{result_file}: missing (the manifest lists op {key}); "
            "run `zlbench baseline verify` on the baseline"
        )
    result = load_json_model(result_file, BaselineResult)
    check_unique_rows(result_file, result.rows)
    check_same_op(result_file, result, *key.split("/"))  # type: ignore[arg-type]
    return result


def baseline_shape_file(baseline: BaselineSet) -> Path | None:
    """The shape file a gate measures with: the manifest's ``shape_file``, inside the
    baseline (checked by :func:`load_baseline`), or None (upstream shapes)."""
    name = baseline.manifest.shape_file
    if not name:
        return None
    return resolve_inside(baseline.path, name, f"{baseline.path / MANIFEST_YAML}: shape_file")


def report_label(path: str | os.PathLike) -> str:
    """How a reports names a dir given on the command line, never as an absolute path
    of the machine: a packed tree's copy as its lock names it (``baselines/v7``);
    relative to the working dir when inside it, else ``…/<parent>/<name>``."""
    p = Path(path)
    if (label := packed_label(p)) is not None:
        return label
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return "/".join(["…", *p.parts[-2:]])
