"""merge_captures (zlbench.models.replay): one launch capture of an op from its row
parts' captures."""

from __future__ import annotations

import pytest

from zlbench.models.replay import (
    CaptureRowAt,
    LaunchCapture,
    LaunchSpec,
    RowLaunches,
    merge_captures,
)

GPU = "NVIDIA H100 80GB HBM3"
FIRST = CaptureRowAt(occurrence=0, expected=frozenset({0}))  # a row's only occurrence


def _row(run_name: str, shape: str, occurrence: int = 0, launched: bool = True) -> RowLaunches:
    launches = [LaunchSpec(kernel_id="k", kernel="topk_kernel", grid=[1, 1, 1])] if launched else []
    return RowLaunches(
        run_name=run_name,
        op="topk",
        dtype="float16",
        shape=shape,
        occurrence=occurrence,
        launches=launches,
    )


def _cap(*rows: RowLaunches, **kw) -> LaunchCapture:
    flags = {"lists_every_row": True, "every_launch_hooked": True, "gpu_model": GPU}
    return LaunchCapture(rows=list(rows), **{**flags, **kw})


def _view(cap: LaunchCapture) -> list[tuple]:
    return [(r.run_name, r.shape, r.occurrence, len(r.launches)) for r in cap.rows]


def test_every_parts_rows_in_part_order_named_after_the_op():
    parts = [
        ("topk~1of2", _cap(_row("topk~1of2", "[1]"), _row("topk~1of2", "[3]", launched=False))),
        ("topk~2of2", _cap(_row("topk~2of2", "[2]"), _row("other", "[9]"))),
    ]
    merged = merge_captures(parts, "topk")
    assert _view(merged) == [
        ("topk", "[1]", 0, 1),
        ("topk", "[3]", 0, 0),
        ("topk", "[2]", 0, 1),
        ("other", "[9]", 0, 1),  # not the part's row: left as it is
    ]
    assert merged.lists_every_row and merged.every_launch_hooked and merged.gpu_model == GPU
    assert merged.schema_version == LaunchCapture.FORMAT_VERSION
    assert merged.kind == "launch_capture"
    # the parts' captures are not changed
    assert [r.run_name for r in parts[0][1].rows] == ["topk~1of2", "topk~1of2"]
    # the op's row proves what it proved in its part's capture
    assert merged.proves_no_launch("topk", "float16", "[3]", FIRST)
    assert not merged.proves_no_launch("topk~1of2", "float16", "[3]", FIRST)


def test_a_dtype_and_shape_whose_rows_span_parts_matches_no_row():
    """Each part numbers its rows from 0: a dtype and shape with rows in two parts
    holds occurrence 0 twice, so no baseline row is matched to either (its rows fall
    back), where a row in one part only is."""
    parts = [
        ("t~1of2", _cap(_row("t~1of2", "[1]", launched=False), _row("t~1of2", "[2]"))),
        ("t~2of2", _cap(_row("t~2of2", "[1]", launched=False))),
    ]
    merged = merge_captures(parts, "t")
    two = CaptureRowAt(occurrence=1, expected=frozenset({0, 1}))
    assert merged.row_of("t", "float16", "[1]", FIRST) is None
    assert merged.row_of("t", "float16", "[1]", two) is None
    assert not merged.proves_no_launch("t", "float16", "[1]", FIRST)
    assert merged.row_of("t", "float16", "[2]", FIRST) is merged.rows[1]


@pytest.mark.parametrize("flag", ["lists_every_row", "every_launch_hooked"])
def test_a_flag_holds_only_where_every_part_says_so(flag):
    parts = [
        ("t~1of3", _cap(_row("t~1of3", "[1]", launched=False))),
        ("t~2of3", _cap(**{flag: False})),
        ("t~3of3", _cap()),
    ]
    merged = merge_captures(parts, "t")
    assert getattr(merged, flag) is False
    assert not merged.proves_no_launch("t", "float16", "[1]", FIRST)


def test_unnamed_calls_add_up():
    parts = [(f"t~{k}of3", _cap(unnamed_calls=n)) for k, n in enumerate((2, 0, 3), 1)]
    assert merge_captures(parts, "t").unnamed_calls == 5


@pytest.mark.parametrize(
    "models, merged",
    [((GPU, GPU), GPU), ((GPU, "NVIDIA H200"), ""), ((GPU, ""), ""), (("", ""), "")],
)
def test_the_gpu_model_is_known_only_where_every_part_names_the_same(models, merged):
    parts = [(f"t~{k}of2", _cap(gpu_model=m)) for k, m in enumerate(models, 1)]
    assert merge_captures(parts, "t").gpu_model == merged


def test_rows_of_one_shape_from_two_parts_keep_their_parts_occurrences():
    parts = [
        ("t~1of2", _cap(_row("t~1of2", "[8]"), _row("t~1of2", "[8]", 1))),
        ("t~2of2", _cap(_row("t~2of2", "[8]"))),
    ]
    merged = merge_captures(parts, "t")
    assert [(r.shape, r.occurrence) for r in merged.rows] == [("[8]", 0), ("[8]", 1), ("[8]", 0)]
    assert len(merged.rows_of("t", "float16", "[8]")) == 3


def test_no_parts_prove_nothing():
    merged = merge_captures([], "t")
    assert merged == LaunchCapture()
    assert not merged.lists_every_row and not merged.every_launch_hooked
