"""Time to render a whole-inventory gate verdict (issue 47 item 3: "a 1,000-op,
6,500-row verdict renders all four reports in ≤ 3 s on one core").

    taskset -c 0 python benchmarks/render_speed.py [--all-fail] [--ops 1000] [--rows 6500]

Builds a synthetic FAIL ``GateVerdict`` of ``--ops`` ops and ``--rows`` rows (the
shape of baselines/v7: 998 ops, 6451 rows) that reaches every section of the
reports: regressed rows (confirmed, some with codegen notes), op-aggregate
regressions, failed ops with log tails, fallbacks, missing rows, improvements,
rows near their threshold, unconfirmed flags, interleaved A/B rows, plain-timed
rows, new and skipped rows; then renders what ``write_reports``
(zlbench/workflow/gate.py) writes: junit.xml, report.md, comment.md, report.html
and verdict.json, each ``--repeat`` times, in this one process (one core), and
prints per file the CPU time of the first call (what a gate pays: it renders each
file once), the best CPU and wall time, and their sums. ``--all-fail``: every op
regresses or fails (a broken compiler). ``--profile N`` prints cProfile's N most
expensive functions (cumulative) of one pass instead.

Measured 2026-12-05 on one core (``taskset -c 0``) of the 2-core dev box while
other work loaded it (load average 4-7, so wall times run over CPU times); CPU
seconds of the first call of each renderer, summed over the five files:

    scenario                      before (604aa1a)   after
    mixed (182 failing ops)            6.55 s         0.74 s
    --all-fail (1000 failing ops)     10.12 s         1.20 s

Before, ``report.facts.op_limit`` (the HTML ops table calls it twice per op, the
markdown's aggregate table and chart once per op shown) and
``report.sections._dtypes`` (once per failing op in Reproduce) each scanned every
row for every op: report.html 5.5 s, report.md and comment.md 2.3 and 2.9 s with
every op failing. After, each render indexes the rows by op once
(``report.facts.rows_by_op``), junit.xml escapes a passing row's numbers once, not
twice, and the HTML template is compiled once per process. Per file after
(--all-fail): junit.xml 0.41 s, report.md 0.17 s, comment.md 0.16 s, report.html
0.41 s, verdict.json 0.04 s. The outputs are byte for byte those of 604aa1a.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from zlbench.gate.numbers import inverse_change
from zlbench.models import (
    GateVerdict,
    KernelNote,
    MachineSpeed,
    OpVerdict,
    RowKey,
    RowVerdict,
    Verdict,
)
from zlbench.models.ab import AbSummary, PairedRow
from zlbench.report.facts import ReportExtras
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import GITHUB_COMMENT_LIMIT, render_comment, render_markdown

DTYPES = ("float16", "float32", "bfloat16")
T = 0.05  # every row's threshold
LIMIT = 1 / (1 - T) - 1


def _row(key: RowKey, verdict: Verdict, ratio: float | None, **kw) -> RowVerdict:
    base = 10.0 + len(key.shape)
    cur = base / ratio if ratio else None
    return RowVerdict(
        key=key,
        verdict=verdict,
        baseline_speedup=1.0,
        current_speedup=ratio,
        baseline_us=base,
        current_us=cur,
        baseline_torch_us=base,
        current_torch_us=base * 1.01,
        kernel_change=(cur / base - 1) if cur else None,
        ratio=ratio,
        judged_change=inverse_change(ratio),
        threshold=T if ratio else None,
        limit=LIMIT if ratio else None,
        samples=[ratio] if ratio else [],
        **kw,
    )


def _kind(i: int, all_fail: bool = False) -> str:
    """What happens to op ``i``: one in twenty regresses, one in thirty fails ...;
    ``all_fail``: every op regresses, one in ten fails (a broken compiler)."""
    if all_fail:
        return "failed" if i % 10 == 0 else "regression"
    for every, kind in (
        (20, "regression"),
        (30, "failed"),
        (45, "fallback"),
        (50, "missing"),
        (55, "aggregate"),
        (12, "improvement"),
        (15, "ab"),
        (9, "near"),
    ):
        if i % every == every - 1:
            return kind
    return "pass"


def _op_rows(i: int, kind: str, n: int) -> tuple[list[RowVerdict], Verdict, str]:
    run = f"op{i:04d}__at__test_op{i % 97}.py"
    rows: list[RowVerdict] = []
    for j in range(n):
        key = RowKey(
            repo="main" if i % 7 else "vllm",
            run_name=run,
            op=f"op{i:04d}",
            dtype=DTYPES[j % 3],
            shape=f"[{j * 64 + 1}, {4096 >> (j % 5)}]",
        )
        plain = {"plain_timed": True, "plain_timed_in": ["current"]} if (i + j) % 53 == 0 else {}
        ratio = 1.0 - ((i * 31 + j * 17) % 41 - 20) / 1000  # within ±2 %: PASS
        if kind == "regression" and j % 2 == 0:
            notes = (
                [
                    KernelNote(
                        kernel_id=f"k{i % 40}",
                        name=f"kernel_{i % 40}",
                        status="ttgir_changed",
                        first_stage="ttgir",
                        deltas={"regs": 2.0},
                        diff_file=f"codegen/diffs/k{i % 40}.diff",
                    )
                ]
                if j % 4 == 0
                else []
            )
            r = _row(key, Verdict.REGRESSION, 0.8, confirmed=True, codegen=notes, **plain)
            r.samples, r.reason = [0.8, 0.81, 0.79], "confirmed: median of 3 samples 0.800"
        elif kind == "failed":
            r = _row(key, Verdict.FAILED, None, reason="op CRASH: signal 11")
        elif kind == "fallback" and j == 0:
            r = _row(key, Verdict.FALLBACK, 1.0, reason="no pinned config for kernel_x")
        elif kind == "missing" and j == n - 1:
            r = _row(key, Verdict.MISSING, None, reason="row not measured")
        elif kind == "improvement" and j % 3 == 0:
            r = _row(key, Verdict.IMPROVEMENT, 1.2, **plain)
        elif kind == "near" and j == 1:
            r = _row(key, Verdict.PASS, 0.965, **plain)
        elif kind == "near" and j == 2:
            r = _row(key, Verdict.PASS, 0.94, confirmed=False, **plain)
            r.samples = [0.94, 0.99, 0.98]
        elif kind == "ab" and j % 2 == 0:
            change = 0.04 if j % 4 else -0.01
            ab = PairedRow(
                rounds=30,
                ratio=1 / (1 + change),
                change=change,
                delta_us=change * 10,
                threshold=0.03,
                floor_us=0.3,
                change_lo=change - 0.01,
                change_hi=change + 0.01,
                delta_lo_us=change * 10 - 0.1,
                delta_hi_us=change * 10 + 0.1,
                decision="REGRESSION" if change > 0 else "PASS",
                pr_mhz=1980.0,
                base_mhz=1980.0,
            )
            v = Verdict.REGRESSION if change > 0 else Verdict.PASS
            r = _row(key, v, 0.9 if change > 0 else 0.99, ab=ab, **plain)
        elif i % 101 == 0 and j == n - 1:
            r = _row(key, Verdict.NEW, None, reason="not in baseline")
        elif i % 103 == 0 and j == 0:
            r = _row(key, Verdict.SKIPPED, None, reason="unsupported")
        else:
            r = _row(key, Verdict.PASS, ratio, **plain)
        rows.append(r)
    order = [Verdict.FAILED, Verdict.FALLBACK, Verdict.MISSING, Verdict.REGRESSION]
    order += [Verdict.IMPROVEMENT, Verdict.PASS]
    seen = {r.verdict for r in rows}
    verdict = next((v for v in order if v in seen), Verdict.PASS)
    if kind == "aggregate":
        verdict = Verdict.REGRESSION
    return rows, verdict, run


def synthetic_verdict(n_ops: int = 1000, n_rows: int = 6500, all_fail: bool = False) -> GateVerdict:
    """A FAIL verdict of ``n_ops`` ops and ``n_rows`` rows (module docstring);
    ``all_fail``: every op fails (:func:`_kind`)."""
    ops: list[OpVerdict] = []
    rows: list[RowVerdict] = []
    per, extra = divmod(n_rows, n_ops)
    for i in range(n_ops):
        kind = _kind(i, all_fail)
        mine, verdict, run = _op_rows(i, kind, per + (1 if i < extra else 0))
        judged = [r.ratio for r in mine if r.ratio]
        gm = 0.93 if kind == "aggregate" else (sum(judged) / len(judged) if judged else None)
        failed = kind == "failed"
        ops.append(
            OpVerdict(
                repo=mine[0].key.repo,
                run_name=run,
                op=mine[0].key.op,
                verdict=verdict,
                geomean_ratio=gm,
                judged_change=inverse_change(gm),
                threshold=0.05,
                rows=len(mine),
                reason="op CRASH: signal 11" if failed else f"{len(mine)} row(s)",
                duration_s=2.0 + i % 13,
                log_tail=[f"line {k} of the log" for k in range(30)] if failed else [],
                reproduce=f"zlbench run --op {mine[0].key.op} --repo main --out repro/x",
            )
        )
        rows += mine
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict.value] = counts.get(r.verdict.value, 0) + 1
    return GateVerdict(
        verdict="FAIL",
        exit_code=1,
        summary=f"{counts.get('REGRESSION', 0)} rows regressed",
        baseline="v7",
        baseline_dir="baselines/v7",
        results_dir="gate-out/results",
        generated="2026-12-05T00:00:00Z",
        counts=counts,
        ops=ops,
        rows=rows,
        estimator="ratio",
        machine_speed=[MachineSpeed(torch_change=0.01, rows=len(rows), applied=True)],
        reproduce_template="zlbench run --op $OP --repo $REPO --dtypes $DTYPES",
        ab=AbSummary(
            mode="suspects", rounds=30, threshold=0.03, floor_us=0.3, method="interleaved"
        ),
    )


def renders(v: GateVerdict, extras: ReportExtras) -> dict:
    """What write_reports renders, by file name."""
    return {
        "junit.xml": lambda: render_junit(v),
        "report.md": lambda: render_markdown(v, extras),
        "comment.md": lambda: render_comment(v, GITHUB_COMMENT_LIMIT, extras),
        "report.html": lambda: render_html(v, extras),
        "verdict.json": lambda: v.model_dump_json(indent=2) + "\n",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=6500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--all-fail", action="store_true", help="every op fails or regresses")
    a = ap.parse_args()
    t0 = time.perf_counter()
    v = synthetic_verdict(a.ops, a.rows, a.all_fail)
    built = time.perf_counter() - t0
    failing = sum(1 for o in v.ops if o.verdict.value != "PASS")
    print(
        f"verdict: {len(v.ops)} ops ({failing} not PASS), {len(v.rows)} rows, built in "
        f"{built:.2f} s"
    )
    jobs = renders(v, ReportExtras(artifact_url="https://example.invalid/run/1"))
    if a.profile:
        prof = cProfile.Profile()
        prof.enable()
        for job in jobs.values():
            job()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(a.profile)
        return
    # first: the first call's CPU time (what a gate, which renders each file once,
    # pays: jinja2 compiles the HTML template then); best: the best of --repeat
    first_total = best_total = wall_total = 0.0
    print(f"{'':13s} {'first':>8s} {'best':>8s} {'best':>8s}")
    print(f"{'':13s} {'CPU s':>8s} {'CPU s':>8s} {'wall s':>8s}")
    for name, job in jobs.items():
        cpu: list[float] = []
        wall = float("inf")
        for _ in range(a.repeat):
            t, c = time.perf_counter(), time.process_time()
            out = job()
            cpu.append(time.process_time() - c)
            wall = min(wall, time.perf_counter() - t)
        first_total += cpu[0]
        best_total += min(cpu)
        wall_total += wall
        print(f"{name:13s} {cpu[0]:8.2f} {min(cpu):8.2f} {wall:8.2f}  ({len(out):,} characters)")
    print(f"{'total':13s} {first_total:8.2f} {best_total:8.2f} {wall_total:8.2f}  (one process)")


if __name__ == "__main__":
    main()
