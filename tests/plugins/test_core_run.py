"""One pytest process, several plan entries: shapes, graph fallback, failures, result.json.

All checks read one module-scoped run of the fake suite (tests/benchpkg) so the
tier stays fast; each test asserts one behaviour of docs/design.md §5.
"""

from __future__ import annotations

import pytest
import yaml
from _corerun import copy_benchpkg, entry, run_plan

from zlbench.models import MarkerKind, RunStatus, Timing

ADD = "benchmark/test_add.py::test_add"
MIS = "benchmark/test_misbehaving.py::"
HARD = "benchmark/test_hardcoded_shapes.py::"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = copy_benchpkg(tmp_path_factory.mktemp("core") / "fg")
    shapes = yaml.safe_load((root / "benchmark" / "core_shapes.yaml").read_text())
    shapes["pinned_add"] = {"shapes": [[12], [3, 4]], "shape_desc": "M"}
    shapes["LiteralShapesBenchmark"] = {"shapes": [[20], [2, 10]]}
    shape_file = root / "zl_shapes.yaml"
    shape_file.write_text(yaml.safe_dump(shapes))
    entries = [
        entry(root, "add", ADD, dtypes=["float32"]),
        entry(root, "nonzero", MIS + "test_nonzero"),
        entry(root, "fail_second", MIS + "test_fail_second"),
        entry(root, "always_skipped", MIS + "test_always_skipped"),
        entry(root, "pinned_add", HARD + "test_pinned_add", dtypes=["float32"],
              shape_file=str(shape_file)),
        entry(root, "literal_add", HARD + "test_literal_add", dtypes=["float32"],
              shape_file=str(shape_file)),
        entry(root, "no_bf16", MIS + "test_no_bf16", dtypes=["bfloat16"]),
    ]  # fmt: skip
    return run_plan(root, entries, "--mode", "cudagraph")


def test_ops_are_framed_by_begin_end_lines(run):
    run.lines.fnmatch_lines(
        [
            "ZLBENCH_OP_BEGIN run_name=add",
            "*Operator: add  Performance Test (dtype=torch.float32, mode=cudagraph,level=core)*",
            "ZLBENCH_OP_END run_name=add status=PASS",
            "ZLBENCH_OP_BEGIN run_name=nonzero",
            "ZLBENCH_OP_END run_name=nonzero status=PASS",
            "ZLBENCH_OP_BEGIN run_name=fail_second",
            "ZLBENCH_OP_END run_name=fail_second status=FAIL",
            "ZLBENCH_OP_BEGIN run_name=always_skipped",
            "ZLBENCH_OP_END run_name=always_skipped status=SKIP",
        ]
    )
    assert run.rc == 1  # fail_second and no_bf16 fail


def test_result_json_has_rows_and_environment(run):
    res = run.result("add")
    assert res.status is RunStatus.PASS
    assert [(r.dtype, r.shape) for r in res.rows] == [
        ("float32", "[torch.Size([64]), torch.Size([64])]"),
        ("float32", "[torch.Size([8, 8]), torch.Size([8, 8])]"),
    ]
    assert all(r.speedup and r.latency_ms and r.latency_base_ms for r in res.rows)
    env = res.environment
    assert (env.triton_dist, env.flaggems_package, env.mode, env.level) == (
        "triton", "flag_gems", "cudagraph", "core",
    )  # fmt: skip
    assert env.torch and env.triton_version and env.flaggems_version == "0.0.0+fake"
    # _corerun.FAST's budgets, upstream's --mode beside them
    assert env.timing == Timing(mode="cudagraph", method="graph", warmup_ms=1, replays=2)
    assert res.started and res.duration_s is not None and res.bench_s is not None
    assert res.test_nodeids == [ADD] and res.timing == "cudagraph"
    assert (run.run_dir("add") / "shapes.yaml").read_text() == (
        run.root / "benchmark" / "core_shapes.yaml"
    ).read_text()


def test_uncapturable_benchmark_falls_back_with_marker_and_rows(run):
    run.lines.fnmatch_lines(
        ["BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=RuntimeError:CUDA_error:*"]
    )
    res = run.result("nonzero")
    assert res.status is RunStatus.PASS
    assert len(res.rows) == 2 and all(r.no_cudagraph and r.speedup for r in res.rows)
    assert {m.kind for m in res.markers} == {MarkerKind.NO_CUDAGRAPH}
    assert {(m.dtype, m.shape_detail) for m in res.markers} == {
        (r.dtype, r.shape) for r in res.rows
    }
    assert sum(res.marker_counts.values()) == 4  # torch and gems side of each row
    assert not any(r.no_cudagraph for r in run.result("add").rows)


def test_failing_second_shape_keeps_first_row_and_names_the_shape(run):
    res = run.result("fail_second")
    assert res.status is RunStatus.FAIL
    assert [(r.shape, r.status) for r in res.rows] == [
        ("[torch.Size([16]), torch.Size([16])]", "SUCCESS"),
        ("[torch.Size([32]), torch.Size([32])]", "FAILED"),
    ]
    assert res.failing_shape == "[torch.Size([32]), torch.Size([32])]"
    assert "unsupported shape (32,)" in res.error
    assert res.markers == []  # a broken kernel is not a graph fallback


def test_skipped_op(run):
    res = run.result("always_skipped")
    assert res.status is RunStatus.SKIP and res.rows == []
    # counted for the runner's partial_skip=N note (issue 30)
    assert res.skipped_tests == 1 and run.result("add").skipped_tests == 0


def test_shape_file_overrides_hardcoded_set_shapes(run):
    run.lines.fnmatch_lines(
        ["zlbench: pinned_add: 2 shapes from key 'pinned_add' replace set_shapes()"]
    )
    shapes = [r.shape for r in run.result("pinned_add").rows]
    assert shapes == [
        "[torch.Size([12]), torch.Size([12])]",
        "[torch.Size([3, 4]), torch.Size([3, 4])]",
    ]


def test_shape_file_overrides_shapes_hardcoded_in_get_input_iter(run):
    run.lines.fnmatch_lines(
        [
            "zlbench: literal_add: 2 shapes from key 'LiteralShapesBenchmark' replace"
            " get_input_iter()"
        ]
    )
    shapes = [r.shape for r in run.result("literal_add").rows]
    assert shapes == [
        "[torch.Size([20]), torch.Size([20])]",
        "[torch.Size([2, 10]), torch.Size([2, 10])]",
    ]


def test_unsupported_dtype_fails_like_upstream(run):
    res = run.result("no_bf16")
    assert res.status is RunStatus.FAIL and res.rows == []
    assert "can't be supported by this op 'no_bf16'" in res.error
    run.lines.fnmatch_lines(["ZLBENCH_OP_END run_name=no_bf16 status=FAIL"])


def test_terminal_summary_lists_every_entry(run):
    run.lines.fnmatch_lines(
        [
            "*= zlbench =*",
            "add * PASS  2 rows, no markers",
            "nonzero * PASS  2 rows, BENCHMARK_DIRECT_NO_CUDAGRAPH*",
        ]
    )


def test_plugins_load_without_warnings(run):
    assert "PytestAssertRewriteWarning" not in run.out
    assert "matched no collected test" not in run.out
