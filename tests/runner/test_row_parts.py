"""Row parts (zlbench.runner.batch.parts, zlbench.protocol.rowpart): which rows a part
keeps, how many parts an op is cut into, the parts as ops of a batch, and how the
parts' results, ops_status rows and run dirs are merged back into one op."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.support.batch_fakes import part_indices
from zlbench.models import (
    CODEGEN_DIR,
    CODEGEN_INDEX,
    LAUNCHES_JSON,
    CodegenIndex,
    CompileRecord,
    KernelUse,
    LaunchCapture,
    LaunchSpec,
    Marker,
    MarkerKind,
    OpStatus,
    Row,
    RowLaunches,
    RunResult,
    RunStatus,
    assign_occurrences,
    dump_json_model,
    load_codegen_index,
    load_json_model,
)
from zlbench.models.codegen import (
    CompileRequest,
    CompilerIdentity,
    KernelConfig,
    KernelSource,
    Target,
)
from zlbench.protocol.rowpart import keeps_row
from zlbench.runner.batch.costs import OpCosts
from zlbench.runner.batch.parts import (
    merge_part_dirs,
    merge_results,
    merge_statuses,
    most_parts,
    part_counts,
    part_dir,
    part_rows,
    part_run_name,
    picked_rows,
    row_group,
    row_picks,
    split_ops,
    spread_parts,
    surplus_rows,
    whole_op,
    worst_status,
)
from zlbench.runner.batch.plan import deal
from zlbench.runner.batch.systemic import not_measured
from zlbench.runner.catalog.select import OpSelection, SelectedOp
from zlbench.runner.execute.worker import NOT_MEASURED

S = RunStatus

# --------------------------------------------------------------------------- which rows


def test_keeps_row_keeps_every_nth_row_from_the_parts_own():
    assert [i for i in range(10) if keeps_row(i, (1, 3))] == [0, 3, 6, 9]
    assert [i for i in range(10) if keeps_row(i, (2, 3))] == [1, 4, 7]
    assert [i for i in range(10) if keeps_row(i, [3, 3])] == [2, 5, 8]  # a plan entry's list
    assert [i for i in range(4) if keeps_row(i, (1, 1))] == [0, 1, 2, 3]


@pytest.mark.parametrize("part", [None, [], ()])
def test_keeps_row_without_a_part_keeps_every_row(part):
    assert all(keeps_row(i, part) for i in range(7))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_every_row_is_kept_by_exactly_one_part(n):
    for i in range(23):
        assert sum(keeps_row(i, (k, n)) for k in range(1, n + 1)) == 1


def _base(*dtype_shapes: tuple[str, str]) -> list[dict]:
    return [{"op": "topk", "dtype": d, "shape": s} for d, s in dtype_shapes]


def test_part_rows_count_the_index_within_each_dtype():
    f16 = [("float16", f"[{i}]") for i in range(5)]
    f32 = [("float32", f"[{i}]") for i in range(3)]
    rows = _base(*f16, *f32)
    assert part_rows(rows, (1, 2)) == _base(f16[0], f16[2], f16[4], f32[0], f32[2])
    assert part_rows(rows, (2, 2)) == _base(f16[1], f16[3], f32[1])
    # interleaved dtypes: the index is per dtype, not the row's place in the list
    mixed = _base(f16[0], f32[0], f16[1], f32[1], f16[2])
    assert part_rows(mixed, (1, 2)) == _base(f16[0], f32[0], f16[2])
    assert part_rows(mixed, [2, 2]) == _base(f16[1], f32[1])


def test_part_rows_of_all_parts_are_the_rows_in_order():
    rows = _base(*[("float16" if i % 3 else "bfloat16", f"[{i}]") for i in range(11)])
    for n in (2, 3, 4):
        parts = [part_rows(rows, (k, n)) for k in range(1, n + 1)]
        assert sorted(r["shape"] for p in parts for r in p) == sorted(r["shape"] for r in rows)
        for p in parts:  # each part keeps the baseline's order
            assert p == [r for r in rows if r in p]


def test_row_picks_name_the_wanted_rows_by_op_dtype_and_index_and_picked_rows_return_them():
    """The op path after the kernel replay measures only the rows the replay could not:
    their picks count the index within (benchmark op, dtype) as the plugins do."""
    f16 = [("float16", f"[{i}]") for i in range(3)]
    f32 = [("float32", f"[{i}]") for i in range(2)]
    rows = _base(f16[0], f32[0], f16[1], f32[1], f16[2])
    picks = row_picks(rows, lambda r: r["shape"] in ("[1]", "[2]"))
    assert picks == (("topk", "float16", 1), ("topk", "float32", 1), ("topk", "float16", 2))
    assert picked_rows(rows, picks) == _base(f16[1], f32[1], f16[2])
    assert picked_rows(rows, [list(p) for p in picks]) == _base(f16[1], f32[1], f16[2])  # JSON
    assert row_picks(rows, lambda r: False) == () and picked_rows(None, picks) is None


def test_part_rows_of_no_baseline():
    assert part_rows(None, (1, 2)) is None
    assert part_rows([], (1, 2)) == []


def test_most_parts_is_the_fewest_rows_of_one_dtype():
    assert most_parts(None) is None
    assert most_parts([]) is None
    assert most_parts(_base(*[("float16", f"[{i}]") for i in range(4)])) == 4
    three_dtypes = [(d, f"[{i}]") for d in ("float16", "float32", "bfloat16") for i in range(2)]
    assert most_parts(_base(*three_dtypes)) == 2  # 6 rows, but a third part has none
    uneven = [("float16", f"[{i}]") for i in range(5)] + [("float32", "[0]")]
    assert most_parts(_base(*uneven)) == 1


# --------------------------------------------------------------------------- how many parts


GATE_CORE = {"main/topk": 41.0} | {f"main/op{i}": 2.0 for i in range(33)}  # 107 s


def test_one_slot_cuts_nothing():
    rows = {k: 14 for k in GATE_CORE}
    assert part_counts(GATE_CORE, 1, rows.get) == {}
    assert part_counts(GATE_CORE, 0, rows.get) == {}
    assert part_counts({}, 4, {}.get) == {}


@pytest.mark.parametrize("slots,parts", [(4, 2), (8, 4), (16, 6)])
def test_gate_core_cuts_topk_only(slots, parts):
    # a slot's share: 107/4 = 26.75 s -> ceil(1.53) = 2 parts; 13.4 s -> 4; 6.7 s -> ceil(6.1)
    # = 7, but at most 6: topk has 6 rows here (a part per row at most)
    rows = {k: 14 for k in GATE_CORE} | {"main/topk": 6}
    assert part_counts(GATE_CORE, slots, rows.get) == {"main/topk": parts}


def test_two_slots_leave_gate_core_whole():
    # 107/2 = 53.5 s: topk (41 s) does not outlast a slot's share
    assert part_counts(GATE_CORE, 2, {k: 14 for k in GATE_CORE}.get) == {}


def test_an_op_at_exactly_a_share_is_not_cut():
    costs = {"main/a": 1.0, "main/b": 3.0}  # a share: 4 / 2 = 2.0
    rows = {"main/a": 9, "main/b": 9, "main/c": 9}
    assert part_counts(costs, 2, rows.get) == {"main/b": 2}  # ceil(1.5) = 2
    costs = {"main/a": 2.01, "main/b": 2.0, "main/c": 1.99}  # a share of 3 slots: 2.0
    assert part_counts(costs, 3, rows.get) == {"main/a": 2}


def test_parts_are_at_most_the_rows_allowed():
    costs = {"main/big": 100.0, "main/small": 1.0}
    assert part_counts(costs, 8, {"main/big": 3, "main/small": 9}.get) == {"main/big": 3}
    assert part_counts(costs, 8, {"main/big": 20}.get) == {"main/big": 8}  # the slots


@pytest.mark.parametrize("rows", [None, 0, 1])
def test_an_op_without_two_rows_is_never_cut(rows):
    costs = {"main/big": 50.0, "main/x": 1.0, "main/y": 1.0}
    assert part_counts(costs, 4, {"main/big": rows, "main/x": 5, "main/y": 5}.get) == {}
    assert part_counts(costs, 4, {"main/x": 5}.get) == {}  # not in rows at all


# --------------------------------------------------------------------------- parts as ops


def _op(name: str, op: str | None = None) -> SelectedOp:
    op = op or name
    return SelectedOp(repo="main", op=op, run_name=name, nodeids=(f"b/test_{op}.py::test_{op}",))


def test_part_names_and_dirs(tmp_path):
    assert part_run_name("topk", 2, 3) == "topk~2of3"
    assert part_run_name("mm__at__test_mm.py", 1, 2) == "mm__at__test_mm.py~1of2"
    assert part_dir(tmp_path, "main", "topk~1of3") == tmp_path / ".parts" / "main" / "topk~1of3"


def test_split_ops_replaces_an_op_by_its_parts_with_its_cost_divided():
    ops = [_op("abs"), _op("topk"), _op("mm__at__test_mm.py", "mm")]
    costs = {"main/abs": 2.0, "main/topk": 30.0, "main/mm__at__test_mm.py": 5.0}
    counts = {"main/topk": 3, "main/mm__at__test_mm.py": 2}
    out, seconds = split_ops(ops, counts, costs)
    assert [o.key for o in out] == [
        "main/abs",
        "main/topk~1of3",
        "main/topk~2of3",
        "main/topk~3of3",
        "main/mm__at__test_mm.py~1of2",
        "main/mm__at__test_mm.py~2of2",
    ]
    assert seconds == {
        "main/abs": 2.0,
        "main/topk~1of3": 10.0,
        "main/topk~2of3": 10.0,
        "main/topk~3of3": 10.0,
        "main/mm__at__test_mm.py~1of2": 2.5,
        "main/mm__at__test_mm.py~2of2": 2.5,
    }
    assert costs["main/topk"] == 30.0  # the caller's costs are not touched
    abs_, *topk = out[:4]
    assert (abs_.part, abs_.whole, abs_.whole_run_name) == (None, "", "abs")
    for k, part in enumerate(topk, 1):
        assert part.part == (k, 3) and part.whole == "topk" and part.whole_run_name == "topk"
        assert (part.op, part.nodeids, part.repo) == ("topk", ops[1].nodeids, "main")
    mm = out[4]
    assert (mm.op, mm.part, mm.whole_run_name) == ("mm", (1, 2), "mm__at__test_mm.py")


def test_whole_op_is_the_op_a_part_belongs_to():
    ops = [_op("topk"), _op("abs")]
    out, _ = split_ops(ops, {"main/topk": 4}, {"main/topk": 8.0, "main/abs": 1.0})
    assert len(out) == 5
    assert all(whole_op(p) == ops[0] for p in out[:4])
    assert whole_op(out[4]) == ops[1]  # not a part: itself
    assert whole_op(out[0]).key == "main/topk"


def test_split_ops_without_counts_is_the_selection():
    ops = [_op("abs"), _op("topk")]
    out, seconds = split_ops(ops, {}, {"main/abs": 1.0, "main/topk": 2.0})
    assert out == ops and seconds == {"main/abs": 1.0, "main/topk": 2.0}


# --------------------------------------------------------------------------- results


def _row(dtype: str, shape: str, speedup: float = 1.0) -> Row:
    return Row(op="topk", dtype=dtype, shape=shape, speedup=speedup, latency_ms=1.0)


def _result(rows: list[Row], status: RunStatus = S.PASS, **kw) -> RunResult:
    kw.setdefault("dtypes", list(dict.fromkeys(r.dtype for r in rows)))
    return RunResult(
        repo="main",
        run_name=kw.pop("run_name", "topk~1of3"),
        op="topk",
        status=status,
        mode="replay",
        timing="cudagraph",
        rows=rows,
        **kw,
    )


def _split(whole: RunResult, n: int) -> list[tuple[tuple[int, int], RunResult]]:
    """``whole``'s rows as part k of n measures them: every n-th row of each dtype,
    occurrences numbered within the part (as a part's process numbers them)."""
    parts = []
    for k in range(1, n + 1):
        kept = [whole.rows[i] for i in part_indices(whole.rows, (k, n))]
        parts.append(((k, n), _result(assign_occurrences(kept), run_name=f"topk~{k}of{n}")))
    return parts


def _shape_rows(dtypes: list[str]) -> list[Row]:
    """7 rows per dtype, shape [2] twice and [7] three times (occurrences 1, 2)."""
    shapes = ["[1]", "[2]", "[7]", "[2]", "[5]", "[7]", "[7]"]
    rows = [_row(d, s) for d in dtypes for s in shapes]
    return [r.model_copy(update={"speedup": 1.0 + i}) for i, r in enumerate(rows)]


def _view(rows: list[Row]) -> list[tuple]:
    return [(r.dtype, r.shape, r.occurrence, r.speedup) for r in rows]


@pytest.mark.parametrize("dtypes", [["float16"], ["float16", "bfloat16"]])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_merged_rows_are_in_the_unsplit_order(dtypes, n):
    whole = _result(assign_occurrences(_shape_rows(dtypes)), run_name="topk")
    parts = _split(whole, n)
    assert all(len(p.rows) < len(whole.rows) for _, p in parts)
    merged = merge_results(parts, "topk")
    assert _view(merged.rows) == _view(whole.rows)
    assert merged.run_name == "topk" and merged.dtypes == dtypes and merged.status is S.PASS
    # duplicate shapes: numbered again in the merged order, not kept from the parts
    f16 = [(r.shape, r.occurrence) for r in merged.rows if r.dtype == "float16"]
    assert [o for s, o in f16 if s == "[7]"] == [0, 1, 2]
    assert [o for s, o in f16 if s == "[2]"] == [0, 1]


def test_merged_rows_do_not_depend_on_the_order_of_the_parts():
    whole = _result(assign_occurrences(_shape_rows(["float32", "float16"])), run_name="topk")
    parts = _split(whole, 3)
    random.Random(7).shuffle(parts)
    assert [k for (k, _), _ in parts] != [1, 2, 3]
    merged = merge_results(parts, "topk")
    assert _view(merged.rows) == _view(whole.rows)
    assert merged.dtypes == ["float32", "float16"]


def test_merged_rows_of_parts_run_with_the_ops_default_dtypes():
    whole = _result(assign_occurrences(_shape_rows(["float32", "float16"])), run_name="topk")
    parts = [(kn, r.model_copy(update={"dtypes": []})) for kn, r in _split(whole, 2)]
    merged = merge_results(parts, "topk")
    assert _view(merged.rows) == _view(whole.rows)
    assert merged.dtypes == []


def test_merged_rows_of_a_part_that_stopped_early_keep_their_places():
    whole = _result(assign_occurrences(_shape_rows(["float16"])), run_name="topk")
    parts = _split(whole, 3)
    (k, n), second = parts[1]  # rows 1 and 4 of 7; it failed after its first
    parts[1] = ((k, n), second.model_copy(update={"rows": second.rows[:1], "status": S.FAIL}))
    merged = merge_results(parts, "topk")
    assert _view(merged.rows) == [_view(whole.rows)[i] for i in (0, 1, 2, 3, 5, 6)]
    assert merged.status is S.FAIL


@pytest.mark.parametrize(
    "statuses,worst",
    [
        ([S.PASS, S.PASS, S.PASS], S.PASS),
        ([S.PASS, S.SKIP], S.PASS),
        ([S.SKIP, S.SKIP], S.SKIP),
        ([S.PASS, S.FAIL, S.PASS], S.FAIL),
        ([S.PASS, S.FAIL, S.TIMEOUT], S.TIMEOUT),
        ([S.TIMEOUT, S.CRASH, S.FAIL], S.CRASH),
        ([S.CRASH, S.ERROR, S.PASS], S.ERROR),
    ],
)
def test_the_merged_status_is_the_worst_parts(statuses, worst):
    assert worst_status(statuses) is worst
    parts = [((k, len(statuses)), _result([], s)) for k, s in enumerate(statuses, 1)]
    assert merge_results(parts, "topk").status is worst


def test_merged_markers_times_and_error():
    fallback = Marker(kind=MarkerKind.REPLAY_FALLBACK, reason="key_missing", kernel="k1")
    no_graph = Marker(kind=MarkerKind.NO_CUDAGRAPH, reason="capture_failed", phase="capture")
    parts = [
        _result(
            [_row("float16", "[1]")],
            markers=[fallback],
            marker_counts={"AUTOTUNE_REPLAY_FALLBACK key_missing": 1},
            started="2026-01-01T00:00:05Z",
            duration_s=1.5,
            bench_s=1.0,
            environment={"gpu_model": "NVIDIA H200"},
        ),
        _result(
            [_row("float16", "[2]")],
            S.FAIL,
            markers=[fallback.model_copy(update={"kernel": "k2"}), no_graph],
            error="AssertionError: boom",
            failing_shape="[4]",
            started="2026-01-01T00:00:03Z",
            duration_s=2.25,
        ),
        _result([_row("float16", "[3]")], started=None, duration_s=None, bench_s=0.5),
    ]
    merged = merge_results([((k, 3), r) for k, r in enumerate(parts, 1)], "topk")
    assert merged.status is S.FAIL
    assert [(m.kind, m.kernel) for m in merged.markers] == [
        (MarkerKind.REPLAY_FALLBACK, "k1"),
        (MarkerKind.REPLAY_FALLBACK, "k2"),
        (MarkerKind.NO_CUDAGRAPH, None),
    ]
    assert merged.marker_counts == {
        "AUTOTUNE_REPLAY_FALLBACK key_missing": 2,
        "BENCHMARK_DIRECT_NO_CUDAGRAPH capture_failed": 1,
    }
    assert merged.error == "part 2/3: AssertionError: boom"
    assert merged.failing_shape == "[4]"
    assert merged.started == "2026-01-01T00:00:03Z"  # the earliest
    assert merged.duration_s == 3.75 and merged.bench_s == 1.5
    assert merged.environment.gpu_model == "NVIDIA H200"  # the first part's
    assert [r.shape for r in merged.rows] == ["[1]", "[2]", "[3]"]


def test_merged_result_without_errors_or_times_says_none():
    parts = [((k, 2), _result([_row("float16", f"[{k}]")])) for k in (1, 2)]
    merged = merge_results(parts, "topk")
    assert merged.error is None and merged.failing_shape is None
    assert merged.duration_s is None and merged.bench_s is None and merged.started is None
    assert merged.markers == [] and merged.marker_counts == {}


# --------------------------------------------------------------------------- ops_status rows


def test_merged_status_row():
    parts, _ = split_ops([_op("topk")], {"main/topk": 3}, {"main/topk": 9.0})
    common = {"repo": "main", "op": "topk", "op_file": "test_topk.py"}

    def part(k: int, **kw) -> OpStatus:
        run_dir = f".parts/main/topk~{k}of3"
        return OpStatus(**common, run_name=f"topk~{k}of3", run_dir=run_dir, **kw)

    statuses = [
        part(1, status=S.PASS, rc=0, attempts=1, dtype_used="float16,float32", rows=5,
             seconds=1.25, gpu="0", success_rows=5, replay_fallbacks=1),
        part(2, status=S.FAIL, rc=1, attempts=2, dtype_used="float16", rows=2, seconds=2.5,
             gpu="0", note="fake FAIL", success_rows=1, no_cudagraph=2,
             signature="AssertionError in topk.py:12"),
        part(3, status=S.PASS, rc=0, attempts=1, dtype_used="float32,bfloat16", rows=4,
             seconds=0.125, gpu="1", success_rows=4),
    ]  # fmt: skip
    merged = merge_statuses(list(zip(parts, statuses, strict=True)), _op("topk"))
    assert merged == OpStatus(
        repo="main",
        op="topk",
        run_name="topk",
        status=S.FAIL,
        rc=1,
        attempts=2,
        dtype_used="float16,float32,bfloat16",
        rows=11,
        seconds=3.875,
        gpu="0,1",
        run_dir="main/topk",
        note="rows measured in 3 parts; part 2/3: fake FAIL",
        op_file="test_topk.py",
        success_rows=10,
        replay_fallbacks=1,
        no_cudagraph=2,
        signature="AssertionError in topk.py:12",
    )


def test_merged_status_row_of_passing_parts():
    parts, _ = split_ops([_op("topk")], {"main/topk": 2}, {"main/topk": 9.0})
    statuses = [
        OpStatus(repo="main", op="topk", run_name=p.run_name, status=S.PASS, rc=0, rows=3, gpu="")
        for p in parts
    ]
    merged = merge_statuses(list(zip(parts, statuses, strict=True)), _op("topk"))
    assert (merged.status, merged.rc, merged.rows, merged.gpu) == (S.PASS, 0, 6, "")
    assert merged.note == "rows measured in 2 parts" and merged.signature == ""


# --------------------------------------------------------------------------- run dirs


COMPILER = CompilerIdentity(distribution="triton", version="3.6.0")


def _record(name: str, *uses: KernelUse) -> CompileRecord:
    req = CompileRequest(
        kernel=KernelSource(
            name=name, module="flag_gems.ops.topk", qualname=name, source_sha256="0"
        ),
        signature={"x_ptr": "*fp16", "n": "i32"},
        config=KernelConfig(num_warps=4, num_stages=3),
        target=Target(backend="cuda", arch=90, warp_size=32),
    )
    return CompileRecord(id=req.key(), request=req, used_by=list(uses))


def _use(run_name: str, shape: str) -> KernelUse:
    return KernelUse(run_name=run_name, op="topk", dtype="float16", shape=shape)


TSV_HEADER = "shape\tdtype\tkernel\tvariant\trole\tms\tfile\tnote\n"


def _part_dir(root: Path, k: int, records: dict, codegen: list[CompileRecord]) -> Path:
    name = f"topk~{k}of3"
    d = part_dir(root, "main", name)
    (d / "autotune_records").mkdir(parents=True)
    (d / "run.log").write_text(f"ZLBENCH_OP_BEGIN run_name={name}\nlog of part {k}\n")
    (d / ".complete").write_text("PASS\n")
    (d / "plan.json").write_text("{}")
    (d / "result.json").write_text('{"not": "read"}')
    (d / "autotune_records" / "topk.json").write_text(json.dumps(records))
    ttgir = d / "ttgir"
    (ttgir / f"float16_{k}" / "topk_kernel").mkdir(parents=True)
    (ttgir / f"float16_{k}" / "topk_kernel" / "BLOCK64_w4.ttgir").write_text(f"ir {k}\n")
    (ttgir / "naming.md").write_text(f"naming of part {k}\n")
    tsv = f"[{k}]\tfloat16\tk\tBLOCK64_w4\tpinned\t\tfloat16_{k}/topk_kernel/BLOCK64_w4.ttgir\t\n"
    (ttgir / "index.tsv").write_text(TSV_HEADER + tsv)
    cg = d / CODEGEN_DIR
    (cg / "blobs").mkdir(parents=True)
    (cg / "blobs" / f"blob{k}.gz").write_bytes(b"gz%d" % k)
    dump_json_model(cg / CODEGEN_INDEX, CodegenIndex(compiler=COMPILER, records=codegen))
    return d


@pytest.fixture
def parts(tmp_path) -> list[Path]:
    a1 = _record("topk_kernel", _use("topk~1of3", "[1]"))
    a2 = _record("topk_kernel", _use("topk~2of3", "[2]"))  # the same kernel, another row
    b3 = _record("sort_kernel", _use("topk~3of3", "[3]"))
    return [
        _part_dir(tmp_path, 1, {"k1": {"a": {"BLOCK": 64}}}, [a1]),
        _part_dir(tmp_path, 2, {"k1": {"a": {"BLOCK": 99}, "b": {"BLOCK": 32}}}, [a2]),
        _part_dir(tmp_path, 3, {"k2": {"c": {"BLOCK": 16}}}, [b3]),
    ]


def _files(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}


def test_merge_part_dirs_builds_the_ops_run_dir(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    result = _result([_row("float16", "[1]")], run_name="topk")
    merge_part_dirs(parts, result, dest)
    assert _files(dest) == {
        "run.log",
        "result.json",
        "autotune_records/topk.json",
        "ttgir/index.tsv",
        "ttgir/naming.md",
        *(f"ttgir/float16_{k}/topk_kernel/BLOCK64_w4.ttgir" for k in (1, 2, 3)),
        "codegen/index.json",
        *(f"codegen/blobs/blob{k}.gz" for k in (1, 2, 3)),
    }  # no part's .complete or plan.json
    assert sorted(p.name for p in dest.parent.iterdir()) == ["topk"]  # no .merging dir left
    assert load_json_model(dest / "result.json", RunResult) == result
    log = (dest / "run.log").read_text()
    heads = [log.index(f"=== zlbench: part {k} of 3 (topk~{k}of3)\n") for k in (1, 2, 3)]
    bodies = [log.index(f"log of part {k}\n") for k in (1, 2, 3)]
    assert heads[0] < bodies[0] < heads[1] < bodies[1] < heads[2] < bodies[2]
    assert (dest / "ttgir" / "naming.md").read_text() == "naming of part 1\n"
    assert (dest / "ttgir/float16_3/topk_kernel/BLOCK64_w4.ttgir").read_text() == "ir 3\n"


def test_merged_autotune_records_are_the_union_first_part_first(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    merge_part_dirs(parts, None, dest)
    records = json.loads((dest / "autotune_records" / "topk.json").read_text())["kernels"]
    assert records == {
        "k1": {"a": {"BLOCK": 64}, "b": {"BLOCK": 32}},
        "k2": {"c": {"BLOCK": 16}},
    }


def test_merged_ttgir_index_has_one_header_and_every_parts_rows(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    merge_part_dirs(parts, None, dest)
    lines = (dest / "ttgir" / "index.tsv").read_text().splitlines(True)
    assert lines[0] == TSV_HEADER and lines.count(TSV_HEADER) == 1
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["[1]", "[2]", "[3]"]


def test_merged_codegen_index_is_the_union_used_by_the_op(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    merge_part_dirs(parts, None, dest)
    index = load_codegen_index(dest)
    assert index is not None and index.compiler == COMPILER
    by_name = {r.request.kernel.name: r for r in index.records}
    assert sorted(by_name) == ["sort_kernel", "topk_kernel"]
    assert len(index.records) == 2  # the kernel both parts compiled: one record
    topk, sort = by_name["topk_kernel"], by_name["sort_kernel"]
    # every part's uses of a record, named after the op (the codegen screen matches
    # them to the op's rows), not after the part
    assert [(u.run_name, u.shape) for u in topk.used_by] == [("topk", "[1]"), ("topk", "[2]")]
    assert [(u.run_name, u.shape) for u in sort.used_by] == [("topk", "[3]")]
    assert topk.id == topk.request.key() and sort.id == sort.request.key()


def test_merge_part_dirs_replaces_an_existing_dir(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    dest.mkdir(parents=True)
    (dest / "stale.txt").write_text("old")
    (dest / ".complete").write_text("PASS\n")
    (dest / "run.log").write_text("old log\n")
    merge_part_dirs(parts, None, dest)
    assert not (dest / "stale.txt").exists() and not (dest / ".complete").exists()
    assert "old log" not in (dest / "run.log").read_text()
    assert not (dest / "result.json").exists()  # no result given: none written
    assert sorted(p.name for p in dest.parent.iterdir()) == ["topk"]


def test_merge_part_dirs_skips_a_part_without_a_dir(tmp_path, parts):
    dest = tmp_path / "main" / "topk"
    shutil.rmtree(parts[1])
    merge_part_dirs(parts, None, dest)
    log = (dest / "run.log").read_text()
    assert "part 1 of 3 (topk~1of3)" in log and "part 3 of 3 (topk~3of3)" in log
    assert "topk~2of3" not in log and "log of part 2" not in log
    tsv = (dest / "ttgir" / "index.tsv").read_text().splitlines()
    assert [ln.split("\t")[0] for ln in tsv[1:]] == ["[1]", "[3]"]


def _launches(d: Path, shape: str, **kw) -> None:
    """A part's launch capture: its one row, named after the part (as the recorder
    names it), launching topk_kernel."""
    row = RowLaunches(
        run_name=d.name,
        op="topk",
        dtype="float16",
        shape=shape,
        launches=[LaunchSpec(kernel_id="k1", kernel="topk_kernel", grid=[1, 1, 1])],
    )
    flags = {"lists_every_row": True, "every_launch_hooked": True, "gpu_model": "H100"}
    dump_json_model(d / CODEGEN_DIR / LAUNCHES_JSON, LaunchCapture(rows=[row], **{**flags, **kw}))


def _merged_launches(tmp_path: Path, parts: list[Path]) -> Path:
    dest = tmp_path / "main" / "topk"
    merge_part_dirs(parts, None, dest)
    return dest / CODEGEN_DIR / LAUNCHES_JSON


def test_merged_launch_capture_holds_every_parts_rows_named_after_the_op(tmp_path, parts):
    """Not the first part's alone: every part's rows, so the gate can replay them all."""
    _launches(parts[0], "[1]", unnamed_calls=1)
    _launches(parts[1], "[2]", every_launch_hooked=False)
    _launches(parts[2], "[3]", unnamed_calls=2)
    path = _merged_launches(tmp_path, parts)
    assert len(path.read_text().splitlines()) == 1  # the recorder's compact text
    cap = load_json_model(path, LaunchCapture)
    assert [(r.run_name, r.shape) for r in cap.rows] == [
        ("topk", "[1]"),
        ("topk", "[2]"),
        ("topk", "[3]"),
    ]
    assert [r.launches[0].kernel_id for r in cap.rows] == ["k1"] * 3
    assert cap.lists_every_row and not cap.every_launch_hooked
    assert cap.unnamed_calls == 3 and cap.gpu_model == "H100"


def test_merged_launch_capture_of_parts_on_two_gpu_models_names_none(tmp_path, parts):
    for k, (d, gpu) in enumerate(zip(parts, ("H100", "H200", "H100"), strict=True), 1):
        _launches(d, f"[{k}]", gpu_model=gpu)
    cap = load_json_model(_merged_launches(tmp_path, parts), LaunchCapture)
    assert cap.gpu_model == "" and len(cap.rows) == 3


def test_a_part_without_a_launch_capture_adds_no_rows(tmp_path, parts):
    _launches(parts[1], "[2]")
    _launches(parts[2], "[3]")
    cap = load_json_model(_merged_launches(tmp_path, parts), LaunchCapture)
    assert [(r.run_name, r.shape) for r in cap.rows] == [("topk", "[2]"), ("topk", "[3]")]


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_an_unreadable_launch_capture_of_a_part_leaves_the_op_without_one(tmp_path, parts, bad):
    """Whichever part's it is: no part before it or after it writes a partial one."""
    for k, d in enumerate(parts, 1):
        _launches(d, f"[{k}]")
    (parts[bad] / CODEGEN_DIR / LAUNCHES_JSON).write_text("{")
    path = _merged_launches(tmp_path, parts)
    assert path.parent.is_dir() and not path.exists()
    assert (path.parent / CODEGEN_INDEX).is_file()  # the rest of the dir is merged


# --------------------------------------------------------------------------- an op of two tests


def test_the_index_counts_within_each_benchmark_op_of_one_mark():
    """One mark may cover several tests (upstream mm: test_mm, test_mm_self_transpose):
    the plugins count a row's index within its (benchmark op, dtype), so do these."""
    ops = ("mm", "mm_t")
    rows = [{"op": o, "dtype": "float32", "shape": f"[{i}]"} for o in ops for i in range(3)]
    assert row_group(rows[0]) == ("mm", "float32")
    assert row_group(Row(op="mm_t", dtype="bfloat16", shape="[1]")) == ("mm_t", "bfloat16")
    assert [r["shape"] for r in part_rows(rows, (1, 2))] == ["[0]", "[2]", "[0]", "[2]"]
    second = [(r["op"], r["shape"]) for r in part_rows(rows, (2, 2))]
    assert second == [("mm", "[1]"), ("mm_t", "[1]")]
    assert most_parts(rows) == 3
    assert most_parts(rows + [{"op": "mm_t", "dtype": "float16", "shape": "[0]"}]) == 1


def test_merged_rows_of_two_benchmark_ops_are_in_the_unsplit_order():
    pairs = [(o, d) for o in ("mm", "mm_t") for d in ("float16", "float32")]
    whole = [Row(op=o, dtype=d, shape=f"[{i}]") for o, d in pairs for i in range(3)]
    n = 2
    results = []
    for k in (1, 2):
        mine = [whole[i] for i in part_indices(whole, (k, n))]
        results.append(((k, n), _result(mine, run_name=f"topk~{k}of2")))
    merged = merge_results(results, "topk")
    view = [(r.op, r.dtype, r.shape) for r in merged.rows]
    assert view == [(r.op, r.dtype, r.shape) for r in whole]


def test_a_part_not_measured_keeps_the_op_listed_as_not_measured():
    parts, _ = split_ops([_op("topk")], {"main/topk": 2}, {"main/topk": 9.0})
    common = {"repo": "main", "op": "topk", "status": S.ERROR}
    ok = OpStatus(**{**common, "status": S.PASS}, run_name="topk~1of2", rows=3)
    skipped = OpStatus(**common, run_name="topk~2of2", note=f"{NOT_MEASURED}: budget spent")
    merged = merge_statuses(list(zip(parts, [ok, skipped], strict=True)), _op("topk"))
    assert merged.note.startswith(NOT_MEASURED) and "rows measured in 2 parts" in merged.note
    assert not_measured([merged]) == ["main/topk"]
    plain = merge_statuses(list(zip(parts, [ok, ok], strict=True)), _op("topk"))
    assert not plain.note.startswith(NOT_MEASURED)


# --------------------------------------------------------------------------- parts over slots


def test_parts_of_one_op_never_share_a_slot_when_another_is_free():
    big = [p for p in split_ops([_op("big")], {"main/big": 2}, {"main/big": 12.0})[0]]
    a, b = _op("a"), _op("b")
    costs = {"main/a": 7.0, "main/b": 7.0, big[0].key: 6.0, big[1].key: 6.0}
    dealt = {"0/1": [a], "0/2": [b], "0/3": [big[0], big[1]]}  # what LPT gives here
    out = spread_parts(dealt, costs)
    where = {o.run_name: s for s, ops in out.items() for o in ops}
    assert where["big~1of2"] != where["big~2of2"]
    names = sorted(o.run_name for ops in out.values() for o in ops)
    assert names == ["a", "b", "big~1of2", "big~2of2"]
    assert out["0/1"] == [a, big[1]]  # to the least loaded slot, costliest first there
    assert dealt["0/3"] == [big[0], big[1]]  # the input is not changed
    # no free slot: the parts stay
    assert spread_parts({"0/1": [big[0], big[1]]}, costs) == {"0/1": [big[0], big[1]]}


def test_the_deal_spreads_parts_over_slots():
    big = split_ops([_op("big")], {"main/big": 2}, {"main/big": 12.0})[0]
    sel = OpSelection(ops=[_op("a"), _op("b"), *big])
    costs = OpCosts({"main/a": 7.0, "main/b": 7.0, big[0].key: 6.0, big[1].key: 6.0}, frozenset())
    dealt = deal(sel, ["0/1", "0/2", "0/3"], costs)
    slots = [s for s, ops in dealt.items() for o in ops if o.part]
    assert len(slots) == 2 and len(set(slots)) == 2


def test_surplus_rows_are_only_more_rows_of_a_group_than_the_baseline_holds():
    base = _base(("float16", "[1]"), ("float16", "[2]"))
    twice = [_row("float16", "[1]"), _row("float16", "[2]")] * 2
    assert surplus_rows(twice, base) == "topk/float16 4 > 2"
    # fewer rows, or a dtype the baseline lacks (other --dtypes asked): not a surplus
    assert surplus_rows(twice[:1] + [_row("float32", "[1]")] * 5, base) == ""
    assert surplus_rows(twice, None) == ""


def test_parts_of_ops_of_two_repos_are_two_ops():
    main = split_ops([_op("x")], {"main/x": 2}, {"main/x": 4.0})[0]
    vllm = [SelectedOp(repo="vllm", op="x", run_name=p.run_name, nodeids=p.nodeids,
                       part=p.part, whole="x") for p in main]  # fmt: skip
    costs = {o.key: 2.0 for o in [*main, *vllm]}
    out = spread_parts({"s1": list(main), "s2": list(vllm)}, costs)
    # one part of each op per slot, every part kept once
    assert {s: [(o.repo, o.part) for o in ops] for s, ops in out.items()} == {
        "s1": [("main", (1, 2)), ("vllm", (2, 2))],
        "s2": [("vllm", (1, 2)), ("main", (2, 2))],
    }


def test_only_the_ops_long_enough_to_cut_have_their_baseline_read():
    asked = []

    def rows(key):
        asked.append(key)
        return 14

    assert part_counts(GATE_CORE, 4, rows) == {"main/topk": 2}
    assert asked == ["main/topk"]


@pytest.mark.parametrize("counts, merged", [((0, 2, 1), 3), ((0, None, 1), None)])
def test_merged_codegen_index_counts_every_parts_unrecorded_kernels(
    tmp_path, parts, counts, merged
):
    """The kernels a part ran without a record add up; a part that did not count them
    (a recorder before 2026-12-02) makes the op's count unknown, not 0."""
    for d, n in zip(parts, counts, strict=True):
        path = d / CODEGEN_DIR / CODEGEN_INDEX
        index = load_json_model(path, CodegenIndex)
        dump_json_model(path, index.model_copy(update={"unrecorded": n}))
    dest = tmp_path / "main" / "topk"
    merge_part_dirs(parts, None, dest)
    assert load_codegen_index(dest).unrecorded == merged
