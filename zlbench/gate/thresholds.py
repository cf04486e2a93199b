"""Thresholds: which relative change a row may show before it is judged.

Resolution for one row, most specific first: a per-row override matching op,
dtype and shape; one matching op and dtype or op and shape; one matching the op
only; the ``ops:`` map; the default. The result is then floored at
``noise_multiplier`` times the baseline row's measured noise, so a row that
the baseline itself saw move by 3 % is never judged at 2 %.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    BaselineResult,
    RowKey,
    ThresholdDefaults,
    ThresholdsFile,
    load_yaml_model,
)


def load_thresholds(
    path: str | Path | None, defaults: ThresholdDefaults, ops: Iterable[str] | None = None
) -> ThresholdsFile:
    """The thresholds of a gate: the baseline manifest's defaults, with the
    fields that a ``--thresholds`` yaml sets taking precedence. ``ops``: every name a
    per-op override may match (:func:`override_names`); an override naming none of
    them is an error (:func:`check_override_ops`), never ignored while shown."""
    base = ThresholdsFile.model_validate(defaults.model_dump())
    if path is None:
        merged, where = base, "baseline manifest 'thresholds'"
    else:
        loaded = load_yaml_model(path, ThresholdsFile)
        merged = base.model_copy(update={k: getattr(loaded, k) for k in loaded.model_fields_set})
        where = str(path)
    validate_thresholds(merged, where)
    if ops is not None:
        check_override_ops(merged, ops, where)
    return merged


def override_names(results: Iterable[BaselineResult]) -> set[str]:
    """The names an override may use for the ops of ``results``: each op's run name
    and its rows' op names, what :func:`configured_threshold` and :func:`op_threshold`
    match."""
    return {n for res in results for n in (res.run_name, *(r.op for r in res.rows))}


def check_override_ops(th: ThresholdsFile, names: Iterable[str], where: str) -> None:
    """Refuse an ``ops``, ``rows`` or ``paired_ops`` entry whose op matches no name
    in ``names`` (no row would ever use it): one line naming the field, with the
    closest name."""
    known = set(names)
    fields = [(f"ops.{op}", op) for op in th.ops]
    fields += [(f"rows.{i}.op", o.op) for i, o in enumerate(th.rows)]
    fields += [(f"paired_ops.{op}", op) for op in th.paired_ops]
    for field, op in fields:
        if op not in known:
            near = difflib.get_close_matches(op, sorted(known), n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ZlbenchError(
                f"{where}: field '{field}': {op!r} is no op of the baseline{hint}; "
                "an override for it would never apply"
            )


# A floor of 10x the baseline's noise already makes a 1 % noise row a 10 % threshold;
# far larger (or .inf / .nan) would let every regression pass.
MAX_NOISE_MULTIPLIER = 10.0
MAX_CONFIRM_REPEATS = 10  # each confirmation pass re-measures every flagged op


def validate_thresholds(th: ThresholdsFile, where: str) -> None:
    """Relative thresholds must lie in [0, 1) and the noise multiplier in [0, 10],
    finite (a NaN compares false with everything, so it is caught here too); one line
    naming the field otherwise."""
    checks: list[tuple[str, float | None]] = [
        ("default", th.default),
        ("improvement", th.improvement),
        ("op_aggregate", th.op_aggregate),
    ]
    checks += [(f"ops.{op}", t) for op, t in th.ops.items()]
    checks += [(f"rows.{i}.threshold", o.threshold) for i, o in enumerate(th.rows)]
    checks += [(f"paired_ops.{op}", t) for op, t in th.paired_ops.items()]
    for name, value in checks:
        if value is not None and not 0.0 <= value < 1.0:
            raise ZlbenchError(f"{where}: field '{name}': {value} is not in [0, 1)")
    if not 0.0 <= th.noise_multiplier <= MAX_NOISE_MULTIPLIER:
        raise ZlbenchError(
            f"{where}: field 'noise_multiplier': {th.noise_multiplier} is not in "
            f"[0, {MAX_NOISE_MULTIPLIER:g}]"
        )
    if not 0 <= th.confirm_repeats <= MAX_CONFIRM_REPEATS:
        raise ZlbenchError(
            f"{where}: field 'confirm_repeats': {th.confirm_repeats} is not in "
            f"[0, {MAX_CONFIRM_REPEATS}] (each re-measures every flagged op)"
        )


def _op_matches(name: str, key_op: str, run_name: str) -> bool:
    return name in (key_op, run_name)


def configured_threshold(th: ThresholdsFile, key: RowKey) -> float:
    """The threshold configured for a row, before the noise floor."""
    best: tuple[int, float] | None = None
    for o in th.rows:
        if not _op_matches(o.op, key.op, key.run_name):
            continue
        if o.dtype is not None and o.dtype != key.dtype:
            continue
        if o.shape is not None and o.shape != key.shape:
            continue
        spec = (o.dtype is not None) + (o.shape is not None)
        if best is None or spec >= best[0]:  # later entries win ties
            best = (spec, o.threshold)
    if best is not None:
        return best[1]
    return op_threshold(th, key.op, key.run_name)


def op_threshold(th: ThresholdsFile, op: str, run_name: str) -> float:
    for name in (op, run_name):
        if name in th.ops:
            return th.ops[name]
    return th.default


def noise_floor(th: ThresholdsFile, noise: float) -> float:
    return th.noise_multiplier * max(noise, 0.0)


def row_threshold(th: ThresholdsFile, key: RowKey, noise: float) -> float:
    """Regression threshold of a row: configured, floored by the baseline noise."""
    return max(configured_threshold(th, key), noise_floor(th, noise))


def improvement_threshold(th: ThresholdsFile, key: RowKey, noise: float) -> float:
    if th.improvement is None:
        return row_threshold(th, key, noise)
    return max(th.improvement, noise_floor(th, noise))


def aggregate_threshold(th: ThresholdsFile, op: str, run_name: str) -> float:
    """Threshold of the geometric mean of an op's row ratios."""
    if th.op_aggregate is not None:
        return th.op_aggregate
    return op_threshold(th, op, run_name)
