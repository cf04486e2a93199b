"""Which baseline ops a gate judges: the baseline's, narrowed by ``--ops`` / ``--ops-file``
(the SPEC grammar of every command: :mod:`zlbench.protocol.ops`)."""

from __future__ import annotations

from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.protocol.ops import read_ops_file, spec_matches

__all__ = ["baseline_scope", "read_ops_file"]


def baseline_scope(
    baseline: BaselineSet, specs: list[str] | None
) -> tuple[set[str] | None, list[str]]:
    """(op keys to judge or None for all, the specs that matched no baseline op).

    A SPEC names a baseline op as everywhere: ``[repo:]selector`` or the op key
    ``<repo>/<run_name>``; a selector is also matched by its run name."""
    if not specs:
        return None, []
    chosen: set[str] = set()
    unmatched = []
    for spec in specs:
        hits = {key for key in baseline.ops if spec_matches(spec, key)}
        chosen |= hits
        if not hits:
            unmatched.append(spec)
    if not chosen:
        raise ZlbenchError(
            f"none of the requested ops ({', '.join(specs[:5])}) are in baseline {baseline.path}"
        )
    return chosen, unmatched
