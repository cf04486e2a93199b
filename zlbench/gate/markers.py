"""Which rows the marker lines of a run make FALLBACK (docs/design.md §4).

* Any ``AUTOTUNE_REPLAY_FALLBACK``: its configs were not pinned, so the numbers
  mean nothing for the compiler change. A marker that names its row fails that
  row; one that names no row fails every measured row of the op.
* ``BENCHMARK_DIRECT_NO_CUDAGRAPH`` (or ``Row.no_cudagraph``) fails a row whose
  baseline row was timed with CUDA graphs. Markers that name no row fail the op
  when the run has more of them than the baseline had.
"""

from __future__ import annotations

from zlbench.gate.load import OpRun
from zlbench.models import BaselineResult, Marker, MarkerKind, Row, RowKey, counts_of_kind


def _kind_count(counts: dict[str, int], kind: MarkerKind) -> int:
    return sum(counts_of_kind(counts, kind).values())


def _split(markers: list[Marker], counts: dict[str, int], kind: MarkerKind):
    """(markers naming a row, number of markers naming none) of one kind."""
    of_kind = [m for m in markers if m.kind is kind]
    named = [m for m in of_kind if m.dtype is not None and m.shape_detail is not None]
    unnamed = len(of_kind) - len(named) + max(0, _kind_count(counts, kind) - len(of_kind))
    return named, unnamed


def row_fallbacks(
    run: OpRun, base: BaselineResult, rows: dict[RowKey, Row]
) -> tuple[dict[RowKey, str], str]:
    """(row key -> fallback reason, op-level fallback reason or "")."""
    res = run.result
    if res is None:
        return {}, ""
    out: dict[RowKey, str] = {}
    op_reason = ""
    named, unnamed = _split(res.markers, res.marker_counts, MarkerKind.REPLAY_FALLBACK)
    for m in named:
        for k in rows:
            if (k.dtype, k.shape) == (m.dtype, m.shape_detail):
                out.setdefault(k, m.line())
    if unnamed:
        op_reason = f"{unnamed} {MarkerKind.REPLAY_FALLBACK.value} marker(s) in the op"
        for k in rows:
            out.setdefault(k, op_reason)
    base_rows = {r.key(base.repo, base.run_name): r for r in base.rows}
    named_cg, unnamed_cg = _split(res.markers, res.marker_counts, MarkerKind.NO_CUDAGRAPH)
    cg_reason = {(m.dtype, m.shape_detail): m.line() for m in named_cg}
    for k, r in rows.items():
        reason = cg_reason.get((k.dtype, k.shape))
        if reason is None and r.no_cudagraph:
            reason = "timed without CUDA graph (plain do_bench)"
        b = base_rows.get(k)
        if reason and b is not None and not b.no_cudagraph:
            out.setdefault(k, f"{reason}; the baseline row used CUDA graphs")
    base_cg = _kind_count(base.marker_counts, MarkerKind.NO_CUDAGRAPH)
    if unnamed_cg and unnamed_cg + len(named_cg) > base_cg and not op_reason:
        op_reason = (
            f"{unnamed_cg} {MarkerKind.NO_CUDAGRAPH.value} marker(s) naming no row "
            f"(baseline had {base_cg})"
        )
    return out, op_reason
