"""Every page under docs/ is linked from README.md's "Where to go next" list or from
docs/contributing.md's "The docs" list (a new page linked from neither fails), every
link there resolves; every other file under docs/ is named by some page; the paths the
contributor's guide names exist; docs/measurements.md's "Current numbers" link only
to its own dated sections, and docs/judging.md points to them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
GUIDE = DOCS / "contributing.md"
LIST_LINK = re.compile(r"^- \[[^\]]+\]\(([^)#]+)\)", flags=re.M)
ANY_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"{path.name} has no '## {heading}'"
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def list_links(path: Path, heading: str) -> list[str]:
    """The list's links, as paths relative to the repository root."""
    links = LIST_LINK.findall(section(path, heading))
    return [(path.parent / link).resolve().relative_to(ROOT).as_posix() for link in links]


def readme_list() -> list[str]:
    return list_links(README, "Where to go next")


def guide_list() -> list[str]:
    return list_links(GUIDE, "The docs")


def linked_pages() -> set[str]:
    """Every .md page README.md or docs/contributing.md links to, anywhere in them."""
    out = set()
    for path in (README, GUIDE):
        for link in ANY_LINK.findall(path.read_text(encoding="utf-8")):
            if "://" not in link:
                out.add((path.parent / link).resolve().relative_to(ROOT).as_posix())
    return out


def test_every_doc_page_is_linked_from_the_readme_or_the_guide():
    pages = {p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md")}
    assert sorted(pages - linked_pages()) == []
    # the two lists alone cover every page: the map a newcomer follows
    assert sorted(pages - set(readme_list()) - set(guide_list())) == []


def test_the_readme_sends_contributors_to_the_guide():
    assert readme_list()[0] == "docs/contributing.md"
    assert "docs/contributing.md" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_every_list_link_resolves_once():
    for links in (readme_list(), guide_list()):
        assert links and len(links) == len(set(links)), links
        assert [link for link in links if not (ROOT / link).is_file()] == []
    assert [p for p in linked_pages() if not (ROOT / p).is_file()] == []


def test_every_other_file_under_docs_is_named_by_a_page():
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    others = [p for p in DOCS.rglob("*") if p.is_file() and p.suffix != ".md"]
    assert [p for p in others if p.relative_to(ROOT).as_posix() not in text] == []


def test_the_contributors_guide_names_only_paths_that_exist():
    text = GUIDE.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|md|json|sh|yaml))`", text))
    assert named, "no path found in docs/contributing.md"
    missing = [p for p in named if not (ROOT / p).exists() and not (ROOT / "zlbench" / p).exists()]
    assert sorted(missing) == []


def slugs(text: str) -> Iterator[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated heading suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        yield slug if seen[slug] == 0 else f"{slug}-{seen[slug]}"


def test_current_numbers_link_to_dated_sections():
    text = (DOCS / "measurements.md").read_text(encoding="utf-8")
    current = section(DOCS / "measurements.md", "Current numbers")
    assert text.index("## Current numbers") < text.index("\n## 2026-"), "not at the top"
    bullets = re.findall(r"^- .+?(?=^- |\Z)", current, flags=re.M | re.S)
    assert 5 <= len(bullets) <= 10, len(bullets)
    anchors = set(slugs(text))
    for bullet in bullets:
        links = re.findall(r"\]\(#([^)]+)\)", bullet)
        assert links, f"a current number without its section: {bullet[:60]}"
        assert [a for a in links if a not in anchors] == [], bullet[:60]
    judging = (DOCS / "judging.md").read_text(encoding="utf-8")
    assert "(measurements.md#current-numbers)" in judging
