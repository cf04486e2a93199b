"""The dismiss list (ops/dismiss.txt): ops a batch never runs, each with a date and a reason.

Format, one entry a line (docs/design.md §5.19)::

    # comment lines and blank lines are ignored
    index_put            # 2025-06-01 hangs the GPU at the 4096x4096 shape (run 1234)
    vllm:fused_moe       # 2025-06-02 needs 2 GPUs
    mm@test_blas_perf.py # 2025-06-03 duplicate of mm in test_mm.py

The spec is an op selector as ``--ops`` takes it; a bare op applies to every repo.
An entry in the seed scripts' format (no date: ``abs`` or ``abs  # flaky``) is
accepted with one warning line naming it, so an old list keeps working; there a
bare op means the main repo, as it did in the old scripts (their ``vllm:op`` named
the other), and an old op name resolves to its op (:mod:`.old_names`). A
malformed date or a date without a reason is an error naming its line.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import read_text

_SPEC_RE = re.compile(r"^(?:(?P<repo>[A-Za-z0-9_.-]+):)?(?P<op>[A-Za-z0-9_.]+(?:@[\w./-]+)?)$")
_TAIL_RE = re.compile(r"^(?P<date>\S+)\s+(?P<reason>\S.*)$")
_DATE_LIKE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$")
Warn = Callable[[str], None]


@dataclass(frozen=True)
class DismissEntry:
    op: str  # selector without repo prefix, e.g. "mm" or "mm@test_blas_perf.py"
    repo: str | None  # None: every repo
    date: _dt.date | None  # None: an undated entry (the seed's format)
    reason: str
    line: int

    @property
    def when(self) -> str:
        """The date as written in batch.json and notes: ISO, or ``undated``."""
        return self.date.isoformat() if self.date else "undated"

    def matches(self, repo: str, op: str) -> bool:
        return self.op == op and self.repo in (None, repo)


def parse_dismiss(
    text: str, source: str = "dismiss.txt", warn: Warn | None = None
) -> list[DismissEntry]:
    """Parse the dismiss list; a malformed entry raises ZlbenchError naming the line,
    an undated one goes to ``warn`` (default: stderr)."""
    warn = warn or _stderr
    entries: list[DismissEntry] = []
    seen: dict[tuple[str | None, str], int] = {}
    for num, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry = _parse_line(line, num, source, warn)
        key = (entry.repo, entry.op)
        if key in seen:
            raise ZlbenchError(
                f"{source}:{num}: {line.split('#')[0].strip()!r} is already "
                f"dismissed at line {seen[key]}"
            )
        seen[key] = num
        entries.append(entry)
    return entries


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _parse_line(line: str, num: int, source: str, warn: Warn) -> DismissEntry:
    spec, sep, tail = line.partition("#")
    spec = spec.strip()
    where = f"{source}:{num}"
    m = _SPEC_RE.match(spec)
    if not m:
        raise ZlbenchError(f"{where}: bad op spec {spec!r} (expected op, repo:op or op@file.py)")
    tail = tail.strip()
    first = tail.split(maxsplit=1)[0] if tail else ""
    if not _DATE_LIKE.match(first):  # the seed's format: no date, a bare op is main's
        repo = m.group("repo") or "main"
        warn(
            f"warning: {where}: {spec!r} has no date (seed format: a bare op is the main "
            f"repo's); write '{repo}:{m.group('op')}  # YYYY-MM-DD reason'"
        )
        return DismissEntry(m.group("op"), repo, None, tail, num)
    t = _TAIL_RE.match(tail)
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


def load_dismiss(path: Path, warn: Warn | None = None) -> list[DismissEntry]:
    """Read a dismiss file; a missing file means nothing is dismissed."""
    if not path.exists():
        return []
    return parse_dismiss(read_text(path), source=str(path), warn=warn)


def find_dismissal(entries: list[DismissEntry], repo: str, op: str) -> DismissEntry | None:
    return next((e for e in entries if e.matches(repo, op)), None)
