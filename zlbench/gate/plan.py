"""Which baseline ops a gate judges: the baseline's, narrowed by ``--ops`` / ``--ops-file``
(the SPEC grammar of every command: :mod:`zlbench.protocol.ops`).

A SPEC that names no baseline op is an input error (one line, exit 2, with the
closest baseline op), never a silently smaller gate: every SPEC of ``--ops``, and
every line of an ops file except one that names an op of FlagGems' inventory (a
tier file wider than the baseline, e.g. ``ops/tiers/nightly.txt`` against a
baseline of the PR tier: those ops are skipped with one warning line)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.protocol.layout import split_op_key
from zlbench.protocol.ops import (
    op_name_of,
    parse_spec,
    read_ops_file,
    select_keys,
    selector_for,
    spec_matches,
)

__all__ = ["baseline_scope", "read_ops_file", "suggest_op"]


def suggest_op(spec: str, keys: Iterable[str]) -> str | None:
    """The op key or selector closest to ``spec`` among ``keys`` (difflib), or None."""
    keys = sorted(keys)
    try:
        repo, selector = parse_spec(spec)
    except ZlbenchError:
        return None
    names = {selector_for(split_op_key(k)[1]): k for k in keys}
    # a plain op name is also compared with the ops' names (bmmm -> bmm@test_bmm.py)
    plain = {op_name_of(k): selector_for(split_op_key(k)[1]) for k in reversed(keys)}
    hit = difflib.get_close_matches(selector, list(names), n=1, cutoff=0.6)
    if not hit and "@" not in selector:
        hit = [plain[h] for h in difflib.get_close_matches(selector, list(plain), 1, 0.6)]
    if not hit:
        return None
    return f"{repo}:{hit[0]}" if repo else hit[0]


def baseline_scope(
    baseline: BaselineSet,
    specs: list[str] | None,
    *,
    source: str = "--ops",
    known: Iterable[str] | None = None,
) -> tuple[set[str] | None, list[str]]:
    """(op keys to judge or None for all, the specs skipped as outside the baseline).

    A SPEC names a baseline op as everywhere: ``[repo:]selector`` or the op key
    ``<repo>/<run_name>``; a selector is also matched by its run name, and a plain op
    name by the one baseline op of that name (several: one line listing them,
    :func:`zlbench.protocol.ops.select_keys`). ``source``
    names where the specs came from (``--ops`` or the ops file's path) in the
    error. ``known``: the op keys of FlagGems' inventory (``repo/op`` and
    ``repo/op__at__file``) when the specs come from an ops file; a SPEC that
    matches no baseline op but one of these is returned as skipped, any other
    unmatched SPEC is a ZlbenchError naming it (with a close match)."""
    if not specs:
        return None, []
    chosen: set[str] = set()
    skipped, wrong = [], []
    known_keys = list(known) if known is not None else []
    for spec in specs:
        hits = select_keys(spec, baseline.ops, f" of baseline {baseline.path}")
        chosen |= hits
        if hits:
            continue
        if any(spec_matches(spec, k) for k in known_keys):
            skipped.append(spec)
        else:
            wrong.append(spec)
    if wrong:
        raise ZlbenchError(_unmatched_line(wrong, baseline, source, known is not None))
    if not chosen:
        raise ZlbenchError(
            f"none of the requested ops ({', '.join(specs[:5])}) are in baseline {baseline.path}"
        )
    return chosen, skipped


def _unmatched_line(wrong: list[str], baseline: BaselineSet, source: str, inv: bool) -> str:
    parts = []
    for spec in wrong[:5]:
        near = suggest_op(spec, baseline.ops)
        parts.append(f"{spec!r}" + (f" (did you mean {near!r}?)" if near else ""))
    more = f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
    verb = "names" if len(wrong) == 1 else "name"
    where = f"baseline {baseline.path}" + (" or the FlagGems inventory" if inv else "")
    return f"{source}: {', '.join(parts)}{more} {verb} no op of {where}"
