"""junit.xml as its consumers read it: validated against tests/data/junit/junit.xsd
and against what strict consumers require (tests/data/junit/junit-10-consumer.xsd:
Jenkins xUnit's junit-10.xsd plus the Ant schema's required attributes), every
testcase timed and uniquely named, one-line messages, only the attributes that
the Jenkins JUnit plugin, GitLab and the GitHub test-report actions all accept,
times from the run durations, failure bodies with the numbers, one classname
per benchmark file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from cases import error, every_verdict, real_fail

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.gate.verdict import GateOptions, run_gate
from zlbench.models import FAILING_VERDICTS, CodegenClass, GateVerdict, Verdict
from zlbench.report.junit import MESSAGE_MAX, render_junit

XSD = Path(__file__).resolve().parent.parent / "data" / "junit" / "junit.xsd"
CONSUMER_XSD = XSD.with_name("junit-10-consumer.xsd")
# The attributes every consumer we target reads (docs/reports.md); nothing else.
ALLOWED = {
    "testsuites": {"name", "tests", "failures", "errors", "time"},
    "testsuite": {"name", "tests", "failures", "errors", "skipped", "time", "timestamp"},
    "properties": set(),
    "property": {"name", "value"},
    "testcase": {"name", "classname", "time"},
    "failure": {"message", "type"},
    "error": {"message", "type"},
    "skipped": {"message"},
    "system-out": set(),
}


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture(scope="module")
def consumer_schema():
    return xmlschema.XMLSchema(str(CONSUMER_XSD))


def compile_failure(tmp) -> GateVerdict:
    """real_fail with a codegen screen: two kernels of one name and config that no
    longer compile (one (classname, name) twice), the rebuild's wall time recorded."""
    from test_report_codegen_golden import screen_for

    from zlbench.workflow.codegen import CodegenStep, apply_screen, summarize

    v = real_fail(tmp)
    screen = screen_for(v)
    (bad,) = [k for k in screen.kernels if k.status is CodegenClass.FAILED]
    twin = bad.model_copy(update={"kernel_id": "e" * 16, "error": "x" * 900 + "\nsecond line"})
    screen.kernels.append(twin)
    step = CodegenStep(summarize(screen, "all", "codegen/codegen.json"), screen)
    step.summary.wall_s = 23.6
    return apply_screen(v, step)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("junit")
    return {
        "every": every_verdict(tmp / "e"),
        "fail": real_fail(tmp / "f"),
        "error": error(tmp / "x"),
        "codegen": compile_failure(tmp / "c"),
    }


@pytest.mark.parametrize("case", ["every", "fail", "error", "codegen"])
def test_valid_and_only_common_attributes(cases, schema, consumer_schema, case):
    xml = render_junit(cases[case])
    schema.validate(xml)
    consumer_schema.validate(xml)
    for el in ET.fromstring(xml).iter():
        assert el.tag in ALLOWED, el.tag
        assert set(el.attrib) <= ALLOWED[el.tag], (el.tag, el.attrib)


def test_every_failing_row_fails_with_the_numbers_in_its_body(cases):
    v = cases["every"]
    root = ET.fromstring(render_junit(v))
    by_name = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    for r in v.rows:
        c = by_name[(f"{r.key.repo}.{r.key.run_name}", f"{r.key.op} {r.key.dtype} {r.key.shape}")]
        kinds = {child.tag for child in c} - {"system-out"}
        if r.verdict in FAILING_VERDICTS:
            assert kinds in ({"failure"}, {"error"}), r
            (outcome,) = [e for e in c if e.tag in kinds]
            assert outcome.get("type") == r.verdict.value
            assert "FlagGems" in outcome.text and "torch" in outcome.text
        elif r.verdict is Verdict.SKIPPED:
            assert kinds == {"skipped"}
        else:
            assert kinds == set(), r


def test_regression_message_and_body_carry_the_report_numbers(cases):
    xml = render_junit(cases["fail"])
    root = ET.fromstring(xml)
    fail = next(c for c in root.iter("testcase") if c.get("classname") == "main.softmax")
    (f,) = list(fail)
    assert f.get("message") == "REGRESSION: judged change +19.9 % (limit +5.3 %)"
    assert "FlagGems 210.9 → 252.8 µs (kernel time +19.9 %)" in f.text
    assert "torch 222.6 → 222.5 µs" in f.text and "confirmed: not re-measured" in f.text
    assert "Machine-speed correction: this runner measured torch" in f.text


def test_times_come_from_the_run_durations(cases):
    v = cases["fail"]
    root = ET.fromstring(render_junit(v))
    softmax = next(c for c in root.iter("testcase") if c.get("classname") == "main.softmax")
    op = next(o for o in v.ops if o.run_name == "softmax")
    assert float(softmax.get("time")) == pytest.approx(op.duration_s, abs=0.001)
    mm = [c for c in root.iter("testcase") if c.get("classname") == "main.mm"]
    assert len(mm) == 2  # two rows share the op's run time
    mm_op = next(o for o in v.ops if o.run_name == "mm__at__test_mm.py")
    assert sum(float(c.get("time")) for c in mm) == pytest.approx(mm_op.duration_s, abs=0.002)
    total = sum(float(c.get("time", 0)) for c in root.iter("testcase"))
    assert float(root.get("time")) == pytest.approx(total, abs=0.01)
    given = ET.fromstring(render_junit(v, durations={"main/softmax": 12.0}))
    c = next(c for c in given.iter("testcase") if c.get("classname") == "main.softmax")
    assert c.get("time") == "12.000"


def test_one_op_from_two_benchmark_files_gets_two_classnames(tmp_path):
    base = {"mm": [brow("mm", "[8]", 1.0)], "mm__at__test_special.py": [brow("mm", "[8]", 1.0)]}
    b = load_baseline(write_baseline(tmp_path / "bl", base))
    res = [
        run_result("mm", [crow("mm", "[8]", 1.0)]),
        run_result("mm__at__test_special.py", [crow("mm", "[8]", 0.5)]),
    ]
    r = load_results(write_results(tmp_path / "res", res))
    v = run_gate(b, r, load_thresholds(None, b.manifest.thresholds), GateOptions())
    root = ET.fromstring(render_junit(v))
    ids = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert len(ids) == len(set(ids)) == 2
    assert {c for c, _ in ids} == {"main.mm", "main.mm@\u2060test_special_py"}  # @: no mention


def test_error_verdict_is_an_error_testcase(cases, schema):
    root = ET.fromstring(render_junit(cases["error"]))
    gate = next(c for c in root.iter("testcase") if c.get("classname") == "zlbench.gate")
    assert [e.tag for e in gate] == ["error"] and "NVIDIA A100" in gate[0].text


def test_op_level_failure_gets_a_testcase(cases, schema):
    v = cases["every"].model_copy(deep=True)
    v.rows = [r for r in v.rows if r.key.run_name != "index_put"]
    xml = render_junit(v)
    schema.validate(xml)
    root = ET.fromstring(xml)
    op = next(c for c in root.iter("testcase") if c.get("classname") == "main.index_put")
    assert op.get("name") == "op" and op[0].tag == "error" and "signal 11" in op[0].text


def test_allowed_mismatch_is_a_property(tmp_path):
    from scenario import build

    v = build(tmp_path, gpu="NVIDIA A100", allow_env_mismatch=True)
    assert 'name="mismatch.gpu_model" value="allowed"' in render_junit(v)


def test_passing_gate_has_no_failure(cases, schema):
    v = cases["every"].model_copy(deep=True)
    v.rows = [r for r in v.rows if r.verdict not in FAILING_VERDICTS]
    v.ops = [o for o in v.ops if o.verdict not in FAILING_VERDICTS]
    root = ET.fromstring(render_junit(v))
    assert root.get("failures") == "0" and root.get("errors") == "0"


@pytest.mark.parametrize("case", ["every", "fail", "error", "codegen"])
def test_every_testcase_is_timed_and_uniquely_named(cases, case):
    root = ET.fromstring(render_junit(cases[case]))
    tcs = list(root.iter("testcase"))
    assert tcs and all(c.get("time") is not None for c in tcs)
    ids = [(c.get("classname"), c.get("name")) for c in tcs]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", ["every", "fail", "error", "codegen"])
def test_messages_are_one_short_line(cases, case):
    root = ET.fromstring(render_junit(cases[case]))
    for el in root.iter():
        if el.tag in ("failure", "error", "skipped"):
            msg = el.get("message")
            assert msg and "\n" not in msg and len(msg) <= MESSAGE_MAX, msg


def test_compile_failures_carry_the_rebuild_time_and_distinct_names(cases):
    v = cases["codegen"]
    assert v.verdict == "FAIL" and len(v.codegen.failed) == 2
    root = ET.fromstring(render_junit(v))
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "zlbench.codegen"]
    assert float(suite.get("time")) == pytest.approx(23.6)
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names[1] == names[0] + " #2"
    per_kernel = 23.6 / v.codegen.kernels
    times = [float(c.get("time")) for c in suite.iter("testcase")]
    assert times == pytest.approx([per_kernel] * 2, abs=0.001)
    bodies = [f.text for f in suite.iter("failure")]
    assert bodies == v.codegen.failed  # details stay in the body
    assert len(bodies[1]) > MESSAGE_MAX  # the long compile error is in the body only
    assert float(root.get("time")) == pytest.approx(
        sum(float(s.get("time")) for s in root.iter("testsuite")), abs=0.01
    )


def test_unrecorded_codegen_time_falls_back_to_the_cases(cases):
    v = cases["codegen"].model_copy(deep=True)
    v.codegen.wall_s = None
    root = ET.fromstring(render_junit(v))
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "zlbench.codegen"]
    assert suite.get("time") == "0.000"
    assert all(c.get("time") == "0.000" for c in suite.iter("testcase"))
