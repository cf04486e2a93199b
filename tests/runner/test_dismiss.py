"""ops/dismiss.txt: every entry carries a date and a reason."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss, parse_dismiss

GOOD = """\
# header comment
index_put            # 2025-06-01 hangs the GPU at 4096x4096

vllm:fused_moe       # 2025-06-02 needs 2 GPUs
mm@test_blas_perf.py # 2025-06-03 duplicate of mm # with a hash in the reason
"""


def test_parse_good_file():
    entries = parse_dismiss(GOOD)
    assert [(e.repo, e.op, e.date, e.line) for e in entries] == [
        (None, "index_put", dt.date(2025, 6, 1), 2),
        ("vllm", "fused_moe", dt.date(2025, 6, 2), 4),
        (None, "mm@test_blas_perf.py", dt.date(2025, 6, 3), 5),
    ]
    assert entries[0].reason == "hangs the GPU at 4096x4096"
    assert entries[2].reason == "duplicate of mm # with a hash in the reason"


def test_matching():
    entries = parse_dismiss(GOOD)
    assert find_dismissal(entries, "main", "index_put").line == 2
    assert find_dismissal(entries, "vllm", "index_put").line == 2  # bare: every repo
    assert find_dismissal(entries, "vllm", "fused_moe").line == 4
    assert find_dismissal(entries, "main", "fused_moe") is None
    assert find_dismissal(entries, "main", "mm") is None


@pytest.mark.parametrize(
    "line,text",
    [
        ("abs  # 2025-06-01", "needs a date and a reason"),
        ("abs  # 2025-13-01 month 13", "bad date"),
        ("abs def  # 2025-06-01 two ops", "bad op spec"),
        ("nope:abs  # 2025-06-01 r", None),  # any repo label parses; select checks repos
    ],
)
def test_malformed_entry_names_its_line(line, text):
    src = f"# ok\nsoftmax  # 2025-01-01 fine\n{line}\n"
    if text is None:
        assert parse_dismiss(src)[1].repo == "nope"
        return
    with pytest.raises(ZlbenchError) as e:
        parse_dismiss(src, source="ops/dismiss.txt")
    assert str(e.value).startswith("ops/dismiss.txt:3: ")
    assert text in str(e.value)


def test_duplicate_entry_is_an_error():
    with pytest.raises(ZlbenchError, match="dismiss.txt:2: 'abs' is already dismissed at line 1"):
        parse_dismiss("abs # 2025-01-01 a\nabs # 2025-01-02 b\n")


def test_load_missing_file_dismisses_nothing(tmp_path):
    assert load_dismiss(tmp_path / "dismiss.txt") == []


def test_shipped_dismiss_list_is_valid():
    path = Path(__file__).resolve().parents[2] / "ops" / "dismiss.txt"
    assert path.is_file()
    for entry in load_dismiss(path):
        assert entry.reason and entry.date.year >= 2024


@pytest.mark.parametrize(
    "line,reason", [("abs", ""), ("abs  #", ""), ("abs  # flaky on H200", "flaky on H200")]
)
def test_seed_entries_without_a_date_are_accepted_with_a_warning(line, reason):
    warnings: list[str] = []
    entries = parse_dismiss(f"softmax  # 2025-01-01 fine\n{line}\n", "d.txt", warnings.append)
    assert [(e.op, e.repo, e.date, e.reason, e.when) for e in entries[1:]] == [
        ("abs", "main", None, reason, "undated")  # the old scripts' bare op: main's (issue 30)
    ]
    assert warnings == [
        "warning: d.txt:2: 'abs' has no date (seed format: a bare op is the main repo's); "
        "write 'main:abs  # YYYY-MM-DD reason'"
    ]
