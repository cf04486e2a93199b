"""report.html: one self-contained file (no network), sortable tables, the chart,
IR diffs when given; loaded in a real headless Chromium when one is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from cases import every_verdict, real_fail

from tests.support.mdcheck import StartTags
from zlbench.report.facts import ReportExtras
from zlbench.report.html import render_html

DIFF = "--- a/softmax.ttgir\n+++ b/softmax.ttgir\n-  num_warps = 8\n+  num_warps = 4\n"


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    v = real_fail(tmp_path_factory.mktemp("html"))
    extras = ReportExtras(codegen=(2, 35), ir_diffs={"main/softmax": DIFF})
    return render_html(v, extras)


def test_self_contained(html):
    d = StartTags()
    d.feed(html)
    assert not any(k in ("src", "href") for _, a in d.tags for k in a)  # nothing to fetch
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "default-src 'none'" in html


def test_tables_chart_and_diffs(html):
    d = StartTags()
    d.feed(html)
    assert sum(1 for t, a in d.tags if t == "table" and "sortable" in a.get("class", "")) == 2
    assert sum(1 for t, _ in d.tags if t == "rect") == 34  # one bar per judged op
    assert '<span class="del">-  num_warps = 8</span>' in html
    assert '<span class="add">+  num_warps = 4</span>' in html
    assert "Generated code: 2 of 35 kernels changed." in html
    first = re.search(r"<tbody>\s*<tr class=\"bad\">\s*<td><code>(\w+)</code>", html)
    assert first and first.group(1) == "softmax"  # failing ops first, worst first


def test_html_of_every_verdict_kind_renders(tmp_path):
    html = render_html(every_verdict(tmp_path))
    assert "RuntimeError: CUDA error" in html and "zlbench run --op" in html


@pytest.mark.proc
@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium not installed")
def test_loads_in_headless_chromium_and_the_script_runs(html, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    out = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'data-ready="1"' in out.stdout  # the inline script ran under the CSP
    assert out.stdout.count("<tr") == html.count("<tr")


def test_systemic_lines_and_unmeasured_ops_are_shown(tmp_path):
    v = every_verdict(tmp_path)
    v.systemic, v.not_measured = ["13 ops fail: <b>SystemError</b>"], ["main/zeros"]
    html = render_html(v)
    assert "13 ops fail: &lt;b&gt;SystemError&lt;/b&gt;" in html and "<code>zeros</code>" in html


PROBE = (
    '<script>document.body.insertAdjacentHTML("beforeend", "<pre id=probe>width="'
    ' + document.documentElement.scrollWidth + "</pre>")</script>'
)


def test_every_table_scrolls_inside_the_page_and_shapes_wrap_at_spaces(html):
    """No table can widen the page: each sits in a scrolling wrapper, and a shape cell
    wraps between words (``overflow-wrap: anywhere`` let the table squeeze the shape
    column to one character a line)."""
    assert html.count("<table") == html.count('<div class="wide"><table')
    assert "overflow-wrap: anywhere" not in html
    assert re.search(r"td\.shape \{[^}]*min-width: \d+px", html)


@pytest.mark.proc
@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium not installed")
@pytest.mark.parametrize("window", [1400, 1280])
def test_report_fits_the_window_in_headless_chromium(tmp_path, window):
    from cases import large_fail

    v = large_fail(real_fail(tmp_path / "v"), 60)  # long shapes and reasons, many rows
    page = tmp_path / "report.html"
    page.write_text(render_html(v).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    cmd += [f"--window-size={window},900", "--dump-dom", page.as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    width = int(re.search(r"<pre id=\"probe\">width=(\d+)</pre>", out.stdout)[1])
    assert width <= window
