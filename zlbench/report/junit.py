"""JUnit XML of a gate verdict, through ``junit-xml``.

One testsuite per repo, one testcase per row (classname ``<repo>.<op>``, name
from dtype and shape). Failing verdicts are failures (an op that failed or
crashed: errors); dismissed / unsupported rows are skipped. A gate that fails
always shows at least one failing testcase: an op whose failure no row carries
(a geomean regression, a marker naming no row, a crash before any row) gets an
op-level testcase, and an ERROR verdict gets a ``zlbench.gate`` error testcase.
"""

from __future__ import annotations

from junit_xml import TestCase, TestSuite, to_xml_report_string

from zlbench.models import FAILING_VERDICTS, GateVerdict, OpVerdict, RowVerdict, Verdict


def _num(x: float | None, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def row_message(r: RowVerdict) -> str:
    parts = [
        r.verdict.value,
        f"baseline speedup {_num(r.baseline_speedup)}",
        f"current speedup {_num(r.current_speedup)}",
        f"ratio {_num(r.ratio, '{:.4f}')}",
        f"threshold {_num(r.threshold, '{:.1%}')}",
    ]
    if r.confirmed is not None:
        parts.append("confirmed" if r.confirmed else "not confirmed")
    if r.reason:
        parts.append(r.reason)
    return "; ".join(parts)


def case_name(r: RowVerdict) -> str:
    occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
    return f"{r.key.dtype} {r.key.shape}{occ}"


def _row_case(r: RowVerdict) -> TestCase:
    tc = TestCase(case_name(r), classname=f"{r.key.repo}.{r.key.op}")
    msg = row_message(r)
    if r.verdict is Verdict.FAILED:
        tc.add_error_info(message=msg, error_type=r.verdict.value)
    elif r.verdict in FAILING_VERDICTS:
        tc.add_failure_info(message=msg, failure_type=r.verdict.value)
    elif r.verdict is Verdict.SKIPPED:
        tc.add_skipped_info(message=r.reason or "skipped")
    else:
        tc.stdout = msg
    return tc


def _op_case(op: OpVerdict) -> TestCase:
    tc = TestCase("op", classname=f"{op.repo}.{op.run_name}")
    msg = f"{op.verdict.value}: {op.reason}".rstrip(": ")
    if op.geomean_ratio is not None:
        msg += f"; geomean ratio {op.geomean_ratio:.4f}, threshold {_num(op.threshold, '{:.1%}')}"
    output = "\n".join(op.log_tail) or None
    if op.verdict is Verdict.FAILED:
        tc.add_error_info(message=msg, output=output, error_type=op.verdict.value)
    else:
        tc.add_failure_info(message=msg, output=output, failure_type=op.verdict.value)
    return tc


def _properties(v: GateVerdict) -> dict[str, str]:
    props = {"zlbench.verdict": v.verdict, "zlbench.baseline": v.baseline}
    for f in v.environment:
        props[f"baseline.{f.field}"] = f.baseline or ""
        props[f"current.{f.field}"] = f.current or ""
        if f.mismatch:
            props[f"mismatch.{f.field}"] = "allowed" if v.allow_env_mismatch else "yes"
    return props


def render_junit(v: GateVerdict) -> str:
    repos = sorted({r.key.repo for r in v.rows} | {o.repo for o in v.ops})
    props = _properties(v)
    # ops with a failing row: that row's testcase already fails, the op gets none
    failing_rows = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict in FAILING_VERDICTS}
    suites = []
    for repo in repos:
        cases = [_row_case(r) for r in v.rows if r.key.repo == repo]
        for op in v.ops:
            if op.repo != repo or op.verdict not in FAILING_VERDICTS:
                continue
            if (repo, op.run_name) not in failing_rows:
                cases.append(_op_case(op))
        suites.append(TestSuite(repo, cases, properties=props))
    if v.verdict == "ERROR" or not suites:
        tc = TestCase("gate", classname="zlbench.gate")
        if v.verdict == "ERROR":
            tc.add_error_info(message=v.summary, error_type="ERROR")
        suites.append(TestSuite("zlbench", [tc], properties=props))
    return to_xml_report_string(suites, prettyprint=True, encoding="utf-8")
