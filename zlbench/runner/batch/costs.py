"""Expected seconds per op, for cost-balanced shards and GPUs (docs/screening.md).

Recorded durations come from an ``ops_status.csv`` (its ``seconds`` column: an
op's wall time from its BEGIN to its END line, i.e. without the process start and
FlagGems import), divided by the dtypes the op measured (``dtype_used``) and
multiplied by those it will measure (``--dtypes``, else :data:`OWN_DTYPES`; a replay
asking none measures a recorded op's own dtypes again, as many as it recorded:
``estimate_costs``' ``own``, ``runner.batch.plan.replayed_dtypes``).
Source: that file, or a dir holding one (a batch dir, a baseline dir that ships
one, a gate output's ``results/``). An op without a recorded
duration is estimated: the median of the recorded ops of its family (the
Benchmark class of the inventory, e.g. ``UnaryPointwiseBenchmark``), else the
median of every recorded op, else :data:`DEFAULT_OP_SECONDS`. With no recorded
duration at all every op costs the same and the deal is today's hash deal
(:mod:`zlbench.runner.batch.balance`).

A shard's expected wall time (:func:`shard_wall`) is its busiest GPU's sum of op
costs plus one process start per pytest process that GPU runs
(:data:`PROCESS_START_S`, measured on the H200: docs/measurements.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import RunStatus, read_ops_status
from zlbench.protocol.layout import OPS_STATUS, op_key
from zlbench.protocol.ops import run_name_for
from zlbench.runner.catalog.inventory import inventory_path, load_inventory

# Estimate for an op when nothing at all was recorded (the median op of the
# shipped H200 replay screen took 1.0 s; a record-mode op takes longer).
DEFAULT_OP_SECONDS = 2.0
# Process start + FlagGems import + collection of one pytest process on the H200
# (examples/h200-gate-v1: 105 s wall - 82 s of op time, one process).
PROCESS_START_S = 23.0
# The same for the gate's op path beside the kernel replay, an interleaved A/B whose
# sides each run their ops in one process (one dtype group, no test twice): its start
# is mostly Python, torch and FlagGems imported, so it follows the host. On three H100
# hosts it was 1.57-1.71 times FlagGems' import in that gate (a rebuild worker's
# ``load`` phase): 18 s at 11.5 s, 12.0 s at 7.0 s, 10.3 s at 6.5 s (v5's broad change,
# docs/measurements.md, thirty-seventh, forty-second and forty-third sessions; the
# forty-fourth's, held out: 13.7 s at 8.3 s, 1.65 times). Refit in the forty-fourth
# session from 4.1 times and at most 35 s, fitted to gates of 1-6 ops among which the
# v7 slice's ran an op a process a side (3.9-4.4 times the import over five such gates);
# the forecast does not count the A/B's processes, so it undercounts a gate like that.
AB_START_PER_LOAD = 1.62
# Without the host's pace (the forecast after the screen): the same at the three gates'
# median import, 7.0 s.
AB_START_S = round(AB_START_PER_LOAD * 7.0, 1)


def ab_start_s(load_s: float | None = None) -> float:
    """The interleaved A/B op path's start: :data:`AB_START_PER_LOAD` times this host's
    import of FlagGems (``load_s``, a rebuild worker's load phase in this gate); without
    ``load_s``, :data:`AB_START_S`."""
    return AB_START_PER_LOAD * load_s if load_s else AB_START_S


# Dtypes an op measures when none are asked: FlagGems float benchmarks offer
# float16, float32 and bfloat16.
OWN_DTYPES = 3
MIN_OP_SECONDS = 0.001  # every op costs something: the first N ops open the N bins
_NO_COST = (RunStatus.SKIP,)  # rows that never ran: no duration to learn from


@dataclass(frozen=True)
class OpCosts:
    """Expected seconds of every op of a selection; ``recorded``: keys with a measured duration."""

    seconds: dict[str, float]
    recorded: frozenset[str]

    def estimated(self) -> list[str]:
        return sorted(k for k in self.seconds if k not in self.recorded)


def durations_file(source: Path) -> Path:
    """The ops_status.csv of ``source`` (the file itself or a dir holding one)."""
    path = Path(source)
    if path.is_dir():
        path = path / OPS_STATUS
    if not path.is_file():
        raise ZlbenchError(f"no recorded durations: {path} not found (give an ops_status.csv)")
    return path


def load_durations(source: Path, per_dtype: bool = True) -> dict[str, float]:
    """``repo/run_name`` -> seconds per dtype of each op that ran (SKIP rows left out):
    its recorded seconds over the number of dtypes it measured (``dtype_used``);
    ``per_dtype=False``: the recorded seconds as they are."""
    return {
        key: seconds / (dtypes if per_dtype else 1) for key, seconds, dtypes in _recorded(source)
    }


def load_dtype_counts(source: Path) -> dict[str, int]:
    """``repo/run_name`` -> the dtypes each op of ``source``'s ops_status.csv measured
    (``dtype_used``; at least 1), for the ops :func:`load_durations` reads."""
    return {key: dtypes for key, _, dtypes in _recorded(source)}


def _recorded(source: Path) -> list[tuple[str, float, int]]:
    """(``repo/run_name``, seconds, dtypes measured) of each op of ``source``'s
    ops_status.csv that ran (SKIP rows and ops under MIN_OP_SECONDS left out)."""
    return [
        (op_key(st.repo, st.run_name), float(st.seconds), _dtype_count(st.dtype_used))
        for st in read_ops_status(durations_file(source))
        if st.status not in _NO_COST and st.seconds >= MIN_OP_SECONDS
    ]


def _dtype_count(dtype_used: str) -> int:
    return max(1, len([d for d in dtype_used.split(",") if d.strip()]))


def dtypes_per_op(dtypes: list[str] | tuple[str, ...]) -> int:
    """Dtypes each op will measure: those asked, else :data:`OWN_DTYPES` (its own list)."""
    return len(dtypes) if dtypes else OWN_DTYPES


def op_families(ops_dir: Path, repos: Iterable[str]) -> dict[str, str]:
    """``repo/run_name`` -> Benchmark class, for every op of the inventories of ``repos``."""
    families: dict[str, str] = {}
    for repo in repos:
        path = inventory_path(ops_dir, repo)
        if not path.is_file():
            continue
        for row in load_inventory(path):  # the op's run_name, with or without @file
            for run_name in (row.op, run_name_for(f"{row.op}@{row.file_name}")):
                families.setdefault(op_key(repo, run_name), row.bench_class)
    return families


def estimate_costs(
    keys: Iterable[str],
    recorded: Mapping[str, float],
    families: Mapping[str, str],
    dtypes: int = 1,
    own: Mapping[str, int] | None = None,
) -> OpCosts:
    """Expected seconds for each of ``keys``: recorded (seconds per dtype), else the
    family median, else the overall median; times ``dtypes``, the dtypes each op runs,
    or a recorded op's own count in ``own`` (op key -> the dtypes it measures again: a
    replay of its recorded rows)."""
    own = own or {}
    keys = sorted(set(keys))
    known = {k: recorded[k] for k in keys if k in recorded}
    pool = list(recorded.values())
    overall = statistics.median(pool) if pool else DEFAULT_OP_SECONDS
    by_family: dict[str, list[float]] = {}
    for k, s in recorded.items():
        if families.get(k):
            by_family.setdefault(families[k], []).append(s)
    seconds = {}
    for k in keys:
        if k in known:
            seconds[k] = max(known[k] * own.get(k, dtypes), MIN_OP_SECONDS)
            continue
        fam = by_family.get(families.get(k, ""))
        seconds[k] = max((statistics.median(fam) if fam else overall) * dtypes, MIN_OP_SECONDS)
    return OpCosts(seconds, frozenset(known))


def shard_wall(
    gpu_bins: list[list[str]],
    costs: Mapping[str, float],
    per_process: int | None = None,
    start_s: float = PROCESS_START_S,
) -> float:
    """Expected wall seconds of a shard: its busiest GPU, op costs plus process starts
    (``start_s`` each)."""
    walls = [0.0]
    for ops in gpu_bins:
        if not ops:
            continue
        processes = math.ceil(len(ops) / per_process) if per_process else 1
        walls.append(sum(costs[k] for k in ops) + processes * start_s)
    return max(walls)
