"""Re-judging a gate dir takes nothing on an artifact's word (issue 26: 9, 10, 11): the
ops ``codegen/timing.json`` lists as not timed are proven again from the dir's own
screen, an ``ab/ab.json`` rule looser than the defaults is refused unless the judge's
own flags give it, and codegen.json, timing.json and ab.json are never read through a
link out of the gate dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.interleaved import gate_dir, pairs_of
from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.models import (
    CodegenClass,
    CodegenScreen,
    GateVerdict,
    KernelScreen,
    RowKey,
    TimingPlanFile,
    dump_json_model,
    load_json_model,
)

S = "[1024]"
SLOWER = {"big": pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)}  # +10 % vs the base


def kernel(op: str, status: CodegenClass) -> KernelScreen:
    row = RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape=S)
    return KernelScreen(
        kernel_id=f"id{op}", name=f"{op}_kernel", status=status, ops=[f"main/{op}"], rows=[row]
    )


def changed_gate(tmp_path: Path, skipped: dict[str, str], time="changed") -> tuple[Path, Path]:
    """Baseline add and mm; the gate dir timed both, mm 2x slower with a changed kernel,
    add identical; its timing.json lists ``skipped`` as not timed."""
    bl = write_baseline(tmp_path / "bl", {op: [brow(op, S, 1.0)] for op in ("add", "mm")})
    g = tmp_path / "gate"
    measured = [run_result("mm", [crow("mm", S, 0.5)])]
    if "main/add" not in skipped:  # a skipped op has no rows in results/
        measured.append(run_result("add", [crow("add", S, 1.0)]))
    write_results(g / "results", measured)
    screen = [kernel("add", CodegenClass.IDENTICAL), kernel("mm", CodegenClass.TTGIR)]
    screen_file = CodegenScreen(baseline_dir="bl", kernels=screen)
    dump_json_model(g / "codegen" / "codegen.json", screen_file)
    timed = {k: "kernel(s) changed" for k in ("main/add", "main/mm") if k not in skipped}
    plan = TimingPlanFile(time=time, timed=timed, skipped=skipped)
    dump_json_model(g / "codegen" / "timing.json", plan)
    return bl, g


def judge(tmp_path: Path, bl: Path, g: Path, *extra: str, command="gate") -> int:
    results = ["--results", str(g)] if command == "gate" else [str(g)]
    return main([command, *results, "--baseline", str(bl), "--out", str(tmp_path / "out"), *extra])


def verdict(tmp_path: Path) -> GateVerdict:
    return load_json_model(tmp_path / "out" / "verdict.json", GateVerdict)


# --------------------------------------------------------------------------- 9: skipped ops


def test_an_op_the_screen_proves_unchanged_is_skipped_with_the_screens_own_proof(tmp_path):
    bl, g = changed_gate(tmp_path, {"main/add": "anything an artifact says"})
    assert judge(tmp_path, bl, g) == 1  # mm's regression judged; add not MISSING
    v = verdict(tmp_path)
    assert v.counts == {"REGRESSION": 1}
    assert v.codegen.not_timed == {"main/add": "all 1 kernel(s) identical; all 1 row(s) covered"}


@pytest.mark.parametrize("command", ["gate", "report"])
def test_a_regressed_op_whose_kernels_changed_listed_as_skipped_is_refused(
    tmp_path, capsys, command
):
    """The regressed op would drop out of the judged scope: the gate would pass."""
    bl, g = changed_gate(tmp_path, {"main/mm": "all 1 kernel(s) identical"})
    assert judge(tmp_path, bl, g, command=command) == 2
    line = one_error_line(capsys)
    assert "timing.json: main/mm is listed as not timed" in line
    assert "does not prove it unchanged (kernel(s) mm_kernel (TTGIR changed))" in line
    assert not (tmp_path / "out" / "comment.md").exists()


def test_a_skipped_op_with_no_kernel_in_the_screen_is_refused(tmp_path, capsys):
    bl, g = changed_gate(tmp_path, {})
    bl = write_baseline(tmp_path / "bl2", {op: [brow(op, S, 1.0)] for op in ("add", "mm", "sum")})
    plan = load_json_model(g / "codegen" / "timing.json", TimingPlanFile)
    plan.skipped = {"main/sum": "all 0 kernel(s) identical"}
    dump_json_model(g / "codegen" / "timing.json", plan)
    assert judge(tmp_path, bl, g) == 2
    assert "main/sum is listed as not timed" in one_error_line(capsys)


def test_ops_listed_as_skipped_under_time_all_are_refused(tmp_path, capsys):
    bl, g = changed_gate(tmp_path, {"main/add": "all 1 kernel(s) identical"}, time="all")
    assert judge(tmp_path, bl, g) == 2
    assert "listed as not timed under --time all" in one_error_line(capsys)


# --------------------------------------------------------------------------- 10: the A/B rule


def tamper_ab(gate: Path, **fields) -> None:
    f = gate / "ab" / "ab.json"
    f.write_text(json.dumps(json.loads(f.read_text()) | fields))


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"threshold": 0.99}, "threshold 0.99 (default 0.03): --ab-threshold"),
        ({"floor_us": 1e12}, "floor 1e+12 µs (default 0.2): --ab-floor-us"),
        ({"max_pairs": 1}, "max_pairs 1 (default 16): --ab-max-pairs"),
        ({"max_pairs_plain": 2}, "max_pairs_plain 2 (default 32): --ab-max-pairs"),
        ({"confidence": 0.01}, "confidence 0.01 (default 0.9): no flag sets it"),
        ({"min_pairs": 1}, "min_pairs 1 (default 5): no flag sets it"),
        ({"confidence": 0.999}, "confidence 0.999 (default 0.9)"),  # wider: INCONCLUSIVE
    ],
)
def test_an_ab_json_rule_looser_than_the_defaults_is_refused(tmp_path, capsys, fields, named):
    bl, g = gate_dir(tmp_path, SLOWER)
    tamper_ab(g, **fields)
    assert judge(tmp_path, bl, g) == 2
    line = one_error_line(capsys)
    assert "ab.json: the A/B records a rule looser than the defaults" in line and named in line
    assert not (tmp_path / "out" / "comment.md").exists()


def test_a_looser_threshold_and_floor_given_by_the_judges_own_flags_judge(tmp_path):
    bl, g = gate_dir(tmp_path, SLOWER)
    tamper_ab(g, threshold=0.99, floor_us=1e12)
    assert judge(tmp_path, bl, g, "--ab-threshold", "0.05", "--ab-floor-us", "0.2") == 1
    v = verdict(tmp_path)
    assert v.ab.threshold == 0.05 and "recorded threshold 0.99" in v.ab.note


def test_a_stricter_recorded_rule_judges_at_what_was_recorded(tmp_path):
    bl, g = gate_dir(tmp_path, {"s": pairs_of([102.0, 102.1, 101.9, 102.0, 102.2], 100.0)})
    assert judge(tmp_path, bl, g) == 0  # +2 %: within the default 3 %
    tamper_ab(g, threshold=0.01, max_pairs=32)
    assert judge(tmp_path, bl, g) == 1


def test_a_rounds_ab_with_a_loose_threshold_is_refused_too(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, SLOWER)
    tamper_ab(g, method="rounds", threshold=0.5, floor_us=0.3)
    for k in ("min_pairs", "max_pairs", "max_pairs_plain", "confidence"):
        tamper_ab(g, **{k: None})
    assert judge(tmp_path, bl, g) == 2
    assert "threshold 0.5 (default 0.03): --ab-threshold" in one_error_line(capsys)


# --------------------------------------------------------------------------- 11: links out


def link_out(tmp_path: Path, path: Path) -> None:
    """``path`` replaced by a link to a copy of it outside the gate dir."""
    outside = tmp_path / "elsewhere" / path.name
    outside.parent.mkdir(exist_ok=True)
    outside.write_bytes(path.read_bytes())
    path.unlink()
    os.symlink(outside, path)


@pytest.mark.parametrize("name", ["codegen.json", "timing.json"])
def test_a_codegen_file_linked_out_of_the_gate_dir_is_refused(tmp_path, capsys, name):
    bl, g = changed_gate(tmp_path, {"main/add": "x"})
    link_out(tmp_path, g / "codegen" / name)
    assert judge(tmp_path, bl, g) == 2
    line = one_error_line(capsys)
    assert f"'codegen/{name}' leads outside" in line and "through a symlink" in line


def test_an_ab_json_linked_out_of_the_gate_dir_is_refused(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, SLOWER)
    link_out(tmp_path, g / "ab" / "ab.json")
    assert judge(tmp_path, bl, g) == 2
    assert "'ab/ab.json' leads outside" in one_error_line(capsys)
