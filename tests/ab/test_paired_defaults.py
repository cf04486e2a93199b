"""zlbench's default paired thresholds: 3 % for every row, wider built-in ones for the
1M-element reductions (per-process state, docs/judging.md), a thresholds file's
``paired_ops`` over them entry by entry; the verdict and the report list every
per-op paired threshold that judged a row, built-in ones marked as such."""

from __future__ import annotations

import re

import pytest
from zlsynth import brow, crow, run_result, write_baseline, write_results

from zlbench.cli import main
from zlbench.gate.paired import DEFAULT_PAIRED_OPS, DEFAULT_PAIRED_THRESHOLD, paired_ops_in_effect
from zlbench.models import AbCompiler, AbSummary, GateVerdict, Verdict, load_json_model
from zlbench.runner.ab.rounds import AB_DIR, write_summary

S = "[1048576]"
OPS = ("sum", "mean", "add")
# The built-in per-op paired threshold of the reductions here (every built-in entry is 8 %).
WIDE = 0.08


def batch(root, lat: float):
    """One row per op of OPS, FlagGems at ``lat`` ms, torch at 1 ms."""
    runs = [run_result(op, [crow(op, S, 1.0 / lat, lat=lat, torch_lat=1.0)]) for op in OPS]
    return write_results(root, runs)


@pytest.fixture
def gate_dir(tmp_path):
    """Baseline: every row at 1 ms. A gate dir whose screen has every op 10 % slower (all
    suspects) and whose A/B (two rounds) has the PR 5 % slower than the base in each."""
    bl = write_baseline(tmp_path / "bl", {op: [brow(op, S, 1.0)] for op in OPS})
    gate = tmp_path / "gate"
    batch(gate / "results", 1.10)
    for i in (1, 2):
        batch(gate / AB_DIR / str(i) / "pr", 1.05)
        batch(gate / AB_DIR / str(i) / "base", 1.0)
    summary = AbSummary(
        mode="suspects", rounds=2, order=["pr", "base"] * 2, threshold=DEFAULT_PAIRED_THRESHOLD
    )
    summary.pr, summary.base = AbCompiler(env="pr"), AbCompiler(env="/envs/base")
    summary.ops = [f"main/{op}" for op in OPS]
    write_summary(gate / AB_DIR, summary)
    return bl, gate


def judge(tmp_path, bl, gate, *extra: str) -> tuple[int, GateVerdict, str]:
    """``zlbench gate --results <gate dir>``: exit code, verdict.json, report.md."""
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out), *extra])
    return rc, load_json_model(out / "verdict.json", GateVerdict), (out / "report.md").read_text()


def verdicts(v: GateVerdict) -> dict[str, tuple[Verdict, float]]:
    return {r.key.op: (r.verdict, r.ab.threshold) for r in v.rows}


def test_the_built_in_paired_thresholds_are_the_six_reductions():
    assert DEFAULT_PAIRED_THRESHOLD == 0.03
    assert dict(DEFAULT_PAIRED_OPS) == dict.fromkeys(
        ("amax", "argmax", "mean", "prod", "sum", "var_mean"), WIDE
    )


def test_in_effect_without_a_file_are_the_built_in_ones():
    assert paired_ops_in_effect(0.03) == dict(DEFAULT_PAIRED_OPS)
    assert paired_ops_in_effect(0.03, {}) == dict(DEFAULT_PAIRED_OPS)


def test_a_file_entry_overrides_its_default_and_keeps_the_others():
    got = paired_ops_in_effect(0.03, {"sum": 0.03, "softmax": 0.05})
    assert got["sum"] == 0.03 and got["softmax"] == 0.05
    assert {op: got[op] for op in DEFAULT_PAIRED_OPS if op != "sum"} == {
        op: t for op, t in DEFAULT_PAIRED_OPS.items() if op != "sum"
    }


def test_a_built_in_entry_never_tightens_a_wider_ab_threshold():
    """``--ab-threshold 0.1``: the reductions are judged at 10 % like every row, not 8 %;
    a file's entry still applies."""
    assert paired_ops_in_effect(0.1) == {}
    assert paired_ops_in_effect(0.1, {"sum": 0.05}) == {"sum": 0.05}


def test_without_a_thresholds_file_a_sum_row_5_percent_slower_passes_an_add_row_regresses(
    tmp_path, gate_dir
):
    rc, v, _ = judge(tmp_path, *gate_dir)
    assert verdicts(v) == {
        "sum": (Verdict.PASS, WIDE),
        "mean": (Verdict.PASS, WIDE),
        "add": (Verdict.REGRESSION, DEFAULT_PAIRED_THRESHOLD),
    }
    assert rc == 1 and v.verdict == "FAIL"
    assert v.thresholds.paired_ops == dict(DEFAULT_PAIRED_OPS)  # verdict.json names them


def test_a_thresholds_file_entry_overrides_one_default_and_keeps_the_others(tmp_path, gate_dir):
    y = tmp_path / "th.yaml"
    y.write_text("paired_ops:\n  sum: 0.03\n  add: 0.06\n")
    rc, v, _ = judge(tmp_path, *gate_dir, "--thresholds", str(y))
    assert verdicts(v) == {
        "sum": (Verdict.REGRESSION, 0.03),  # the file switched its default off
        "mean": (Verdict.PASS, WIDE),  # the other defaults stay
        "add": (Verdict.PASS, 0.06),
    }
    assert rc == 1
    assert v.thresholds.paired_ops == {**DEFAULT_PAIRED_OPS, "sum": 0.03, "add": 0.06}


def paired_lines(md: str) -> dict[str, str]:
    """op -> what its ``paired_ops`` line in report.md's thresholds section says."""
    found = re.findall(
        r"^- paired\\_ops\.(\S+): (\S+) \\\(A/B against the base; (.+)\\\)$", md, re.M
    )
    return {op.replace("\\_", "_"): f"{t} {said}" for op, t, said in found}


def test_the_report_lists_every_built_in_paired_threshold_as_built_in(tmp_path, gate_dir):
    _, _, md = judge(tmp_path, *gate_dir)
    assert paired_lines(md) == {op: f"{t} built-in default" for op, t in DEFAULT_PAIRED_OPS.items()}
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<li>paired_ops.var_mean: 0.08 (A/B against the base; built-in default)</li>" in html


def test_the_report_marks_the_files_paired_thresholds_apart_from_the_built_in_ones(
    tmp_path, gate_dir
):
    y = tmp_path / "th.yaml"
    y.write_text("paired_ops:\n  sum: 0.03\n  add: 0.06\n")
    _, _, md = judge(tmp_path, *gate_dir, "--thresholds", str(y))
    lines = paired_lines(md)
    assert lines["sum"] == "0.03 from the thresholds file"
    assert lines["add"] == "0.06 from the thresholds file"
    assert lines["mean"] == "0.08 built-in default" and len(lines) == len(DEFAULT_PAIRED_OPS) + 1


def test_gate_help_states_the_default_paired_threshold_and_the_built_in_ones(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "paired threshold vs the base (default 0.03;" in text
    assert "amax, argmax, mean, prod, sum, var_mean 0.08" in text
