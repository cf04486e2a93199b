"""docs/reports.md, "The real H200 reports", cannot drift from the code (issue 27, Done
means): every command of its table re-renders its shipped H200 gate with the verdict and
exit code the table says, and every excerpt marked ``<!-- excerpt: examples/DIR -->``
is the first lines of what ``zlbench report`` (or ``gate --results``) renders for DIR
now, up to the ``…`` that mark lines left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.support.trees import shipped_dirs
from zlbench.cli import main

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "reports.md"
SECTION = "## The real H200 reports"
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the verdict's ``generated``
MARK = re.compile(r"^<!-- excerpt: examples/(\S+) -->\n```markdown\n(.*?)\n```$", re.S | re.M)
GAP = "…"


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def table() -> dict[str, tuple[list[str], str, int]]:
    """Dir -> (the command's argv after ``zlbench``, verdict, exit code) of each row of
    the section's table that has a command."""
    text = doc().split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[2].startswith("`zlbench "):
            continue
        verdict, rc = (x.strip() for x in cells[3].split(","))
        rows[cells[0].strip("`")] = (shlex.split(cells[2].strip("`"))[1:], verdict, int(rc))
    return rows


def excerpts() -> dict[str, list[str]]:
    return {m.group(1): m.group(2).splitlines() for m in MARK.finditer(doc())}


def command(name: str) -> list[str]:
    """The table's command for ``name``."""
    return table()[name][0]


def render(argv: list[str], out: Path, monkeypatch) -> tuple[int, list[str]]:
    """(exit code, report.md's lines) of ``zlbench ARGV --out OUT``, run from the repo
    root so that the paths read as in the doc."""
    monkeypatch.chdir(REPO)
    rc = main([*argv, "--out", str(out)])
    return rc, (out / "report.md").read_text(encoding="utf-8").splitlines()


def same(doc_line: str, line: str) -> bool:
    """A doc line is the report's line (the render time aside), or its start when it
    ends with …."""
    doc_line, line = STAMP.sub("<T>", doc_line), STAMP.sub("<T>", line)
    if doc_line == line:
        return True
    return (
        doc_line.endswith(GAP) and len(line) > len(doc_line) - 1 and line.startswith(doc_line[:-1])
    )


def mismatch(excerpt: list[str], report: list[str]) -> str:
    """ "" when ``excerpt`` is ``report`` from its title on, with each ``…`` line
    standing for lines left out; else the first excerpt line that is not."""
    j = next((i for i, line in enumerate(report) if same(excerpt[0], line)), None)
    if j is None:
        return f"the title {excerpt[0]!r} is not in report.md"
    gap = False
    for line in excerpt:
        if line == GAP:
            gap = True
            continue
        if gap:
            k = next((i for i in range(j, len(report)) if same(line, report[i])), None)
            if k is None:
                return f"not in report.md after line {j}: {line!r}"
            j, gap = k, False
        elif j >= len(report) or not same(line, report[j]):
            got = report[j] if j < len(report) else "(end of report.md)"
            return f"line {j + 1} of report.md is {got!r}, the doc says {line!r}"
        j += 1
    return ""


def test_the_section_lists_every_shipped_gate():
    rows = table()
    dirs = set(shipped_dirs("examples"))
    assert set(rows) == dirs - {"h200-full-screen"}, "a gate dir missing from the table"
    assert "`h200-full-screen`" in doc().split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert {"h200-aa-interleaved", "h200-gate-v4-no-coalesce", "h200-gate-no-compile"} <= set(
        excerpts()
    )
    assert re.search(r"with zlbench `[0-9a-f]{7,}`", doc().split(SECTION, 1)[1])


@pytest.mark.parametrize("name", sorted(table()))
def test_each_command_of_the_table_renders_the_verdict_it_says(name, tmp_path, monkeypatch):
    argv, verdict, rc = table()[name]
    got, report = render(argv, tmp_path / "out", monkeypatch)
    assert got == rc, f"{name}: exit {got}, the doc says {rc}"
    assert report[1].startswith("## ") and report[1].endswith(f"zlbench gate: {verdict}")


@pytest.mark.parametrize("name", sorted(excerpts()))
def test_each_excerpt_is_what_the_code_renders(name, tmp_path, monkeypatch):
    _, report = render(command(name), tmp_path / "out", monkeypatch)
    excerpt = excerpts()[name]
    assert excerpt[0].startswith("## "), f"{name}: an excerpt starts at the report's title"
    assert not (problem := mismatch(excerpt, report)), f"{name}: {problem}"


def test_the_matcher_catches_a_changed_line_and_a_missing_one():
    report = ["<!-- m -->", "## T", "", "a 2026-12-01T13:50:59Z", "b", "c long line", "d"]
    assert mismatch(["## T", "", "a 2030-01-01T00:00:00Z", "b", "c lo…", GAP, "d"], report) == ""
    assert "doc says 'x'" in mismatch(["## T", "", "a 2026-12-01T13:50:59Z", "x"], report)
    assert "not in report.md" in mismatch(["## T", GAP, "e"], report)
    assert mismatch(["## T", "a 2026-12-01T13:50:59Z"], report)  # a left-out line needs …
