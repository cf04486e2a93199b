"""What a FlagTree engineer reads, round 4 (issue 50, the renderer half): an ERROR that
judges nothing says only what went wrong and what to do; the first line's op counts add
up; the ops the codegen screen proved identical are passed JUnit testcases; one spelling
per op; the why line leads with the figures; the compilers by build in every report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cases import error as error_case
from cases import every_verdict, real_fail

from zlbench.cli import main
from zlbench.gate.aggregate import count_ops, screened, summary_line
from zlbench.models import GateVerdict, KernelNote, RowKey, RowVerdict, Verdict
from zlbench.models.codegen_screen import CodegenClass
from zlbench.protocol.ops import display_names, select_keys
from zlbench.report.error import unjudged
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import render_comment, render_markdown
from zlbench.report.why import why_lines

REPO = Path(__file__).resolve().parents[2]
FILES = ("report.md", "comment.md", "report.html", "junit.xml", "verdict.json")
JUDGED_WORDS = ("Geomean", "rows:", "### Counts", "mermaid", "### Regressed", "ops checked")
# the first line: "FAIL: 34 ops checked = 7 timed (3 failing) + 27 proven identical + 0 skipped"
COUNTS = re.compile(
    r"(\d+) ops checked = (\d+) timed \\?\((\d+) failing\\?\) \+ (\d+) proven identical "
    r"\+ (\d+) skipped(?: \+ (\d+) over the GPU budget)?;"
)


def gate_dir(argv: list[str], out: Path, monkeypatch) -> tuple[int, dict[str, str]]:
    monkeypatch.chdir(REPO)
    rc = main([*argv, "--out", str(out)])
    return rc, {name: (out / name).read_text(encoding="utf-8") for name in FILES}


def assert_error_only(files: dict[str, str]) -> None:
    """Every report of an ERROR says what went wrong and what to do, and nothing judged."""
    for name in ("report.md", "comment.md"):
        md = files[name]
        assert "zlbench gate: ERROR (nothing judged)" in md.splitlines()[1], name
        assert "### What to do" in md, name
        assert not [w for w in JUDGED_WORDS if w in md], name
    html = files["report.html"]
    assert "nothing judged" in html and "What to do" in html
    assert "<svg" not in html and 'id="rows"' not in html and "Geomean" not in html
    root = ET.fromstring(files["junit.xml"])
    cases = list(root.iter("testcase"))
    assert len(cases) == 1 and root.get("tests") == "1" and root.get("errors") == "1"
    (outcome,) = list(cases[0].iter("error"))
    assert outcome.get("message").startswith("ERROR: ") and "What" not in outcome.get("message")
    v = json.loads(files["verdict.json"])
    assert v["verdict"] == "ERROR" and v["rows"] == [] and v["counts"] == {}


@pytest.mark.data
def test_the_real_environment_mismatch_writes_a_few_kb_that_judge_nothing(tmp_path, monkeypatch):
    """gate --baseline baselines/v7 --results examples/h200-gate-v1: 25 MB before (6,416
    red JUnit testcases, a judged geomean and chart in report.html)."""
    argv = ["gate", "--baseline", "baselines/v7", "--results", "examples/h200-gate-v1"]
    rc, files = gate_dir(argv, tmp_path / "out", monkeypatch)
    assert rc == 2
    assert_error_only(files)
    assert sum(len(t.encode()) for t in files.values()) < 30_000
    md = files["report.md"]
    assert "use\\_flagtune: baseline `0`, results `(not recorded)`" in md
    assert "--allow-env-mismatch" in md.split("### What to do", 1)[1]
    assert "Compilers: under test triton 3.6.0" in md  # the compilers, even here
    assert "softmax\\_backward" not in md  # a FALLBACK's log: judged detail, not shown


def test_a_synthetic_error_with_every_verdict_kind_renders_only_the_error(tmp_path):
    """The rows of every kind in the verdict (a judge's work that an ERROR voids) reach
    no report; a failed op, which can say why nothing was measured, does."""
    v = error_case(tmp_path)
    assert v.rows and v.counts  # the judge's rows are in the verdict given
    files = {
        "report.md": render_markdown(v),
        "comment.md": render_comment(v),
        "report.html": render_html(v),
        "junit.xml": render_junit(v),
        "verdict.json": unjudged(v).model_dump_json(),
    }
    assert_error_only(files)
    assert "### Failed ops (1)" in files["report.md"] and "SIGSEGV" in files["report.html"]
    assert unjudged(every_verdict(tmp_path / "p")).rows  # any other verdict: as it is


def test_an_error_summary_is_its_reason_alone():
    assert summary_line("ERROR: ", "", {}, []).startswith("ERROR: ")
    line = summary_line("ERROR", "environment differs — x", {"PASS": 3}, [])
    assert line == "ERROR: environment differs — x"


# --------------------------------------------------------------------------- the counts


def counts_of(summary: str) -> tuple[int, ...]:
    m = COUNTS.search(summary)
    assert m, summary
    return tuple(int(x) if x else 0 for x in m.groups())


def assert_counts_add_up(v: GateVerdict, junit: str) -> tuple[int, ...]:
    checked, timed, failing, identical, skipped, over = counts_of(v.summary)
    assert checked == timed + identical + skipped + over
    proven, beyond = screened(v.codegen)
    assert (timed + skipped, identical, over) == (len(v.ops), len(proven), len(beyond))
    assert skipped == sum(o.verdict is Verdict.SKIPPED for o in v.ops)
    assert failing == count_ops(v.ops).failing
    root = ET.fromstring(junit)
    passed = [c for c in root.iter("testcase") if c.get("classname") == "zlbench.proven_identical"]
    outcomes = [c for c in passed if c.find("failure") is not None or c.find("skipped") is not None]
    assert len(passed) == identical and not outcomes  # passed, the proof as output
    return checked, timed, failing, identical, skipped, over


@pytest.mark.data
@pytest.mark.parametrize(
    "argv, rc, want",
    [
        (  # the shipped FAIL: 17 REGRESSION rows, 2 ops proven identical
            ["report", "examples/h200-gate-v5-no-coalesce", "--baseline", "baselines/v5",
             "--ops-file", "ops/gate_core.txt"],
            1,
            (34, 32, 14, 2, 0, 0),
        ),
        (  # --time changed: 27 ops not timed on their proof
            ["report", "examples/h200-gate-v2-no-pipeline", "--baseline", "baselines/v2"],
            1,
            (34, 7, 3, 27, 0, 0),
        ),
        (  # the README's PASS: one op dismissed
            ["gate", "--baseline", "baselines/v1", "--results", "examples/h200-gate-v1"],
            0,
            (35, 34, 0, 0, 1, 0),
        ),
    ],
)  # fmt: skip
def test_the_first_line_counts_add_up_on_the_shipped_gates(argv, rc, want, tmp_path, monkeypatch):
    got_rc, files = gate_dir(argv, tmp_path / "out", monkeypatch)
    assert got_rc == rc
    v = GateVerdict.model_validate_json(files["verdict.json"])
    assert assert_counts_add_up(v, files["junit.xml"]) == want
    for name in ("report.md", "comment.md"):
        assert counts_of(files[name].splitlines()[3]) == want  # the first line, every medium
    assert "ops checked = " in files["report.html"].split("</p>", 1)[0]
    if want[3]:  # the screen's proof is each passed testcase's output
        assert "proven identical by the codegen screen" in files["junit.xml"]


# --------------------------------------------------------------------------- op names


def test_one_spelling_per_op_the_name_a_person_types():
    keys = [
        "main/bmm__at__test_bmm.py",
        "main/mm",
        "main/mm__at__test_mm.py",
        "vllm/mm",
        "main/abs",
    ]
    names = display_names(keys)
    assert names == {
        "main/bmm__at__test_bmm.py": "bmm",  # the only bmm: its name
        "main/mm": "main:mm",  # three mm: each by its SPEC, the repo where two share it
        "main/mm__at__test_mm.py": "mm@test_mm.py",
        "vllm/mm": "vllm:mm",
        "main/abs": "abs",
    }
    for key, name in names.items():  # each spelling selects its op, and only it
        assert select_keys(name, keys) == {key}


def test_the_reports_spell_each_op_one_way(tmp_path):
    v = real_fail(tmp_path)
    md, html, junit = render_markdown(v), render_html(v), render_junit(v)
    for text in (md, html, junit):
        assert "__at__" not in text and "main/bmm" not in text
    assert '"bmm"' in md and "bmm@" not in md  # the only bmm: its name (the chart's)
    assert 'classname="main.bmm"' in junit


# --------------------------------------------------------------------------- the why line


def test_the_why_line_leads_with_the_figures_and_keeps_them_within_its_cap():
    note = KernelNote(
        kernel_id="b32327d8a8c672d2",
        name="bmm_kernel",
        status=CodegenClass.TTGIR,
        deltas={"n_regs": 30, "shared": -32768, "sass_instructions": 156},
        diff_file="examples/h200-gate-v2-no-pipeline/codegen/diffs/b32327d8a8c672d2.diff",
    )
    shape = "[torch.Size([16, 1024, 1024]), torch.Size([16, 1024, 1024])]"
    key = RowKey(
        repo="main", run_name="bmm__at__test_bmm.py", op="bmm", dtype="bfloat16", shape=shape
    )
    (line,) = why_lines([RowVerdict(key=key, verdict=Verdict.REGRESSION, codegen=[note])])
    figures = "regs +30, shared -32768 B, SASS +156 instructions"
    assert f"`bmm_kernel`: {figures}; TTGIR differs" in line and len(line) <= 200
    assert line.startswith("- `bmm` `bfloat16`")


# --------------------------------------------------------------------------- small things


def test_junit_messages_say_one_percent_change_never_a_ratio(tmp_path):
    root = ET.fromstring(render_junit(real_fail(tmp_path)))
    messages = [e.get("message") for e in root.iter() if e.tag in ("failure", "error")]
    assert messages and all("%" in m and "ratio" not in m for m in messages)


def test_a_skipped_row_shows_no_limit(tmp_path):
    """A row judged on no number (SKIPPED: dismissed or unsupported) has no limit cell
    ("n/a" before)."""
    html = render_html(every_verdict(tmp_path))
    rows = [tr for tr in html.split('id="rows"', 1)[1].split("<tr")[2:] if "<td>SKIPPED</td>" in tr]
    assert rows
    for tr in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        assert cells[3] == "SKIPPED" and cells[8] == ""  # the limit column


def test_the_limit_is_explained_beside_the_threshold_and_in_the_legend(tmp_path):
    v = real_fail(tmp_path)
    md, html = render_markdown(v), render_html(v)
    assert "1/(1 − t) − 1, so 5 % per row is a limit of +5.3 %" in md
    assert "5% per row (a limit of +5.3 % in judged change" in md
    assert "1/(1 − t) − 1, so 5 % per row is a limit of +5.3 %" in html


def test_every_report_names_the_compiler_by_its_build_and_the_base_beside_it(tmp_path):
    v = real_fail(tmp_path)
    v.current_env.compiler_build, v.current_env.triton_dist = "cf2eb46954aaab91", "flagtree"
    v.baseline_env.flagtree_commit = "0123abcd"
    line = (
        "Compilers: under test flagtree 3.6.0, build cf2eb46954aaab91; the baseline was "
        "recorded with triton 3.6.0, commit 0123abcd."
    )
    md = render_markdown(v)
    assert line in md.split("###", 1)[0]  # the header's, no markdown escape in it
    assert line in render_html(v) and line in render_junit(v)
    error = error_case(tmp_path / "e")
    assert "Compilers: under test flagtree 3.6.0, commit 1234567890abcdef" in render_html(error)


@pytest.mark.proc
@pytest.mark.data
@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium not installed")
def test_the_rows_table_of_the_shipped_fail_fits_1280_px(tmp_path, monkeypatch):
    argv = ["report", "examples/h200-gate-v5-no-coalesce", "--baseline", "baselines/v5"]
    argv += ["--ops-file", "ops/gate_core.txt"]
    _, files = gate_dir(argv, tmp_path / "out", monkeypatch)
    probe = (
        '<script>var t = document.getElementById("rows"), o = document.getElementById("ops");'
        ' document.body.insertAdjacentHTML("beforeend", "<pre id=probe>" + t.offsetWidth + " "'
        ' + t.parentNode.clientWidth + " " + o.offsetWidth + " " + o.parentNode.clientWidth'
        ' + "</pre>")</script>'
    )
    page = tmp_path / "report.html"
    page.write_text(files["report.html"].replace("</body>", probe + "</body>"), encoding="utf-8")
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    cmd += ["--window-size=1280,900", "--dump-dom", page.as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe">(\d+) (\d+) (\d+) (\d+)</pre>', out.stdout)
    table, room, ops, ops_room = map(int, found.groups())
    assert table <= room <= 1280 and ops <= ops_room <= 1280
    # the Ops table uses the width (its reasons were a 300 px column in an 890 px table)
    assert ops > 1100


def test_the_compiler_under_test_is_the_one_the_ab_probed_where_the_runs_disagree(tmp_path):
    """The runs' record names a build only where its path is the A/B's PR path: the
    shipped H200 gates recorded the install a linked copy links to (build cf2eb...),
    while the A/B ran the copy itself (<WORK>/triton/patched/triton)."""
    from zlbench.models.ab import AbCompiler, AbSummary
    from zlbench.report.facts import compiler_line

    v = real_fail(tmp_path)
    v.current_env.compiler_build = "cf2eb46954aaab91"
    v.current_env.compiler_path = "/venv/site-packages/triton"
    pr = AbCompiler(version="3.6.0", path="<WORK>/triton/patched/triton")
    base = AbCompiler(version="3.6.0", path="<WORK>/triton/base/triton")
    v.ab = AbSummary(mode="full", rounds=1, threshold=0.03, pr=pr, base=base)
    line = compiler_line(v)
    assert "patched" in line and "cf2eb46954aaab91" not in line
    v.ab.pr.path = v.current_env.compiler_path  # one path: the run's record, with its build
    assert "build cf2eb46954aaab91, from /venv/site-packages/triton" in compiler_line(v)
