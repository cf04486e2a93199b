"""The verdicts the report tests render: every verdict kind (synthetic), the real
H200 numbers as shipped (PASS), with every kernel 4 % slower (PASS), with
injected slowdowns (FAIL), an ERROR, and a large synthetic failure."""

from __future__ import annotations

from pathlib import Path

from realdata import FAIL_SLOWDOWNS, RESULTS, inject, real_verdict
from scenario import build

from zlbench.gate.numbers import inverse_change
from zlbench.models import GateVerdict, OpVerdict, RowKey, RowVerdict, Verdict


def every_verdict(tmp: Path) -> GateVerdict:
    return build(tmp)


def real_aa() -> GateVerdict:
    return real_verdict(RESULTS)


def real_slower(tmp: Path, d: float = 0.04) -> GateVerdict:
    return real_verdict(inject(tmp / "slower", {}, d))


def real_fail(tmp: Path) -> GateVerdict:
    return real_verdict(inject(tmp / "fail", FAIL_SLOWDOWNS))


def error(tmp: Path) -> GateVerdict:
    return build(tmp, gpu="NVIDIA A100")


def _row(i: int, n: int) -> RowVerdict:
    ratio = 0.5 + 0.4 * i / n
    base = 10.0 + i
    return RowVerdict(
        key=RowKey(
            repo="main",
            run_name=f"op{i:04d}",
            op=f"op{i:04d}",
            dtype="bfloat16",
            shape=f"[{i}, 4096]",
        ),
        verdict=Verdict.REGRESSION,
        baseline_speedup=1.0,
        current_speedup=ratio,
        baseline_us=base,
        current_us=base / ratio,
        baseline_torch_us=base,
        current_torch_us=base,
        kernel_change=1 / ratio - 1,
        ratio=ratio,
        judged_change=inverse_change(ratio),
        threshold=0.05,
        limit=1 / 0.95 - 1,
        samples=[ratio, ratio, ratio],
        confirmed=True,
        reason=f"confirmed: median of 3 samples {ratio:.3f}",
    )


def large_fail(base: GateVerdict, n: int) -> GateVerdict:
    """``base`` plus ``n`` regressed ops (one row each, confirmed); every tenth one
    also failed with a log tail that holds backtick runs."""
    v = base.model_copy(deep=True)
    for i in range(n):
        r = _row(i, n)
        failed = i % 10 == 0
        v.rows.append(r)
        v.ops.append(
            OpVerdict(
                repo="main",
                run_name=r.key.run_name,
                op=r.key.op,
                verdict=Verdict.FAILED if failed else Verdict.REGRESSION,
                geomean_ratio=r.ratio,
                judged_change=r.judged_change,
                threshold=0.05,
                rows=1,
                reason="op CRASH: signal 11" if failed else "1 row(s) REGRESSION",
                duration_s=1.5,
                log_tail=[f"line {k} ``` ```` x" for k in range(20)] if failed else [],
                reproduce=f"zlbench run --op {r.key.op} --repo main --out repro/{r.key.op}",
            )
        )
    v.counts["REGRESSION"] = v.counts.get("REGRESSION", 0) + n
    return v
