"""Retry, dtype fallback and dtype rescue rules of a batch (docs/design.md §5.17). Pure.

* TIMEOUT is never retried (the op already cost a whole timeout), nor PASS/SKIP/ERROR.
* FAIL (rc 1) and CRASH (signal death, any other rc) are retried up to
  ``max_retries`` times with the same dtypes, stopping early as soon as the same
  rc came back twice in a row.
* When the log says ``can't be supported by this op`` (upstream ``set_dtypes``
  rejects the asked dtype), the op is retried once with its own default dtypes
  (``dtypes=[]``): the op's other dtypes. This does not count as a retry.
* When nothing passed after all that, one last rescue with the op's own default
  dtypes (``dtypes=[]``, the seed's rule: what upstream measures for that op, so
  no attempt is spent on a dtype the op rejects) when those were not tried yet,
  else with a dtype not tried yet (float32, then float16, then bfloat16: an op
  whose defaults failed may still pass one of them alone) -- in record mode only: in replay (gate,
  baseline refresh passes) the baseline's rows fix the dtypes, and rows of another
  dtype can never match them. (There an op whose baseline rows share no dtype with
  the asked ones starts with the baseline's: ``attempts.first_dtypes``.)
* A failure whose error signature several ops already share (``systemic``: a broken
  compiler, not a flaky op, :mod:`zlbench.runner.batch.systemic`) is not retried nor
  rescued; the fallback to the op's own dtypes still runs (ops that reject the asked
  dtype raise it at one shared line of the benchmark suite).
"""

from __future__ import annotations

from dataclasses import dataclass

from zlbench.models import RunStatus

UNSUPPORTED_DTYPE_TEXT = "can't be supported by this op"
RESCUE_DTYPES = ("float32", "float16", "bfloat16")
RETRYABLE = frozenset({RunStatus.FAIL, RunStatus.CRASH})


@dataclass(frozen=True)
class Attempt:
    status: RunStatus
    rc: int | None
    dtypes: tuple[str, ...]  # () = the op's defaults
    unsupported_dtype: bool = False  # the log said "can't be supported by this op"
    kind: str = "first"  # first | retry | fallback | rescue


@dataclass(frozen=True)
class NextAttempt:
    dtypes: tuple[str, ...]
    kind: str  # retry | fallback | rescue
    why: str


def _rc(a: Attempt) -> int | None:
    return 1 if a.rc is None and a.status is RunStatus.FAIL else a.rc


def next_attempt(
    attempts: list[Attempt],
    max_retries: int = 2,
    *,
    rescue: bool = True,
    systemic: bool = False,
) -> NextAttempt | None:
    """What to run next for an op, given its attempts so far; None: it is finished.

    ``rescue``: False in replay mode (no dtype rescue). ``systemic``: the last
    attempt failed the way several other ops did: no retry, no rescue.
    Only the last attempt can have passed: a PASS or SKIP ends the op."""
    if not attempts:
        raise ValueError("next_attempt needs at least one attempt")
    last = attempts[-1]
    if last.status not in RETRYABLE or last.kind == "rescue":
        return None
    tried = {a.dtypes for a in attempts}
    if last.unsupported_dtype and () not in tried:  # the op's own limit, even when shared
        return NextAttempt((), "fallback", f"dtype {_fmt(last.dtypes)} not supported by the op")
    if systemic:
        return None
    same = [a for a in attempts if a.dtypes == last.dtypes and a.kind != "rescue"]
    if len(same) >= 2 and _rc(same[-1]) == _rc(same[-2]):
        stop = f"same rc {_rc(last)} twice"
    elif len(same) > max_retries:
        stop = f"{len(same)} attempts"
    else:
        return NextAttempt(last.dtypes, "retry", f"{last.status.value} rc={_rc(last)}")
    if not rescue:
        return None
    if () not in tried:
        return NextAttempt((), "rescue", f"nothing passed ({stop})")
    flat = {d for a in attempts for d in a.dtypes}
    for dtype in RESCUE_DTYPES:
        if dtype not in flat:
            return NextAttempt((dtype,), "rescue", f"nothing passed ({stop})")
    return None


def _fmt(dtypes: tuple[str, ...]) -> str:
    return ",".join(dtypes) if dtypes else "(defaults)"


def describe(attempts: list[Attempt]) -> str:
    """One-line history for the ops_status note, e.g.
    ``CRASH rc=-11 [bfloat16]; retry FAIL rc=1 [bfloat16]; rescue PASS [float32]``."""
    parts = []
    for a in attempts:
        prefix = "" if a.kind == "first" else f"{a.kind} "
        rc = "" if a.status in (RunStatus.PASS, RunStatus.SKIP) else f" rc={a.rc}"
        parts.append(f"{prefix}{a.status.value}{rc} [{_fmt(a.dtypes)}]")
    return "; ".join(parts)
