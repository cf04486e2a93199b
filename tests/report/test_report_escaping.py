"""A hostile results dir (op names, shapes, errors, logs, environment and markers
written by the PR's code) rendered into every medium: markdown (report and
comment), HTML, JUnit, compare and a CI log line; none of it may become live
markup, a link, an image, a mention, a heading or a workflow command."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from tests.support.mdcheck import StartTags, fences, live_text
from tests.support.zlsynth import (
    ENV,
    brow,
    crow,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.gate.verdict import GateOptions, run_gate
from zlbench.models import RunStatus, ThresholdsFile
from zlbench.report.compare import compare, render_compare
from zlbench.report.escape import log_line, md_code, md_fence, md_text
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import MARKER, render_comment, render_markdown

XSD = Path(__file__).resolve().parent.parent / "data" / "junit" / "junit.xsd"
EVIL = (
    "x\n## ✅ PASS\n<img src=https://evil.example/p.png> [click](https://evil.example) "
    "![i](https://evil.example/i.png) @admin www.evil.example ```` `` \n::warning::pwned "
    "</pre></script><script>alert(1)</script> &amp; | pipe\r::add-mask::s3cret"
)
SHAPE = "[1024] ``` @admin <b>x</b>"
NAME = "evil\n::warning::pwned"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    bl = write_baseline(
        tmp / "bl", {"add": [brow("add", SHAPE, 1.0)], "mul": [brow("mul", "[8]", 1.0)]}
    )
    env = ENV.model_copy(update={"torch": "2.11.0+cu130 " + EVIL, "hostname": EVIL})
    results = [
        run_result(
            "add",
            [crow("add", SHAPE, 0.5), crow("add", EVIL, 1.0)],
            markers=[replay_marker("bfloat16", EVIL, kernel=EVIL, reason=EVIL)],
            env=env,
        ),
        run_result("mul", [], status=RunStatus.FAIL, error=EVIL, failing_shape=EVIL, env=env),
        run_result(NAME, [crow(NAME, EVIL, 1.0)], env=env),
    ]
    rdir = write_results(tmp / "res", results, log="\n".join(EVIL.splitlines() * 3) + "\n")
    (rdir / "ops_status.csv").unlink()  # zlsynth's writer does not quote; result.json suffices
    b = load_baseline(bl)
    opts = GateOptions(baseline_label="baselines/vtest", results_label=EVIL, generated=EVIL)
    v = run_gate(b, load_results(rdir), load_thresholds(None, b.manifest.thresholds), opts)
    assert v.verdict == "FAIL" and any(o.log_tail for o in v.ops)
    return v


def no_command_lines(text: str) -> None:
    bad = [line for line in text.splitlines() if line.lstrip().startswith("::")]
    assert not bad, bad


def check_markdown(md: str) -> None:
    blocks, closed = fences(md)
    assert closed, "a fenced block is left open"
    assert md.startswith(MARKER + "\n")
    live = live_text(md.removeprefix(MARKER))
    text = "\n".join(live)
    assert "<" not in text and ">" not in text.replace("→", "")  # no raw HTML
    assert "](" not in text and "![" not in text  # no link or image
    assert not re.search(r"@\w", text)  # no mention
    assert not re.search(r"(?i)https?://|www\.", text)  # no autolink
    headings = [line for line in live if line.lstrip().startswith("#")]
    assert all(re.match(r"#{2,3} [^#]", h) for h in headings), headings
    ours = [h for h in headings if h.startswith("## ")]
    assert ours == ["## ❌ zlbench gate: FAIL"]
    no_command_lines(md)
    for _, info, body in blocks:
        assert not any(re.search(r"@\w", line) for line in body if info != "sh")


def test_markdown_report_keeps_hostile_text_inert(hostile):
    check_markdown(render_markdown(hostile))


@pytest.mark.parametrize("limit", [3_000, 6_000, 65_536])
def test_comment_keeps_hostile_text_inert_at_any_cut(hostile, limit):
    md = render_comment(hostile, limit=limit)
    assert len(md) <= limit
    check_markdown(md)


def test_html_keeps_hostile_text_inert(hostile):
    html = render_html(hostile)
    p = StartTags()
    p.feed(html)
    names = [t for t, _ in p.tags]
    assert names.count("script") == 1 and "img" not in names and "a" not in names
    assert not any(k in ("src", "href") or k.startswith("on") for _, a in p.tags for k in a)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_junit_keeps_hostile_text_inert(hostile):
    xml = render_junit(hostile)
    xmlschema.XMLSchema(str(XSD)).validate(xml)
    root = ET.fromstring(xml)
    texts = [el.text or "" for el in root.iter()] + [
        v for el in root.iter() for v in el.attrib.values()
    ]
    for t in texts:
        no_command_lines(t)
        assert not re.search(r"@\w", t) and not re.search(r"(?i)https?://", t), t


def test_compare_and_log_lines_keep_hostile_text_inert(hostile, tmp_path):
    out = log_line(hostile.summary) + "\n" + log_line(EVIL)
    no_command_lines(out)
    res = load_results(write_results(tmp_path / "r", [run_result("add", [crow("add", EVIL, 1.0)])]))
    rows = res.rows()
    text = render_compare(compare(rows, rows, ThresholdsFile()), EVIL, EVIL)
    no_command_lines(text)
    assert not re.search(r"@\w", "\n".join(live_text(text)))


@pytest.mark.parametrize("s", ["a`b", "``", "` x `", "|", "a\nb", "````x"])
def test_code_span_holds_any_backtick_run(s):
    code = md_code(s)
    run = len(code) - len(code.lstrip("`"))
    inner = code[run:-run]
    assert code.endswith("`" * run)
    assert all(len(m) != run for m in re.findall(r"`+", inner))
    assert "\n" not in code


def test_fence_is_longer_than_any_backtick_run_it_holds():
    block = md_fence(["```", "``````", "::error::x"])
    blocks, closed = fences(block + "\nafter")
    assert closed and len(blocks) == 1 and blocks[0][2][0] == "```"
    no_command_lines(block)


def test_md_text_escapes_markup_but_reads_the_same():
    s = md_text("1. *a* <b> [l](u) # h")
    assert re.sub(r"\\(.)", r"\1", s) == "1. *a* <b> [l](u) # h"
    assert "<" not in live_text(s)[0]
