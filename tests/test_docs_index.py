"""README.md's "Docs" list is the index of docs/: every page there is linked, every link
resolves; every other file under docs/ is named by some page; the paths the
contributor's guide names exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def docs_list() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Docs\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- \[[^\]]+\]\(([^)]+)\)", section, flags=re.M)


def test_every_doc_page_is_in_the_readme_docs_list():
    pages = sorted(p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md"))
    assert sorted(set(docs_list())) == pages


def test_every_docs_list_link_resolves_once():
    links = docs_list()
    assert len(links) == len(set(links)), links
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_every_other_file_under_docs_is_named_by_a_page():
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    others = [p for p in DOCS.rglob("*") if p.is_file() and p.suffix != ".md"]
    assert [p for p in others if p.relative_to(ROOT).as_posix() not in text] == []


def test_the_contributors_guide_names_only_paths_that_exist():
    text = (DOCS / "contributing.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|md|json|sh|yaml))`", text))
    assert named, "no path found in docs/contributing.md"
    missing = [p for p in named if not (ROOT / p).exists() and not (ROOT / "zlbench" / p).exists()]
    assert sorted(missing) == []
