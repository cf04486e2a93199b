"""Which baseline ops a gate judges: the baseline's, narrowed by ``--ops`` / ``--ops-file``."""

from __future__ import annotations

from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet


def read_ops_file(path: str | Path) -> list[str]:
    """One op spec a line; blank lines and ``#`` comments ignored."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ZlbenchError(f"{path}: cannot read ops file: {e.strerror}") from None
    return [s for line in text.splitlines() if (s := line.split("#", 1)[0].strip())]


def baseline_scope(
    baseline: BaselineSet, specs: list[str] | None
) -> tuple[set[str] | None, list[str]]:
    """(op keys to judge or None for all, the specs that matched no baseline op).

    A spec matches an op by ``<repo>/<run_name>``, by run name, or by its selector."""
    if not specs:
        return None, []
    chosen: set[str] = set()
    unmatched = []
    for spec in specs:
        hits = {
            key
            for key, res in baseline.ops.items()
            if spec in (key, res.run_name, res.op) or spec.replace("@", "__at__") == res.run_name
        }
        chosen |= hits
        if not hits:
            unmatched.append(spec)
    if not chosen:
        raise ZlbenchError(
            f"none of the requested ops ({', '.join(specs[:5])}) are in baseline {baseline.path}"
        )
    return chosen, unmatched
