"""Read a results dir and a baseline dir into plain in-memory sets.

A results dir is any of: a batch dir (``ops_status.csv`` and/or
``<repo>/<run_name>/result.json``), a gate output dir (``results/`` holding the
batch, ``confirm/<k>/`` holding the confirmation re-measures) or a single run
dir (``result.json``). Reading only: nothing here writes a file. Every problem
with the input is one :class:`ZlbenchError` line naming the file.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
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
)

LOG_TAIL_LINES = 20
RESULTS_DIR = "results"  # a gate dir's measured batch
CONFIRM_DIR = "confirm"  # a gate dir's confirmation passes, confirm/<i>/


def op_key(repo: str, run_name: str) -> str:
    """The identity of an op across results and baselines: ``<repo>/<run_name>``."""
    return f"{repo}/{run_name}"


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
    path = Path(path)
    if not path.is_dir():
        raise ZlbenchError(f"{path}: results dir not found")
    if (path / "result.json").is_file():
        return ResultsSet(path, _ops_of([_load_run_dir(path)]))
    if (path / RESULTS_DIR).is_dir():
        inner = load_results(path / RESULTS_DIR)
        confirm_root = path / CONFIRM_DIR
        passes = (
            sorted(confirm_root.iterdir(), key=lambda p: pass_order(p.name))
            if confirm_root.is_dir()
            else []
        )
        inner.confirm = [load_results(p).sample_rows() for p in passes if p.is_dir()]
        inner.path = path
        return inner
    return ResultsSet(path, _load_batch_dir(path))


def pass_order(name: str) -> tuple[int, str]:
    """The order of a gate dir's ``confirm/<name>/`` passes: numbered ones by number,
    then any others by name."""
    return (int(name), "") if name.isdigit() else (1 << 30, name)


def _ops_of(runs: Iterable[OpRun]) -> dict[str, OpRun]:
    return {r.key: r for r in runs}


def _load_run_dir(run_dir: Path, status: OpStatus | None = None) -> OpRun:
    result = None
    if (run_dir / "result.json").is_file():
        result = load_json_model(run_dir / "result.json", RunResult)
    if result is None and status is None:
        raise ZlbenchError(f"{run_dir}: neither result.json nor an ops_status.csv entry")
    repo = status.repo if status else result.repo
    run_name = status.run_name if status else result.run_name
    op = status.op if status else result.op
    st = status.status if status else result.status
    return OpRun(repo, run_name, op, st, result, status, log_tail(run_dir / "run.log"))


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return text.rstrip("\n").splitlines()[-lines:] if text.strip() else []


def _load_batch_dir(path: Path) -> dict[str, OpRun]:
    status_file = path / "ops_status.csv"
    statuses = read_ops_status(status_file) if status_file.is_file() else []
    runs: dict[str, OpRun] = {}
    for st in statuses:
        run_dir = path / (st.run_dir or f"{st.repo}/{st.run_name}")
        runs[op_key(st.repo, st.run_name)] = _load_run_dir(run_dir, st)
    for result_file in sorted(path.glob("*/*/result.json")):
        key = op_key(result_file.parent.parent.name, result_file.parent.name)
        if key not in runs:
            run = _load_run_dir(result_file.parent)
            runs[run.key] = run
    if not runs and not (path / "ops_status.csv").is_file():
        raise ZlbenchError(
            f"{path}: not a results dir (no result.json, ops_status.csv or "
            "<repo>/<run_name>/result.json)"
        )
    return runs


# --------------------------------------------------------------------------- baseline


def load_baseline(path: str | Path) -> BaselineSet:
    path = Path(path)
    if not path.is_dir():
        raise ZlbenchError(f"{path}: baseline dir not found")
    manifest = load_yaml_model(path / "manifest.yaml", BaselineManifest)
    keys = manifest.ops or sorted(
        op_key(p.parent.parent.name, p.parent.name) for p in path.glob("*/*/result.json")
    )
    ops: dict[str, BaselineResult] = {}
    for key in keys:
        if key.count("/") != 1:
            raise ZlbenchError(
                f"{path / 'manifest.yaml'}: field 'ops': entry {key!r} is not <repo>/<run_name>"
            )
        result_file = path / key / "result.json"
        if not result_file.is_file():
            raise ZlbenchError(
                f"{result_file}: missing (the manifest lists op {key}); "
                "run `zlbench baseline verify` on the baseline"
            )
        ops[key] = load_json_model(result_file, BaselineResult)
    if not ops:
        raise ZlbenchError(f"{path}: baseline holds no ops")
    return BaselineSet(path, manifest, ops)
