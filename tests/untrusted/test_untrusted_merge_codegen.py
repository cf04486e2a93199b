"""``zlbench merge`` takes every shard's codegen screen (issue 26): shards whose screens
disagree (one holding a kernel that no longer compiles) or some with a screen and some
without are refused, so the judge's verdict never depends on the order of the shards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import main
from zlbench.models import (
    CodegenClass,
    CodegenScreen,
    KernelScreen,
    TimingPlanFile,
    dump_json_model,
)

S = "[1024]"


def kernel(status: CodegenClass, **kw) -> KernelScreen:
    return KernelScreen(kernel_id="idmm", name="mm_kernel", status=status, ops=["main/mm"], **kw)


def shard(root: Path, op: str, screen: CodegenScreen | None, plan=None) -> Path:
    write_results(root / "results", [run_result(op, [crow(op, S, 1.0)])])
    if screen is not None:
        dump_json_model(root / "codegen" / "codegen.json", screen)
    if plan is not None:
        dump_json_model(root / "codegen" / "timing.json", plan)
    return root


def screen(status: CodegenClass, **kw) -> CodegenScreen:
    return CodegenScreen(baseline_dir="bl", kernels=[kernel(status, **kw)])


def merge(tmp_path, *dirs) -> int:
    return main(["merge", *map(str, dirs), "--out", str(tmp_path / "m")])


@pytest.mark.parametrize("order", [(1, 2), (2, 1)])
def test_shards_whose_screens_disagree_are_refused_in_either_order(tmp_path, capsys, order):
    s = {
        1: shard(tmp_path / "s1", "add", screen(CodegenClass.IDENTICAL)),
        2: shard(tmp_path / "s2", "mm", screen(CodegenClass.FAILED, error="no dot")),
    }
    assert merge(tmp_path, *(s[k] for k in order)) == 2
    line = one_error_line(capsys)
    assert "disagree" in line and "compile_failed" in line and "identical" in line
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("order", [(1, 2), (2, 1)])
def test_a_shard_without_a_screen_next_to_one_with_is_refused(tmp_path, capsys, order):
    s = {
        1: shard(tmp_path / "s1", "add", screen(CodegenClass.FAILED)),
        2: shard(tmp_path / "s2", "mm", None),
    }
    assert merge(tmp_path, *(s[k] for k in order)) == 2
    assert "has no codegen screen" in one_error_line(capsys)


def test_shards_whose_timing_plans_disagree_are_refused(tmp_path, capsys):
    a = TimingPlanFile(time="changed", skipped={"main/mm": "identical"})
    b = TimingPlanFile(time="changed", timed={"main/mm": "changed"})
    s1 = shard(tmp_path / "s1", "add", screen(CodegenClass.IDENTICAL), a)
    s2 = shard(tmp_path / "s2", "mm", screen(CodegenClass.IDENTICAL), b)
    assert merge(tmp_path, s1, s2) == 2
    assert "timing plan" in one_error_line(capsys)


def test_agreeing_screens_merge_whatever_their_timings(tmp_path):
    s1 = shard(tmp_path / "s1", "add", screen(CodegenClass.FAILED, error="a"))
    other = screen(CodegenClass.FAILED, error="b")
    other.wall_s, other.generated = 99.0, "2026-12-01T00:00:00Z"
    s2 = shard(tmp_path / "s2", "mm", other)
    assert merge(tmp_path, s2, s1) == 0
    assert (tmp_path / "m" / "codegen" / "codegen.json").is_file()


def _collect_shards():
    import importlib.util

    ci = Path(__file__).resolve().parents[2] / "ci"
    # the script puts its own dir (ci/: gha.py) on sys.path
    spec = importlib.util.spec_from_file_location("zl_collect_shards", ci / "collect_shards.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("rc", [True, 1.0, "1"])
def test_a_shard_json_exit_code_that_is_not_an_integer_is_not_measured(tmp_path, rc):
    import json

    collect = _collect_shards()
    d = tmp_path / "zlbench-shard-1-of-1"
    (d / "gate" / "results").mkdir(parents=True)
    (d / "shard.json").write_text(json.dumps({"shard": 1, "count": 1, "exit_code": rc}))
    with pytest.raises(collect.CiError, match="could not measure"):
        collect.collect(tmp_path, 1)


def test_a_shard_that_exited_1_is_named_not_taken_in_silently(tmp_path, capsys):
    import json

    collect = _collect_shards()
    for k, rc in ((1, 0), (2, 1)):
        d = tmp_path / f"zlbench-shard-{k}-of-2"
        (d / "gate" / "results").mkdir(parents=True)
        (d / "shard.json").write_text(json.dumps({"shard": k, "count": 2, "exit_code": rc}))
    assert collect.main([str(tmp_path), "--count", "2", "--list-out", str(tmp_path / "l")]) == 0
    out = capsys.readouterr().out
    assert "shard(s) 2/2 exited 1" in out
