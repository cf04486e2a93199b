"""docs/architecture.md matches the code: every zlbench path it names exists, every
package is in its module table, every run-dir name it lists is a protocol constant."""

from __future__ import annotations

import re
from pathlib import Path

from zlbench.protocol import layout

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGES = sorted(
    p.parent.relative_to(ROOT).as_posix() + "/"
    for p in (ROOT / "zlbench").rglob("__init__.py")
    if "__pycache__" not in p.parts and p.parent != ROOT / "zlbench"
)


def table_rows() -> dict[str, str]:
    """First cell (a `zlbench/...` path) -> the row, for the module table."""
    rows = re.findall(r"^\| `(zlbench/[^`]+)` \|(.*)$", DOC, re.M)
    return dict(rows)


def test_every_path_the_doc_names_exists():
    named = set(re.findall(r"`(zlbench/[\w/.]+)`", DOC))
    assert named, "no zlbench path found in docs/architecture.md"
    assert sorted(p for p in named if not (ROOT / p).exists()) == []


def test_every_package_has_a_row_in_the_module_table():
    rows = table_rows()
    missing = [p for p in PACKAGES if p not in rows and not p.startswith("zlbench/plugins/")]
    assert missing == []


def test_the_modules_a_row_lists_exist_in_its_package():
    for package, row in table_rows().items():
        if not package.endswith("/"):
            continue
        for name in re.findall(r"`([\w]+\.py)`", row):
            assert (ROOT / package / name).is_file(), f"{package}{name}"


def test_the_directories_section_uses_the_protocol_names():
    section = DOC.split("## Directories", 1)[1].split("\n## ", 1)[0]
    for name in (layout.RESULT_JSON, layout.RUN_LOG, layout.OPS_STATUS, layout.BATCH_JSON):
        assert name in section
    for name in (layout.RECORDS_DIR, layout.ATTEMPTS_DIR, layout.CONFIRM_DIR, layout.COMPLETE):
        assert name in section
