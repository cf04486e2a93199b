"""The series text and the static trend page (issue 52, item 2), the page also in real
headless chromium: charts from zero, one line per row, commits on the x axis, the
gate's verdicts marked, nothing run or fetched."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from zlbench.cli import main
from zlbench.history.store import open_store
from zlbench.models.history import GateRun, RowPoint, SeriesPoint
from zlbench.report.trend import render_series, render_trend

ROW1 = "main/mm bfloat16 [torch.Size([4096, 4096])]"
ROW2 = "main/mm float16 [<b>4096</b>]"  # an artifact's text: escaped everywhere


def points(row: str, n: int, base: float = 100.0, step_at: int | None = None) -> list[SeriesPoint]:
    out = []
    for i in range(n):
        v = base * (1 + 0.005 * (-1) ** i) * (1.3 if step_at is not None and i >= step_at else 1)
        out.append(
            SeriesPoint(
                commit=f"c{i:02d}abcdef0123",
                position=i,
                run_id=i + 1,
                row=row,
                value_us=v,
                change=0.01,
                change_lo=0.0,
                change_hi=0.02,
                verdict="REGRESSION" if i == step_at else "PASS",
                digest="aaaa" if step_at is None or i < step_at else "bbbb",
            )  # fmt: skip
        )
    return out


def test_the_series_text_marks_digest_changes_and_gives_the_usual_noise():
    text = render_series(points(ROW1, 12, step_at=11))
    lines = text.splitlines()
    assert lines[0] == f"{ROW1}: 12 commit(s)"
    assert len([ln for ln in lines if ln.strip().startswith(tuple("0123456789"))]) == 12
    last = [ln for ln in lines if "REGRESSION" in ln][0]
    assert last.rstrip().endswith("bbbb *") and "[+0.0 %, +2.0 %]" in last
    assert "usual noise: ±" in text and "last step +28.7 %" in text and "× the usual noise" in text
    assert "aaaa *" not in text  # a digest that stayed is not marked
    short = render_series(points(ROW1, 5))
    assert "usual noise: n/a" in short


def test_the_trend_page_starts_at_zero_and_draws_one_line_per_row():
    page = render_trend(
        {"main/mm": {ROW1: points(ROW1, 12, step_at=8), ROW2: points(ROW2, 10, base=40)}},
        branch="main",
        store="h.sqlite",
    )
    (svg,) = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert svg.count('<polyline class="row"') == 2
    assert svg.count('<circle class="pt"') == 22
    assert svg.count('data-verdict="REGRESSION"') == 1
    zero = re.search(r'<line class="axis" x1="\d+" x2="\d+" y1="([\d.]+)" y2="[\d.]+" '
                     r'data-value="0"', svg)  # fmt: skip
    cys = [float(c) for c in re.findall(r'cy="([\d.]+)"', svg)]
    assert zero and max(cys) < float(zero[1])  # every point above the zero line
    assert "<b>" not in page and "&lt;b&gt;4096&lt;/b&gt;" in page
    assert "<script" not in page and "default-src 'none'" in page
    assert len(re.findall(r'<text class="commit"', svg)) == 12  # the commits on the x axis


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "h.sqlite"
    with open_store(path) as s:
        for i in range(12):
            rows = [RowPoint(row=ROW1, op="main/mm", value_us=100.0 + i % 3, verdict="PASS"),
                    RowPoint(row=ROW2, op="main/mm", value_us=40.0,
                             verdict="REGRESSION" if i == 7 else "PASS"),
                    RowPoint(row="main/sum f32 [8]", op="main/sum", value_us=5.0,
                             verdict="PASS")]  # fmt: skip
            s.add_run(GateRun(run_key=f"k{i}", commit=f"commit{i:02d}"), rows)
    return path


def test_history_html_writes_the_page_of_the_store(store, tmp_path, capsys):
    out = tmp_path / "trend.html"
    assert main(["history", "--store", str(store), "--html", str(out)]) == 0
    assert "3 rows, 2 ops" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert page.count("<svg") == 2 and 'data-op="main/mm"' in page
    assert main(["history", "--store", str(store), "--op", "main/sum", "--html", str(out)]) == 0
    assert out.read_text(encoding="utf-8").count("<svg") == 1


PROBE = """<script>
const out = [];
for (const svg of document.querySelectorAll("svg")) {
  const zero = svg.querySelector('line[data-value="0"]').getBoundingClientRect();
  const pts = [...svg.querySelectorAll("circle.pt")].map(c => c.getBoundingClientRect());
  const low = Math.max(...pts.map(r => r.top + r.height / 2));
  const lines = svg.querySelectorAll("polyline.row").length;
  const marked = svg.querySelectorAll('circle[data-verdict="REGRESSION"]').length;
  const box = svg.getBoundingClientRect();
  out.push([svg.dataset.op, lines, pts.length, marked, low <= zero.top + 0.5,
            box.width > 300 && box.height > 100].join(","));
}
document.body.insertAdjacentHTML("beforeend", "<pre id=probe>" + out.join(";") + "</pre>");
</script>"""


@pytest.mark.proc
@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium not installed")
def test_the_trend_page_renders_in_headless_chromium(store, tmp_path):
    out = tmp_path / "trend.html"
    assert main(["history", "--store", str(store), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page
    # the probe is the test's: the page's CSP (no script at all) is lifted for it only
    probed = tmp_path / "probed.html"
    probed.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace(
            "</body>", PROBE + "</body>"
        ),
        encoding="utf-8",
    )
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"]
    got = subprocess.run([*cmd, probed.as_uri()], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    probe = re.search(r'<pre id="probe">(.*?)</pre>', got.stdout)
    assert probe, got.stdout[-2000:]
    charts = dict(line.split(",", 1) for line in probe[1].split(";"))
    assert charts == {"main/mm": "2,24,1,true,true", "main/sum": "1,12,0,true,true"}
    # the page as shipped runs no script: the CSP blocks an injected one
    blocked = tmp_path / "blocked.html"
    blocked.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    got = subprocess.run([*cmd, blocked.as_uri()], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and 'id="probe"' not in got.stdout
