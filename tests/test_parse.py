"""zlbench.parse against the real upstream FlagGems output in tests/data/flaggems-h200."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import Marker, MarkerKind, count_markers, counts_of_kind
from zlbench.parse import (
    find_markers,
    load_record_json,
    markers_in_line,
    normalize_dtype,
    one_line,
    parse_log,
    parse_marker_line,
    parse_record_json,
    parse_rows,
    row_from_metrics,
    shape_text,
    shape_text_from_json,
    strip_ansi,
)

DATA = Path(__file__).parent / "data" / "flaggems-h200"
FIXTURES = sorted(p.name for p in DATA.iterdir() if p.name != "README.md")

SOFTMAX_SHAPES = [
    "[torch.Size([1048576])]",
    "[torch.Size([64, 64]), 1]",
    "[torch.Size([4096, 4096]), 1]",
    "[torch.Size([64, 512, 512]), 1]",
    "[torch.Size([1024, 1024, 1024]), 1]",
]
BINARY_SHAPES = [
    f"[torch.Size([{s}]), torch.Size([{s}])]"
    for s in ("1073741824", "64, 64", "4096, 4096", "64, 512, 512", "1024, 1024, 1024")
]
MM_SHAPES = [
    f"[torch.Size([{n}, {n}]), torch.Size([{n}, {n}])]" for n in (384, 4096, 1024, 2048, 4096)
]

# What each fixture must parse to: tables as (op, dtype, mode), and the row checks.
EXPECTED = {
    "flaggems_cudagraph_softmax.log": {
        "tables": [("softmax", "bfloat16", "cudagraph")],
        "shapes": SOFTMAX_SHAPES,
        "speedups": [1.054, 1.099, 2.379, 14.250, 5.523],
        "first": {"latency_base_ms": 0.222541, "latency_ms": 0.211139, "tflops": None},
        "summary": "1 passed, 2 warnings in 10.13s",
    },
    "kernel_add.log": {
        "tables": [("add", d, "kernel") for d in ("float16", "float32", "bfloat16", "complex64")],
        "shapes": BINARY_SHAPES * 4,
        "speedups": [0.960, 0.059, 0.367, 0.320, 0.960] + [None] * 15,
        "first": {"latency_base_ms": 1.467296, "latency_ms": 1.529024, "tflops": 1.404},
        "summary": "1 passed in 39.62s",
    },
    "kernel_mm.log": {  # cut off by a timeout during the float32 autotune sweep
        "tables": [("mm", "float16", "kernel")],
        "shapes": MM_SHAPES,
        "speedups": [0.023, 0.926, 0.052, 0.153, 1.021],
        "first": {"latency_base_ms": 0.006, "latency_ms": 0.260416, "tflops": 0.435},
        "summary": None,
    },
    "kernel_softmax.log": {
        "tables": [("softmax", d, "kernel") for d in ("float16", "float32", "bfloat16")],
        "shapes": SOFTMAX_SHAPES * 3,
        "speedups": [1.014, 0.073, 1.211, 6.151, 5.410] + [None] * 10,
        "first": {"latency_base_ms": 0.236256, "latency_ms": 0.233088, "tflops": None},
        "summary": "1 passed, 6 warnings in 29.56s",
    },
    "kernel_sum.log": {
        "tables": [("sum", d, "kernel") for d in ("float16", "float32", "bfloat16")],
        "shapes": SOFTMAX_SHAPES * 3,
        "speedups": [0.120, 0.114, 0.359, 0.424, 1.031] + [None] * 10,
        "first": {"latency_base_ms": 0.009664, "latency_ms": 0.080608, "tflops": None},
        "summary": "1 passed in 21.35s",
    },
    "flaggems_record_softmax.json": {
        "tables": [("softmax", "bfloat16", "cudagraph")],
        "shapes": SOFTMAX_SHAPES,
        "speedups": [
            1.0540041178824073,
            1.0988924432858838,
            2.378515366461813,
            14.249713661564108,
            5.522545466514857,
        ],
        "first": {"latency_base_ms": 0.22254117175972782, "latency_ms": 0.21113880675042696},
    },
}


def _rows_of(name: str):
    if name.endswith(".json"):
        return load_record_json(DATA / name)
    return parse_log((DATA / name).read_text()).rows


def test_every_fixture_has_expectations():
    assert FIXTURES == sorted(EXPECTED)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_rows(name):
    exp = EXPECTED[name]
    rows = _rows_of(name)
    n_tables = len(exp["tables"])
    assert len(rows) == len(exp["shapes"]) == 5 * n_tables
    assert [r.shape for r in rows] == exp["shapes"]
    per_table = len(rows) // n_tables
    for i, (op, dtype, _mode) in enumerate(exp["tables"]):
        chunk = rows[i * per_table : (i + 1) * per_table]
        assert {(r.op, r.dtype) for r in chunk} == {(op, dtype)}
    for row, want in zip(rows, exp["speedups"], strict=True):
        if want is not None:
            assert row.speedup == want
    for field, want in exp["first"].items():
        assert getattr(rows[0], field) == want
    for row in rows:
        assert row.status == "SUCCESS" and row.error is None and row.gbps is None
        # The speedup column really is latency_base / latency (columns not swapped).
        lb, lat = row.latency_base_ms, row.latency_ms
        slack = 5e-4 + 5e-7 * (1 / lat + lb / lat**2)
        assert abs(row.speedup - lb / lat) <= slack


@pytest.mark.parametrize("name", [n for n in FIXTURES if n.endswith(".log")])
def test_fixture_tables(name):
    exp = EXPECTED[name]
    text = (DATA / name).read_text()
    parsed = parse_log(text)
    assert [(t.op, t.dtype, t.mode) for t in parsed.tables] == exp["tables"]
    assert all(t.level == "core" and t.complete for t in parsed.tables)
    assert parsed.summary == exp["summary"]
    assert parsed.finished is (exp["summary"] is not None)
    assert parsed.markers == [] and parsed.failures == [] and parsed.marker_counts == {}
    assert not parsed.failed and parsed.failing_shape is None
    assert not parsed.truncated
    assert [r for t in parsed.tables for r in t.rows] == parsed.rows == parse_rows(text)
    tflops = "TFLOPS" in parsed.tables[0].columns
    assert all((r.tflops is not None) is tflops for r in parsed.rows)


def test_add_tflops_column_keeps_tiny_values():
    rows = parse_log((DATA / "kernel_add.log").read_text()).rows
    assert [r.tflops for r in rows[:5]] == [1.404, 0.0, 0.417, 0.358, 1.403]


def test_mm_repeated_shape_gets_next_occurrence():
    rows = parse_log((DATA / "kernel_mm.log").read_text()).rows
    assert [r.occurrence for r in rows] == [0, 0, 0, 0, 1]
    assert rows[1].shape == rows[4].shape
    assert len({r.key("main", "mm") for r in rows}) == 5
    assert (rows[4].speedup, rows[4].tflops) == (1.021, 595.036)


def test_occurrences_are_per_dtype():
    rows = parse_log((DATA / "kernel_softmax.log").read_text()).rows
    assert {r.occurrence for r in rows} == {0}
    assert len({(r.dtype, r.shape) for r in rows}) == 15


def _row_line_ends(text: str) -> list[int]:
    ends, pos = [], 0
    for line in text.split("\n"):
        pos += len(line) + 1
        if line.startswith("SUCCESS"):
            ends.append(pos)  # offset just past the row's newline
    return ends


def _cuts(text: str) -> list[int]:
    """The offsets where a cut can change what is parsed (not every byte: that is
    quadratic): each line's start and the bytes around it, each line's last bytes and
    its newline, and each field's edges and the bytes just inside them (a row without
    its last fields, a field cut short: a speedup ``1.404`` cut to ``1.4``)."""
    out = {0, len(text)}
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        out.update(range(max(pos - 1, 0), pos + 2))
        out.update(range(max(end - 3, pos), end + 2))
        for m in re.finditer(r"\S+", line):
            a, b = pos + m.start(), pos + m.end()
            out.update((a, a + 1, b - 1, b))
        pos = end + 1
    return sorted(c for c in out if c <= len(text))


def test_the_cuts_hold_every_line_boundary_and_the_edges_of_each_field():
    text = "SUCCESS  1.404  2.0\nnext\n"
    cuts = _cuts(text)
    assert {0, 1, 6, 7, 9, 10, 13, 14, 16, 17, 18, 19, 20, 21, 23, 24, 25} <= set(cuts)
    assert cuts == sorted(set(cuts)) and max(cuts) == len(text)


@pytest.mark.parametrize("name", [n for n in FIXTURES if n.endswith(".log")])
def test_cut_anywhere_gives_exactly_the_whole_rows(name):
    text = (DATA / name).read_text()
    full = parse_log(text).rows
    ends = _row_line_ends(text)
    assert len(ends) == len(full)
    for cut in _cuts(text):
        rows = parse_log(text[:cut]).rows
        complete = sum(1 for e in ends if e <= cut)
        assert rows == full[:complete], f"cut at {cut}"


def test_cut_mid_row_marks_table_incomplete_and_truncated():
    text = (DATA / "kernel_mm.log").read_text()
    cut = text.index("[torch.Size([4096, 4096]), torch.Size([4096", text.index("SUCCESS") + 400)
    parsed = parse_log(text[: cut + 30])
    assert len(parsed.rows) == 4 and parsed.truncated
    assert not parsed.tables[0].complete and parsed.summary is None


def test_ansi_codes_and_noise_between_and_inside_tables():
    text = (DATA / "kernel_softmax.log").read_text()
    want = parse_log(text).rows
    noisy = (
        text.replace("SUCCESS", "\x1b[32mSUCCESS\x1b[0m")
        .replace("Operator:", "\x1b[1mOperator:\x1b[0m")
        .replace("\n\n\nOperator", "\n\n.warning: something\nbenchmark/x.py::t PASSED\n\nOperator")
    )
    # stderr interleaved into a table: a line that is not a row is skipped.
    lines = noisy.split("\n")
    lines.insert(6, "/x/base.py:288: UserWarning: Implicit dimension choice for softmax")
    lines.insert(7, "SUCCESS   0.1   0.2")  # torn row fragments: no shape / cut shape
    lines.insert(8, "SUCCESS   0.1   0.2   2.000   [torch.Size([64, 6")
    got = parse_log("\r\n".join(lines))
    assert got.rows == want
    assert strip_ansi("\x1b[31mFAILED\x1b[0m\x1b]0;title\x07 x\x1b[2K") == "FAILED x"


def _table(columns: list[str], rows: list[str], dtype: str = "torch.float16") -> str:
    head = f"Operator: gather  Performance Test (dtype={dtype}, mode=kernel,level=core)"
    cols = "  ".join(columns)
    return "\n".join(["", head, cols, "-" * len(cols), *rows, "", ""])


def test_columns_mapped_by_header_name():
    cols = ["Status", "Gems Speedup", "Gems Latency (ms)", "Torch Latency (ms)", "Size Detail"]
    parsed = parse_log(_table(cols, ["SUCCESS   2.000   0.100000   0.200000   [torch.Size([8])]"]))
    row = parsed.rows[0]
    assert (row.speedup, row.latency_ms, row.latency_base_ms) == (2.0, 0.1, 0.2)


def test_gbps_and_tflops_columns_and_per_row_omissions():
    cols = [
        "Status",
        "Torch Latency (ms)",
        "Gems Latency (ms)",
        "Gems Speedup",
        "TFLOPS",
        "Torch GBPS",
        "Gems GBPS",
        "Size Detail",
    ]
    lines = [
        "SUCCESS   0.2   0.1   2.000   3.500   10.000   20.000          [torch.Size([8])]",
        # upstream omits TFLOPS on a row whose tflops is 0 and GBPS when gbps is None
        "SUCCESS   0.2   0.1   2.000   11.000   22.000          [torch.Size([16])]",
        "SUCCESS   0.2   0.1   2.000          [torch.Size([32])]",
        "FAILED    0.2   N/A   N/A          [torch.Size([64]), 'x', {'k': (1, 2)}]",
    ]
    rows = parse_log(_table(cols, lines)).rows
    assert [(r.tflops, r.gbps) for r in rows] == [(3.5, 20.0), (None, 22.0), (None, None)] + [
        (None, None)
    ]
    assert rows[3].status == "FAILED" and rows[3].latency_ms is None and rows[3].speedup is None
    assert rows[3].shape == "[torch.Size([64]), 'x', {'k': (1, 2)}]"


def test_failed_row_then_pytest_failure_names_the_failing_shape():
    partial = _table(
        ["Status", "Torch Latency (ms)", "Gems Latency (ms)", "Gems Speedup", "Size Detail"],
        [
            "SUCCESS   0.2   0.1   2.000   [torch.Size([8])]",
            "FAILED    0.2   N/A   N/A   [torch.Size([1024, 1024]), 1]",
        ],
        dtype="torch.bfloat16",
    )
    text = partial + "F\n=== short test summary info ===\n"
    text += "FAILED benchmark/test_gather.py::test_gather - Failed: CUDA error: out of memory\n"
    text += "=========== 1 failed, 3 warnings in 12.01s ===========\n"
    parsed = parse_log(text)
    assert parsed.failed and parsed.failing_shape == "[torch.Size([1024, 1024]), 1]"
    assert [f.source for f in parsed.failures] == ["row", "pytest"]
    row_f, py_f = parsed.failures
    assert (row_f.op, row_f.dtype) == ("gather", "bfloat16")
    assert py_f.test == "benchmark/test_gather.py::test_gather"
    assert py_f.message == "Failed: CUDA error: out of memory"
    assert parsed.summary == "=========== 1 failed, 3 warnings in 12.01s ==========="
    assert len(parsed.rows) == 2


def test_upstream_input_failure_line():
    # upstream's literal (its second string lacks the f prefix) and a formatted variant
    text = (
        "\x1b[31mFAILED\x1b[0m: Operator=softmax dtype={dtype} err=<<<{e}>>>\n"
        "\x1b[31mFAILED\x1b[0m: Operator=mm dtype=torch.float32 err=<<<bad shape\nsecond>>>\n"
    )
    a, b = parse_log(text).failures
    assert (a.source, a.op, a.dtype, a.message, a.line) == ("input", "softmax", None, None, 1)
    assert (b.op, b.dtype, b.message, b.line) == ("mm", "float32", "bad shape\nsecond", 2)
    assert parse_log(text).failing_shape is None


# --------------------------------------------------------------------------- markers

MARKERS = {
    MarkerKind.REPLAY_FALLBACK: [
        Marker(kind=MarkerKind.REPLAY_FALLBACK, reason="key_missing", kernel="mm_kernel"),
        Marker(
            kind=MarkerKind.REPLAY_FALLBACK,
            reason="compile_OutOfResources",
            kernel="flag_gems.ops.mm:mm_kernel_general",
        ),
        Marker(
            kind=MarkerKind.REPLAY_FALLBACK,
            reason="compile_CompilationError_no_evict",
            kernel="softmax_kernel_inner",
        ),
    ],
    MarkerKind.NO_CUDAGRAPH: [
        Marker(kind=MarkerKind.NO_CUDAGRAPH, phase="sync", reason="RuntimeError"),
        Marker(kind=MarkerKind.NO_CUDAGRAPH, phase="warmup", reason="x=1 : a reason, with spaces"),
        Marker(
            kind=MarkerKind.NO_CUDAGRAPH,
            phase="capture",
            reason="RuntimeError: operation not permitted when stream is capturing",
        ),
    ],
}


def test_every_marker_kind_has_samples():
    assert set(MARKERS) == set(MarkerKind)


@pytest.mark.parametrize("kind", list(MarkerKind))
def test_marker_round_trip(kind):
    for marker in MARKERS[kind]:
        line = marker.line()
        assert line.startswith(kind.value + " ")
        assert parse_marker_line(line) == marker
        assert parse_marker_line(line + "\n") == marker
        # after a prefix (pytest progress / node id) and in colour
        assert parse_marker_line(f"benchmark/test_mm.py::test_mm .{line}") == marker
        assert find_markers(f"noise\n\x1b[33m{line}\x1b[0m\nmore\n") == [marker]


@pytest.mark.parametrize("kind", list(MarkerKind))
def test_marker_counts(kind):
    a, b, c = MARKERS[kind]
    text = "\n".join(m.line() for m in (a, b, a, c, a)) + "\n"
    found = find_markers(text)
    assert found == [a, b, a, c, a]
    assert count_markers(found) == {
        f"{kind.value} {a.reason}": 3,
        f"{kind.value} {b.reason}": 1,
        f"{kind.value} {c.reason}": 1,
    }
    assert parse_log(text).marker_counts == count_markers(found)


def test_counts_of_kind_splits_marker_counts_by_kind():
    markers = [m for kind in MarkerKind for m in MARKERS[kind]]
    counts = count_markers(markers + markers[:1])
    for kind in MarkerKind:
        want = count_markers([m for m in markers + markers[:1] if m.kind is kind])
        assert want and counts_of_kind(counts, kind) == want
        # the forms gate code used before: a prefix test and a substring test
        short = kind.value.split("_", 1)[1]
        assert counts_of_kind(counts, kind) == {k: n for k, n in counts.items() if short in k}
        assert set(counts_of_kind(counts, kind)) == {k for k in counts if k.startswith(kind.value)}
    assert counts_of_kind({}, MarkerKind.REPLAY_FALLBACK) == {}


def test_two_markers_on_one_line():
    a = MARKERS[MarkerKind.NO_CUDAGRAPH][1]
    b = MARKERS[MarkerKind.REPLAY_FALLBACK][0]
    # glued: e.g. C-level output landing in the middle of a buffered line
    assert markers_in_line(f"{a.line()}{b.line()} trailing") == [a, b]
    assert markers_in_line(f"ptxas info{b.line()}") == [b]
    assert parse_marker_line(f"{b.line()} {a.line()}") == b


@pytest.mark.parametrize(
    "line",
    [
        "no marker here",
        'print(f"AUTOTUNE_REPLAY_FALLBACK reason={reason} kernel={kernel}")',
        'f"BENCHMARK_DIRECT_NO_CUDAGRAPH phase={phase} reason={why}"',
        "AUTOTUNE_REPLAY_FALLBACK_SOMETHING reason=key_missing kernel=k",
        "BENCHMARK_DIRECT_NO_CUDAGRAPH reason=no phase",
    ],
)
def test_not_markers(line):
    assert parse_marker_line(line) is None


def test_marker_at_end_of_a_cut_log_still_counts():
    text = "x\n" + MARKERS[MarkerKind.REPLAY_FALLBACK][0].line()  # no final newline
    parsed = parse_log(text)
    assert parsed.truncated and parsed.markers == [MARKERS[MarkerKind.REPLAY_FALLBACK][0]]


def test_one_line_makes_reasons_round_trip():
    reason = one_line("CUDA error: operation failed\n  during capture\t(see above) ")
    m = Marker(kind=MarkerKind.NO_CUDAGRAPH, phase="capture", reason=reason)
    assert reason == "CUDA error: operation failed during capture (see above)"
    assert parse_marker_line(m.line()) == m


# --------------------------------------------------------------------------- record json


def test_json_and_log_of_the_same_run_agree():
    log_rows = parse_log((DATA / "flaggems_cudagraph_softmax.log").read_text()).rows
    json_rows = load_record_json(DATA / "flaggems_record_softmax.json")
    assert [r.key("main", "softmax") for r in json_rows] == [
        r.key("main", "softmax") for r in log_rows
    ]
    for j, t in zip(json_rows, log_rows, strict=True):
        assert abs(j.speedup - t.speedup) <= 5e-4
        assert abs(j.latency_ms - t.latency_ms) <= 5e-7
        assert abs(j.latency_base_ms - t.latency_base_ms) <= 5e-7


def _record(result: list, dtype: str = "torch.float16") -> str:
    details = [
        {"op_name": "op", "dtype": dtype, "mode": "kernel", "level": "core", "result": result}
    ]
    return json.dumps({"op": {"details": details, "result": "failed", "reason": "x"}})


def test_json_failed_metric_and_occurrences():
    metric = {"shape_detail": [[8]], "latency_base": 0.5, "latency": None, "speedup": None}
    rows = parse_record_json(_record([metric, {**metric, "error_msg": "OOM"}]))
    assert [r.occurrence for r in rows] == [0, 1]
    assert rows[1].status == "FAILED" and rows[1].error == "OOM"
    assert rows[0].status == "SUCCESS" and rows[0].dtype == "float16"


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ('{"softmax": {"details": [', "rec.json: not valid JSON (truncated"),
        ("[]", "rec.json: expected an object keyed by operator"),
        ('{"softmax": {"details": 3}}', "rec.json: field 'softmax.details' is not a list"),
        (_record([]).replace('"dtype"', '"dt"'), "rec.json: op.details[0]: missing field 'dtype'"),
        (_record([{"speedup": "fast"}]), "rec.json: op.details[0]: bad metrics"),
    ],
)
def test_bad_record_json(tmp_path, text, msg):
    path = tmp_path / "rec.json"
    path.write_text(text)
    with pytest.raises(ZlbenchError) as err:
        load_record_json(path)
    assert msg in str(err.value) and "\n" not in str(err.value)


def test_missing_record_json(tmp_path):
    with pytest.raises(ZlbenchError, match="nope.json: file not found"):
        load_record_json(tmp_path / "nope.json")


# --------------------------------------------------------------------------- shapes


class FakeSize(tuple):
    """What torch.Size looks like to zlbench.parse: a tuple subclass with its own repr."""

    def __repr__(self):
        return f"torch.Size([{', '.join(str(d) for d in self)}])"


class FakeDtype:
    def __repr__(self):
        return "torch.bfloat16"

    __str__ = __repr__


@pytest.mark.parametrize(
    ("live", "from_json", "text"),
    [
        ([FakeSize([64, 64]), 1], [[64, 64], 1], "[torch.Size([64, 64]), 1]"),
        (None, None, "N/A"),
        ([4096, 4096], [4096, 4096], "[4096, 4096]"),  # top level: the argument list
        (
            ([FakeSize([2, 3]), [FakeSize([4]), FakeSize([])]], {"dim": 1, "eps": 1e-05}),
            [[[2, 3], [[4], []]], {"dim": 1, "eps": 1e-05}],
            "([torch.Size([2, 3]), [torch.Size([4]), torch.Size([])]], {'dim': 1, 'eps': 1e-05})",
        ),
        (
            {"x": FakeSize([8]), "dtype": FakeDtype(), "mode": "sum", "flag": True, "n": None},
            {"x": [8], "dtype": "torch.bfloat16", "mode": "sum", "flag": True, "n": None},
            "{'x': torch.Size([8]), 'dtype': torch.bfloat16, 'mode': 'sum', 'flag': True, "
            "'n': None}",
        ),
        (
            [FakeSize([3]), [1.0, 2], [True, False]],
            [[3], [1.0, 2], [True, False]],
            "[torch.Size([3]), [1.0, 2], [True, False]]",
        ),
    ],
)
def test_shape_text_live_and_json_agree(live, from_json, text):
    assert shape_text(live) == text
    assert shape_text_from_json(json.loads(json.dumps(from_json))) == text


def test_json_cannot_tell_a_plain_int_list_argument_from_a_size():
    # documented ambiguity: live [FakeSize([8]), [0, 1]] prints "[torch.Size([8]), [0, 1]]"
    assert shape_text_from_json([[8], [0, 1]]) == "[torch.Size([8]), torch.Size([0, 1])]"


def test_row_from_live_metrics_object():
    metrics = SimpleNamespace(
        shape_detail=[FakeSize([64, 64]), 1],
        latency_base=0.2,
        latency=0.1,
        speedup=2.0,
        tflops=None,
        gbps=3.0,
        error_msg=None,
    )
    row = row_from_metrics("softmax", FakeDtype(), metrics)
    assert (row.op, row.dtype, row.shape) == ("softmax", "bfloat16", "[torch.Size([64, 64]), 1]")
    assert (row.latency_base_ms, row.latency_ms, row.speedup, row.gbps) == (0.2, 0.1, 2.0, 3.0)
    assert row.status == "SUCCESS"


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("torch.bfloat16", "bfloat16"),
        ("bfloat16", "bfloat16"),
        (" torch.float16 ", "float16"),
        (FakeDtype(), "bfloat16"),
        ("torch.complex64", "complex64"),
    ],
)
def test_normalize_dtype(raw, want):
    assert normalize_dtype(raw) == want
    assert normalize_dtype(normalize_dtype(raw)) == want


_TORCH_CHECK = """
import sys
import zlbench.parse as p
assert "torch" not in sys.modules, "zlbench.parse imported torch"
if {with_torch}:
    import json, torch
    cases = [[torch.Size([64, 64]), 1], [torch.Size([]), torch.float16, "s", 1e-05],
             ([torch.Size([2, 3])], {{"dim": 1, "dtype": torch.int32}})]
    for c in cases:
        assert p.shape_text(c) == str(c) == f"{{c}}", c
        assert p.shape_text_from_json(json.loads(json.dumps(c, default=str))) == str(c), c
print("ok")
"""


@pytest.mark.parametrize("with_torch", [False, True])
def test_no_torch_import_and_real_torch_reprs(with_torch):
    if with_torch and find_spec("torch") is None:
        pytest.skip("torch not installed")
    code = _TORCH_CHECK.format(with_torch=with_torch)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
