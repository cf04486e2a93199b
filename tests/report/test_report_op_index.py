"""The rows indexed by op once per render (report.facts.rows_by_op): an op's limit
and its failing dtypes read its own rows, never another op's (issue 47 item 3)."""

from __future__ import annotations

from zlbench.models import OpVerdict, RowKey, RowVerdict, Verdict
from zlbench.models.ab import PairedRow
from zlbench.report.facts import limit_of, op_limit, op_rows, rows_by_op
from zlbench.report.sections import _dtypes


def _row(run: str, dtype: str, verdict: Verdict, paired: bool = False) -> RowVerdict:
    ab = PairedRow(rounds=8, ratio=0.9, change=0.11, threshold=0.03, decision="REGRESSION")
    return RowVerdict(
        key=RowKey(repo="main", run_name=run, op=run, dtype=dtype, shape="[8]"),
        verdict=verdict,
        ab=ab if paired else None,
    )


def _op(run: str) -> OpVerdict:
    return OpVerdict(repo="main", run_name=run, op=run, verdict=Verdict.REGRESSION, threshold=0.1)


ROWS = [
    _row("a", "float16", Verdict.REGRESSION),
    _row("b", "float32", Verdict.REGRESSION, paired=True),
    _row("a", "bfloat16", Verdict.PASS),
    _row("a", "float32", Verdict.MISSING),
]


def test_rows_by_op_keeps_each_ops_rows_in_order():
    by_op = rows_by_op(ROWS)
    assert [r.key.dtype for r in op_rows(_op("a"), by_op)] == ["float16", "bfloat16", "float32"]
    assert op_rows(_op("c"), by_op) == []


def test_an_ops_limit_is_the_paired_threshold_only_when_its_own_rows_were_paired():
    by_op = rows_by_op(ROWS)
    # decided on pairs: the pair rule's threshold (its rows' 3 %), not the op's 10 %
    assert op_limit(_op("b"), by_op) == 0.03
    assert op_limit(_op("a"), by_op) == limit_of(0.1)  # another op's pairs do not count
    assert op_limit(_op("c"), by_op) == limit_of(0.1)


def test_reproduce_names_the_dtypes_of_the_ops_own_failing_rows():
    by_op = rows_by_op(ROWS)
    assert _dtypes(_op("a"), by_op) == "float16 float32"
    assert _dtypes(_op("b"), by_op) == "float32"
