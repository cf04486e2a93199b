"""The dismiss list (ops/dismiss.txt): ops a batch never runs, each with a date and a reason.

Format, one entry a line (DESIGN.md §5.19)::

    # comment lines and blank lines are ignored
    index_put            # 2025-06-01 hangs the GPU at the 4096x4096 shape (run 1234)
    vllm:fused_moe       # 2025-06-02 needs 2 GPUs
    mm@test_blas_perf.py # 2025-06-03 duplicate of mm in test_mm.py

The spec is an op selector as ``--ops`` takes it; a bare op applies to every repo.
An entry without ``# YYYY-MM-DD reason`` is an error naming its line.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import read_text

_SPEC_RE = re.compile(r"^(?:(?P<repo>[A-Za-z0-9_.-]+):)?(?P<op>[A-Za-z0-9_.]+(?:@[\w./-]+)?)$")
_TAIL_RE = re.compile(r"^(?P<date>\S+)\s+(?P<reason>\S.*)$")


@dataclass(frozen=True)
class DismissEntry:
    op: str  # selector without repo prefix, e.g. "mm" or "mm@test_blas_perf.py"
    repo: str | None  # None: every repo
    date: _dt.date
    reason: str
    line: int

    def matches(self, repo: str, op: str) -> bool:
        return self.op == op and self.repo in (None, repo)


def parse_dismiss(text: str, source: str = "dismiss.txt") -> list[DismissEntry]:
    """Parse the dismiss list; a malformed entry raises ZlbenchError naming the line."""
    entries: list[DismissEntry] = []
    seen: dict[tuple[str | None, str], int] = {}
    for num, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry = _parse_line(line, num, source)
        key = (entry.repo, entry.op)
        if key in seen:
            raise ZlbenchError(
                f"{source}:{num}: {line.split('#')[0].strip()!r} is already "
                f"dismissed at line {seen[key]}"
            )
        seen[key] = num
        entries.append(entry)
    return entries


def _parse_line(line: str, num: int, source: str) -> DismissEntry:
    spec, sep, tail = line.partition("#")
    spec = spec.strip()
    where = f"{source}:{num}"
    m = _SPEC_RE.match(spec)
    if not m:
        raise ZlbenchError(f"{where}: bad op spec {spec!r} (expected op, repo:op or op@file.py)")
    t = _TAIL_RE.match(tail.strip()) if sep else None
    if not t:
        raise ZlbenchError(
            f"{where}: entry {spec!r} needs a date and a reason: '{spec}  # YYYY-MM-DD reason'"
        )
    try:
        date = _dt.date.fromisoformat(t.group("date"))
    except ValueError:
        raise ZlbenchError(
            f"{where}: entry {spec!r}: bad date {t.group('date')!r} (expected YYYY-MM-DD)"
        ) from None
    return DismissEntry(m.group("op"), m.group("repo"), date, t.group("reason").strip(), num)


def load_dismiss(path: Path) -> list[DismissEntry]:
    """Read a dismiss file; a missing file means nothing is dismissed."""
    if not path.exists():
        return []
    return parse_dismiss(read_text(path), source=str(path))


def find_dismissal(entries: list[DismissEntry], repo: str, op: str) -> DismissEntry | None:
    return next((e for e in entries if e.matches(repo, op)), None)
