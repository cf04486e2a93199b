"""One rule for conflicting records of one op or row (docs/ci.md "What the judge
trusts"), so the gate never judges whichever record it happened to read last.

- A record that zlbench writes exactly once, found twice, is an error (one
  ZlbenchError line, exit 2): an op's row in ``ops_status.csv``
  (:func:`zlbench.models.read_ops_status`), a row key in a ``result.json``
  (:func:`check_unique_rows`), a ``result.json`` per op (:func:`check_same_op`).
- Two writers that each record an op's status may disagree: the runner
  (``ops_status.csv``) sees a timeout or a crash after the benchmark wrote its
  ``result.json``. Then the status judged most strictly wins (:func:`worse_status`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import Row, RunResult, RunStatus

# Most strictly judged first: a failure fails the op; a PASS has its rows judged;
# a SKIP (left out) is judged least.
STRICTNESS = (
    RunStatus.CRASH,
    RunStatus.TIMEOUT,
    RunStatus.ERROR,
    RunStatus.FAIL,
    RunStatus.PASS,
    RunStatus.SKIP,
)


def worse_status(a: RunStatus | None, b: RunStatus | None) -> RunStatus | None:
    """Of two records of one op's status, the one judged more strictly."""
    if a is None or b is None:
        return a if b is None else b
    return min(a, b, key=STRICTNESS.index)


def check_unique_rows(path: Path, rows: Iterable[Row]) -> None:
    """Refuse a result file holding one row key twice."""
    seen: dict[tuple[str, str, str, int], int] = {}
    for i, r in enumerate(rows):
        k = (r.op, r.dtype, r.shape, r.occurrence)
        if k in seen:
            occ = f" #{r.occurrence}" if r.occurrence else ""
            raise ZlbenchError(
                f"{path}: row {r.op} {r.dtype} {r.shape}{occ} appears twice "
                f"(rows {seen[k]} and {i}); which one to judge is not known"
            )
        seen[k] = i


def check_same_op(path: Path, result: RunResult, repo: str, run_name: str) -> None:
    """Refuse a result.json that records another op than the one it stands for."""
    if (result.repo, result.run_name) != (repo, run_name):
        raise ZlbenchError(
            f"{path}: records op {result.repo}/{result.run_name}, but stands for {repo}/{run_name}"
        )
