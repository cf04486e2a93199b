"""Split a screen's kernels into chunks of about equal compile time (pure)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping

DEFAULT_COMPILE_S = 1.0  # estimate for a kernel whose baseline compile time is unknown


def split(estimates: Mapping[str, float | None], n_chunks: int) -> list[list[str]]:
    """Ids dealt into at most ``n_chunks`` non-empty chunks, longest first onto the
    lightest chunk (so one slow kernel does not leave the other workers idle).
    Deterministic: ties are broken by id."""
    if n_chunks < 1:
        raise ValueError("n_chunks must be >= 1")
    cost = {k: (v if v is not None and v > 0 else DEFAULT_COMPILE_S) for k, v in estimates.items()}
    order = sorted(cost, key=lambda k: (-cost[k], k))
    n = min(n_chunks, len(order))
    heap = [(0.0, i) for i in range(n)]
    chunks: list[list[str]] = [[] for _ in range(n)]
    for kid in order:
        load, i = heapq.heappop(heap)
        chunks[i].append(kid)
        heapq.heappush(heap, (load + cost[kid], i))
    return chunks


# at most this many kernels per chunk: a progress line every 1-4 minutes of one worker
# at most (0.2-0.75 s a kernel measured, docs/baselines.md), for a few seconds more of
# start-up per chunk
MAX_CHUNK_KERNELS = 300


def n_chunks(
    kernels: int, jobs: int, per_job: int = 2, max_kernels: int = MAX_CHUNK_KERNELS
) -> int:
    """How many chunks: ``per_job`` per worker slot (finer progress, better balance),
    more where a chunk would hold over ``max_kernels`` (then a multiple of ``jobs``, so
    that the last round keeps every slot busy), never more than there are kernels."""
    n = max(jobs * per_job, -(-kernels // max_kernels))
    n = -(-n // max(1, jobs)) * max(1, jobs)
    return max(1, min(kernels, n))


def pool_eta(elapsed_s: float, done: int, total: int, slots: int) -> float:
    """Seconds left of a pool of ``total`` chunks of about equal cost (:func:`split`)
    run ``slots`` at a time, ``done`` of them ended ``elapsed_s`` after the pool began:
    the rounds left at the pace of the rounds so far. The first round counts whole as
    soon as any chunk ends: its chunks started together, so the first one's wall (the
    workers' start included) is a round's, not a chunk's share of one. The mean-chunk
    ETA said 3290 s after a 47 s screen's first chunk on an H100 (2026-12-06)."""
    if done <= 0 or done >= total:
        return 0.0
    slots = max(1, min(slots, total))
    rounds, rounds_done = total / slots, max(1.0, done / slots)
    return elapsed_s * max(0.0, rounds - rounds_done) / rounds_done
