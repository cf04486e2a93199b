"""JUnit XML of a gate verdict, for the CI's test-report views.

One testsuite per repo, one testcase per row: classname ``<repo>.<name>``, name
``<name> <dtype> <shape>``, where ``<name>`` is the op's one spelling in every
report (:func:`zlbench.report.facts.op_names`: ``bmm``, or ``bmm@test_bmm.py`` where
two ops share the name; a ``.`` of it is ``_`` in the classname, where a dot splits
package from class). Failing verdicts are failures (an op that failed or crashed:
errors) whose ``message`` is one line, the verdict and its % change against the
limit (never a speedup ratio beside it), and whose body holds the numbers and the
reason (GitLab shows only bodies); dismissed / unsupported rows are skipped. An op
whose failure no row carries gets an op-level testcase, so a failing gate always
shows a failing testcase. The ops the codegen screen proved identical (not timed)
are passed testcases of classname ``zlbench.proven_identical`` with the proof as
output, so the test count adds up to the ops checked. An ERROR judged nothing: one
``zlbench.gate`` error testcase and no other (:func:`error_suite`).

Times: an op's run duration (``OpVerdict.duration_s``, or ``durations``) split
evenly over its testcases; every testcase has a ``time`` (``0.000`` where nothing
recorded one), and the codegen suite carries the screen's rebuild wall time
(``CodegenSummary.wall_s``) when the verdict records it. Every (classname, name)
pair is unique: a repeated one gets `` #2``, `` #3`` ... in document order. A
``message`` is one line of at most :data:`MESSAGE_MAX` characters; the details
are in the body. Only the elements and attributes that the Jenkins
JUnit plugin, GitLab and the common GitHub test-report actions all read are
written (docs/reports.md); every artifact string goes through
:func:`zlbench.report.escape.xml_text`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping

from zlbench.models import FAILING_VERDICTS, GateVerdict, OpVerdict, RowVerdict, Verdict
from zlbench.protocol.layout import op_key, split_op_key
from zlbench.report.escape import one_line, xml_text
from zlbench.report.facts import (
    OpRows,
    compiler_line,
    decided_texts,
    key_name,
    machine_speed_line,
    name_of,
    op_limit,
    op_names,
    pct,
    row_numbers,
    row_op,
    rows_by_op,
)

MESSAGE_MAX = 200  # characters of a failure / error / skipped ``message``


def message(text: str) -> str:
    """The one-line ``message`` attribute: first line only, at most MESSAGE_MAX."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return xml_text(one_line(first, MESSAGE_MAX))


def classname(repo: str, name: str) -> str:
    """``<repo>.<name>`` of an op's one spelling ``name`` (its dots as ``_``)."""
    return xml_text(f"{repo}.{name.replace('.', '_')}")


def case_name(r: RowVerdict, names: dict[str, str] | None = None) -> str:
    """``<op> <dtype> <shape>``, the op as every report spells a row's
    (``facts.row_op``)."""
    occ = f" #{r.key.occurrence}" if r.key.occurrence else ""  # ours: not a reference
    return xml_text(f"{row_op(r.key, names)} {r.key.dtype} {r.key.shape}") + occ


def row_message(r: RowVerdict) -> str:
    """One line: the verdict and the change it was decided on against its limit, as
    the tables show them (``facts.decided_texts``: a % change, never a ratio), or the
    verdict and its reason for a row without a judged change."""
    if r.judged_change is not None:
        change, limit = decided_texts(r)
        return xml_text(f"{r.verdict.value}: judged change {change} (limit {limit})")
    return xml_text(f"{r.verdict.value}: {r.reason}" if r.reason else r.verdict.value)


def _outcome(tc: ET.Element, tag: str, kind: str, text: str, body: str) -> None:
    el = ET.SubElement(tc, tag, {"message": message(text), "type": kind})
    el.text = body


def _time(tc: ET.Element, seconds: float | None) -> None:
    ok = seconds is not None and seconds >= 0
    tc.set("time", f"{seconds if ok else 0.0:.3f}")


def row_case(
    r: RowVerdict, seconds: float | None, context: str, names: dict[str, str] | None = None
) -> ET.Element:
    name = name_of(names or {}, r.key.repo, r.key.run_name)
    tc = ET.Element(
        "testcase", {"name": case_name(r, names), "classname": classname(r.key.repo, name)}
    )
    _time(tc, seconds)
    if r.verdict in FAILING_VERDICTS:
        tag = "error" if r.verdict is Verdict.FAILED else "failure"
        body = xml_text("\n".join(x for x in (row_numbers(r), r.reason, context) if x))
        _outcome(tc, tag, r.verdict.value, row_message(r), body)
    elif r.verdict is Verdict.SKIPPED:
        ET.SubElement(tc, "skipped", {"message": message(r.reason or "skipped")})
    else:
        ET.SubElement(tc, "system-out").text = xml_text(row_numbers(r))
    return tc


def op_case(
    op: OpVerdict, seconds: float | None, name: str | None = None, by_op: OpRows | None = None
) -> ET.Element:
    name = name or op.op
    tc = ET.Element("testcase", {"name": "op", "classname": classname(op.repo, name)})
    _time(tc, seconds)
    if op.judged_change is not None:  # the % change, its reason (a ratio) in the body
        limit = op_limit(op, by_op or {})
        msg = f"{op.verdict.value}: judged change (geomean) {pct(op.judged_change)}"
        msg += f" (limit {pct(limit)})"
        lines = [msg, op.reason]
    else:
        msg = f"{op.verdict.value}: {op.reason}".rstrip(": ")
        lines = [msg]
    body = "\n".join([*(x for x in lines if x), *(op.log_tail or [])])
    tag = "error" if op.verdict is Verdict.FAILED else "failure"
    _outcome(tc, tag, op.verdict.value, msg, xml_text(body))
    return tc


def identical_cases(v: GateVerdict, names: dict[str, str]) -> list[ET.Element]:
    """A passed testcase per op the codegen screen proved identical and did not time
    (``CodegenSummary.not_timed``), its proof as output."""
    proven = v.codegen.not_timed if v.codegen is not None else {}
    cases = []
    for key, proof in sorted(proven.items()):
        repo = split_op_key(key)[0]
        name = key_name(names, key)
        tc = ET.Element(
            "testcase", {"name": xml_text(name), "classname": "zlbench.proven_identical"}
        )
        _time(tc, None)
        said = f"{repo}: not timed, its kernels proven identical by the codegen screen: {proof}"
        ET.SubElement(tc, "system-out").text = xml_text(said)
        cases.append(tc)
    return cases


def _properties(v: GateVerdict) -> dict[str, str]:
    props = {
        "zlbench.verdict": v.verdict,
        "zlbench.baseline": v.baseline,
        "zlbench.estimator": v.estimator,
        "zlbench.compilers": compiler_line(v),
    }
    for f in v.environment:
        props[f"baseline.{f.field}"] = f.baseline or ""
        props[f"current.{f.field}"] = f.current or ""
        if f.mismatch:
            props[f"mismatch.{f.field}"] = "allowed" if v.allow_env_mismatch else "yes"
    return props


def _suite(
    name: str, cases: list[ET.Element], v: GateVerdict, seconds: float | None = None
) -> ET.Element:
    """``seconds``: the suite's own wall time where known; else its testcases' sum."""
    kinds = [child.tag for tc in cases for child in tc]
    total = sum(float(tc.get("time", 0)) for tc in cases)
    if seconds is not None and seconds >= 0:
        total = seconds
    suite = ET.Element(
        "testsuite",
        {
            "name": xml_text(name),
            "tests": str(len(cases)),
            "failures": str(kinds.count("failure")),
            "errors": str(kinds.count("error")),
            "skipped": str(kinds.count("skipped")),
            "time": f"{total:.3f}",
        },
    )
    if v.generated:
        suite.set("timestamp", xml_text(v.generated))
    props = ET.SubElement(suite, "properties")
    for k, val in _properties(v).items():
        ET.SubElement(props, "property", {"name": xml_text(k), "value": xml_text(val)})
    suite.extend(cases)
    return suite


def _op_seconds(v: GateVerdict, durations: Mapping[str, float]) -> dict[tuple[str, str], float]:
    out = {}
    for o in v.ops:
        s = durations.get(op_key(o.repo, o.run_name), o.duration_s)
        if s is not None:
            out[(o.repo, o.run_name)] = s
    return out


def repo_cases(
    v: GateVerdict, repo: str, durations: Mapping[str, float], names: dict[str, str]
) -> list[ET.Element]:
    by_op = rows_by_op(v.rows)
    seconds = _op_seconds(v, durations)
    failing_rows = {(r.key.repo, r.key.run_name) for r in v.rows if r.verdict in FAILING_VERDICTS}
    per_op: dict[tuple[str, str], int] = {}
    for r in v.rows:
        per_op[(r.key.repo, r.key.run_name)] = per_op.get((r.key.repo, r.key.run_name), 0) + 1
    ops = [o for o in v.ops if o.repo == repo and o.verdict in FAILING_VERDICTS]
    extra = [o for o in ops if (o.repo, o.run_name) not in failing_rows]
    for o in extra:
        per_op[(o.repo, o.run_name)] = per_op.get((o.repo, o.run_name), 0) + 1
    context = machine_speed_line(v) if v.verdict != "ERROR" else ""

    def share(k: tuple[str, str]) -> float | None:
        return seconds[k] / per_op[k] if k in seconds else None

    cases = [
        row_case(r, share((r.key.repo, r.key.run_name)), context, names)
        for r in v.rows
        if r.key.repo == repo
    ]
    return cases + [
        op_case(o, share((o.repo, o.run_name)), name_of(names, o.repo, o.run_name), by_op)
        for o in extra
    ]


def codegen_cases(failed: list[str], seconds: float | None = None) -> list[ET.Element]:
    """One failing testcase per kernel the compiler under test no longer compiles;
    ``seconds``: each one's time (the rebuild's wall time per rebuilt kernel)."""
    cases = []
    for line in failed:
        tc = ET.Element(
            "testcase", {"name": xml_text(line.split(":", 1)[0]), "classname": "zlbench.codegen"}
        )
        _time(tc, seconds)
        msg = "compile failed: the baseline compiled this kernel"
        _outcome(tc, "failure", "COMPILE_FAILED", msg, xml_text(line))
        cases.append(tc)
    return cases


def _unique_names(suites: list[ET.Element]) -> None:
    """A repeated (classname, name) gets " #2", " #3" ... in document order."""
    seen: set[tuple[str, str]] = set()
    for tc in (tc for s in suites for tc in s.iter("testcase")):
        cls, name = tc.get("classname", ""), tc.get("name", "")
        n, candidate = 1, name
        while (cls, candidate) in seen:
            n += 1
            candidate = f"{name} #{n}"
        seen.add((cls, candidate))
        tc.set("name", candidate)


def error_suite(v: GateVerdict) -> ET.Element:
    """An ERROR judged nothing: one ``zlbench.gate`` error testcase, its message the
    reason, its body the reason and what to do (:mod:`zlbench.report.error`)."""
    from zlbench.report.error import error_steps, reason, unjudged

    tc = ET.Element("testcase", {"name": "gate", "classname": "zlbench.gate"})
    _time(tc, None)
    why = reason(v)
    body = "\n".join([f"ERROR (nothing judged): {why}", *(f"- {s}" for s in error_steps(v))])
    _outcome(tc, "error", "ERROR", f"ERROR: {why}", xml_text(body))
    return _suite("zlbench", [tc], unjudged(v))


def _document(suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites", {"name": "zlbench gate"})
    for attr in ("tests", "failures", "errors"):
        root.set(attr, str(sum(int(s.get(attr, 0)) for s in suites)))
    root.set("time", f"{sum(float(s.get('time', 0)) for s in suites):.3f}")
    root.extend(suites)
    ET.indent(root, "\t")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_junit(v: GateVerdict, durations: Mapping[str, float] | None = None) -> str:
    """``junit.xml``; ``durations`` (op key -> seconds) overrides the verdict's. An
    ERROR: :func:`error_suite` alone."""
    if v.verdict == "ERROR":
        return _document([error_suite(v)])
    durations = durations or {}
    names = op_names(v)
    repos = sorted({r.key.repo for r in v.rows} | {o.repo for o in v.ops})
    suites = [_suite(repo, repo_cases(v, repo, durations, names), v) for repo in repos]
    if proven := identical_cases(v, names):
        suites.append(_suite("zlbench.proven_identical", proven, v))
    cg = v.codegen
    if cg is not None and cg.failed:
        per_kernel = cg.wall_s / cg.kernels if cg.wall_s is not None and cg.kernels else None
        cases = codegen_cases(cg.failed, per_kernel)
        suites.append(_suite("zlbench.codegen", cases, v, cg.wall_s))
    if not suites:
        tc = ET.Element("testcase", {"name": "gate", "classname": "zlbench.gate"})
        _time(tc, None)
        suites.append(_suite("zlbench", [tc], v))
    _unique_names(suites)
    return _document(suites)
