"""Retry / dtype fallback / rescue rules (docs/design.md §5.17), as a pure function."""

from __future__ import annotations

import pytest

from zlbench.models import RunStatus
from zlbench.runner.batch.retry import RESCUE_DTYPES, Attempt, describe, next_attempt

BF16 = ("bfloat16",)
P, F, S, T, C, E = (
    RunStatus.PASS,
    RunStatus.FAIL,
    RunStatus.SKIP,
    RunStatus.TIMEOUT,
    RunStatus.CRASH,
    RunStatus.ERROR,
)


def run(*steps, max_retries=2):
    """Apply next_attempt after each (status, rc, unsupported) step; return the kinds run."""
    attempts: list[Attempt] = []
    dtypes, kind = BF16, "first"
    for status, rc, unsupported in steps:
        attempts.append(Attempt(status, rc, dtypes, unsupported, kind))
        nxt = next_attempt(attempts, max_retries)
        if nxt is None:
            return attempts, None
        dtypes, kind = nxt.dtypes, nxt.kind
    return attempts, next_attempt(attempts, max_retries)


@pytest.mark.parametrize("status", [P, S, T, E])
def test_not_retried(status):
    attempts, nxt = run((status, None, False))
    assert nxt is None and len(attempts) == 1


def test_timeout_after_a_crash_is_final():
    assert run((C, -11, False), (T, None, False))[1] is None


def test_same_rc_twice_stops_then_rescue():
    attempts, nxt = run((F, 1, False), (F, 1, False))
    assert [a.kind for a in attempts] == ["first", "retry"]
    # the seed's rescue (issue 30): the op's own default dtypes, not tried yet
    assert nxt.kind == "rescue" and nxt.dtypes == ()
    assert "same rc 1 twice" in nxt.why


def test_different_rcs_retry_twice_at_most():
    attempts, nxt = run((C, -11, False), (F, 1, False), (C, -6, False))
    assert [a.kind for a in attempts] == ["first", "retry", "retry"]
    assert nxt.kind == "rescue" and "3 attempts" in nxt.why


def test_fail_without_rc_counts_as_rc_1():
    _, nxt = run((F, None, False), (F, 1, False))
    assert nxt.kind == "rescue"


def test_crash_then_pass_stops():
    attempts, nxt = run((C, -9, False), (P, 0, False))
    assert nxt is None and attempts[-1].status is P


def test_rescue_is_the_last_attempt():
    attempts, nxt = run((F, 1, False), (F, 1, False), (C, -11, False))
    assert attempts[-1].kind == "rescue" and nxt is None


def test_unsupported_dtype_falls_back_to_the_ops_defaults_once():
    attempts, nxt = run((F, 1, True))
    assert nxt.kind == "fallback" and nxt.dtypes == ()
    # defaults fail for real twice: then the rescue uses a dtype never tried alone
    attempts, nxt = run((F, 1, True), (F, 1, False), (F, 1, False))
    assert [a.kind for a in attempts] == ["first", "fallback", "retry"]
    assert nxt.kind == "rescue" and nxt.dtypes == ("float32",)


def test_unsupported_again_with_defaults_goes_to_rescue():
    attempts, nxt = run((F, 1, True), (F, 1, True), (F, 1, True))
    assert [a.kind for a in attempts] == ["first", "fallback", "retry"]
    assert nxt.kind == "rescue"


def test_rescue_picks_the_defaults_then_an_untried_dtype():
    attempts = [Attempt(F, 1, ("float32",)), Attempt(F, 1, ("float32",), kind="retry")]
    assert next_attempt(attempts).dtypes == ()
    attempts = [Attempt(F, 1, ()), Attempt(F, 1, (), kind="retry")]
    assert next_attempt(attempts).dtypes == ("float32",)
    attempts = [Attempt(F, 1, ("float32",)), Attempt(F, 1, (), kind="fallback")]
    attempts.append(Attempt(F, 1, (), kind="retry"))
    assert next_attempt(attempts).dtypes == ("float16",)
    attempts = [Attempt(F, 1, RESCUE_DTYPES), Attempt(F, 1, RESCUE_DTYPES, kind="retry")]
    assert next_attempt(attempts).dtypes == ()
    attempts = [Attempt(F, 1, RESCUE_DTYPES), Attempt(F, 1, (), kind="fallback")]
    attempts.append(Attempt(F, 1, (), kind="retry"))
    assert next_attempt(attempts) is None


def test_max_retries_zero_goes_straight_to_rescue():
    _, nxt = run((C, -11, False), max_retries=0)
    assert nxt.kind == "rescue"


def test_next_attempt_needs_an_attempt():
    with pytest.raises(ValueError):
        next_attempt([])


def test_describe():
    attempts = [
        Attempt(C, -11, BF16),
        Attempt(F, 1, (), True, "fallback"),
        Attempt(P, 0, ("float32",), kind="rescue"),
    ]
    assert describe(attempts) == (
        "CRASH rc=-11 [bfloat16]; fallback FAIL rc=1 [(defaults)]; rescue PASS [float32]"
    )


def test_a_systemic_failure_is_neither_retried_nor_rescued():
    first = [Attempt(F, 1, BF16, False, "first")]
    assert next_attempt(first, 2, systemic=True) is None
    assert next_attempt(first, 2, systemic=False).kind == "retry"


def test_an_unsupported_dtype_falls_back_even_when_its_signature_is_shared():
    # ops that reject bfloat16 all raise at one line of the suite's set_dtypes: shared,
    # but the op's own limit, not a broken compiler
    first = [Attempt(F, 1, BF16, True, "first")]
    nxt = next_attempt(first, 2, systemic=True)
    assert (nxt.kind, nxt.dtypes) == ("fallback", ())
    again = [*first, Attempt(F, 1, (), True, "fallback")]
    assert next_attempt(again, 2, systemic=True) is None
