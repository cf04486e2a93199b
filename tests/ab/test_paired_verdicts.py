"""The paired statistic and the A/B verdict semantics (pure judge over synthetic dirs):
REGRESSION only when slower than the base; slower than the stored baseline but not
than the base: PASS, inherited; the op verdicts, counts and summary follow."""

from __future__ import annotations

import shutil

import pytest

from tests.support.zlsynth import ENV, brow, crow, run_result, write_baseline, write_results
from zlbench.errors import ZlbenchError
from zlbench.gate import verdict as judging
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.paired import pair_rounds, round_ratio, side_mismatch
from zlbench.gate.restate import restate
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import AbCompiler, AbSummary, Verdict
from zlbench.runner.ab.rounds import AB_DIR, write_summary
from zlbench.workflow.ab import judge_ab, suspects

S, T = "[4096]", "[8]"


def rows(x_lat, y_lat=1.0):
    """Current rows of ops x (two shapes) and y: torch at 1 ms, FlagGems at ``lat``."""
    return {
        "x": [crow("x", S, 1.0 / x_lat, lat=x_lat, torch_lat=1.0), crow("x", T, 1.0)],
        "y": [crow("y", S, 1.0 / y_lat, lat=y_lat, torch_lat=1.0)],
    }


def write_batch(root, by_op, env=ENV):
    return write_results(root, [run_result(op, rs, env=env) for op, rs in by_op.items()])


@pytest.fixture
def screen(tmp_path):
    """Stored baseline: every row at 1 ms. The PR screen: x at S is 10 % slower."""
    base = {"x": [brow("x", S, 1.0), brow("x", T, 1.0)], "y": [brow("y", S, 1.0)]}
    b = load_baseline(write_baseline(tmp_path / "bl", base))
    gate = tmp_path / "gate"
    r = load_results(write_batch(gate / "results", rows(1.10)))
    th = load_thresholds(None, b.manifest.thresholds)
    v = judging.run_gate(b, r, th, judging.GateOptions())
    assert v.verdict == "FAIL" and suspects(v) == ["main/x"]
    return v, gate


def write_ab(gate, rounds, mode="suspects", threshold=0.03, env=ENV):
    """``rounds``: list of (PR x latency, base x latency); ab.json as the gate writes it."""
    root = gate / AB_DIR
    for i, (pr, base) in enumerate(rounds, start=1):
        write_batch(root / str(i) / "pr", {"x": rows(pr)["x"]})
        write_batch(root / str(i) / "base", {"x": rows(base)["x"]}, env=env)
    order = ["pr", "base"] * len(rounds)
    summary = AbSummary(mode=mode, rounds=len(rounds), order=order, threshold=threshold)
    summary.pr = AbCompiler(env="pr", path="/pr/triton")
    summary.base = AbCompiler(env="/envs/base", path="/envs/base/triton")
    summary.ops = ["main/x"]
    write_summary(root, summary)


def row(v, op="x", shape=S):
    return next(r for r in v.rows if r.key.run_name == op and r.key.shape == shape)


def test_round_ratio_is_base_over_pr_latency():
    assert round_ratio(crow("x", S, 1.0, lat=2.0), crow("x", S, 1.0, lat=1.0)) == 0.5
    assert round_ratio(crow("x", S, 1.0, lat=2.0), None) is None
    assert round_ratio(crow("x", S, None), crow("x", S, 1.0)) is None


def test_paired_statistic_is_the_median_of_round_ratios_over_rounds_both_sides_measured():
    k = crow("x", S, 1.0).key("main", "x")

    def one(lat):
        return {k: crow("x", S, 1.0, lat=lat)}

    rounds = [(one(1.0), one(1.0)), (one(1.25), one(1.0)), (one(1.0), {}), (one(0.5), one(0.6))]
    p = pair_rounds(rounds)[k]
    assert p.rounds == 3 and p.round_ratios == pytest.approx([1.0, 0.8, 1.2])
    assert p.ratio == pytest.approx(1.0) and p.change == pytest.approx(0.0)
    assert p.pr_us == pytest.approx([1000.0, 1250.0, 500.0])


def test_slower_than_stored_baseline_but_not_than_the_base_is_an_inherited_pass(screen):
    v, gate = screen
    write_ab(gate, [(1.10, 1.10), (1.11, 1.10), (1.10, 1.09)])
    out = judge_ab(v, gate)
    r = row(out)
    assert r.verdict is Verdict.PASS and r.ab.inherited and r.ab.screen_verdict == "REGRESSION"
    assert r.reason.startswith("inherited from the base (baseline vtest is stale here)")
    assert out.verdict == "PASS" and out.exit_code == 0
    op = next(o for o in out.ops if o.run_name == "x")
    assert op.verdict is Verdict.PASS and "inherited" in op.reason and op.reproduce is None
    assert out.ab.base.env == "/envs/base" and out.counts == {"PASS": 3}
    assert out.summary == (
        "PASS: 2 ops checked = 2 timed (0 failing) + 0 proven identical + 0 skipped; 3 rows: 3 pass"
    )


def test_slower_than_the_base_beyond_the_threshold_is_a_regression(screen):
    v, gate = screen
    write_ab(gate, [(1.10, 1.0), (1.09, 1.0), (1.20, 1.0)])  # +10 %, +9 %, +20 %: median +10 %
    out = judge_ab(v, gate)
    r = row(out)
    assert r.verdict is Verdict.REGRESSION and not r.ab.inherited
    assert r.ab.change == pytest.approx(0.10) and "slower than the base: +10.0 %" in r.reason
    assert out.verdict == "FAIL" and out.exit_code == 1
    assert r.ratio == pytest.approx(1 / 1.10)  # the screen's number stays for the reports


def test_a_slowdown_within_the_paired_threshold_passes(screen):
    v, gate = screen
    write_ab(gate, [(1.02, 1.0), (1.025, 1.0), (1.01, 1.0)], threshold=0.03)
    out = judge_ab(v, gate)
    assert row(out).verdict is Verdict.PASS and out.exit_code == 0


def test_an_ops_paired_threshold_in_the_thresholds_file_replaces_the_default(screen):
    v, gate = screen
    write_ab(gate, [(1.10, 1.0)] * 3, threshold=0.03)  # +10 % vs the base in every round
    assert row(judge_ab(v, gate)).verdict is Verdict.REGRESSION
    wide = v.model_copy(
        update={"thresholds": v.thresholds.model_copy(update={"paired_ops": {"x": 0.12}})}
    )
    r = row(judge_ab(wide, gate))
    assert r.verdict is Verdict.PASS and r.ab.threshold == 0.12  # the report shows its limit
    other = v.model_copy(
        update={"thresholds": v.thresholds.model_copy(update={"paired_ops": {"y": 0.12}})}
    )
    assert row(judge_ab(other, gate)).verdict is Verdict.REGRESSION  # only that op's rows


def test_a_paired_threshold_out_of_range_is_one_line(tmp_path):
    from zlbench.models import ThresholdDefaults

    bad = tmp_path / "th.yaml"
    bad.write_text("schema_version: 1\npaired_ops: {var_mean: 1.5}\n")
    with pytest.raises(ZlbenchError, match=r"field 'paired_ops.var_mean': 1.5 is not in \[0, 1\)"):
        load_thresholds(bad, ThresholdDefaults())


def test_one_disturbed_round_does_not_decide(screen):
    v, gate = screen
    write_ab(gate, [(1.0, 1.0), (1.5, 1.0), (1.0, 1.0)])
    assert judge_ab(v, gate).exit_code == 0


def test_rows_the_screen_passed_are_judged_on_the_ab_too(screen):
    v, gate = screen
    root = gate / AB_DIR
    write_ab(gate, [(1.0, 1.0)] * 3)
    for i in (1, 2, 3):  # x at T: the PR 8 % slower than the base in every round
        pr = {"x": [rows(1.0)["x"][0], crow("x", T, 1 / 1.08, lat=1.08, torch_lat=1.0)]}
        write_batch(root / str(i) / "pr", pr)
    out = judge_ab(v, gate)
    assert row(out, shape=T).verdict is Verdict.REGRESSION and out.exit_code == 1


def test_full_ab_reports_improvements_against_the_base(screen):
    v, gate = screen
    write_ab(gate, [(0.9, 1.0)] * 3, mode="full")
    assert row(judge_ab(v, gate)).verdict is Verdict.IMPROVEMENT


def test_a_row_the_base_did_not_measure_keeps_its_screen_verdict(screen):
    v, gate = screen
    write_ab(gate, [(1.10, 1.10)])
    write_batch(gate / AB_DIR / "1" / "base", {"x": [rows(1.0)["x"][1]]})  # only shape T
    r = row(judge_ab(v, gate))
    assert r.verdict is Verdict.REGRESSION and "the base did not measure it" in r.reason


def test_a_base_that_measured_nothing_is_an_error(screen):
    v, gate = screen
    write_ab(gate, [(1.10, 1.10)])
    shutil.rmtree(gate / AB_DIR / "1" / "base")
    write_results(gate / AB_DIR / "1" / "base", [])
    with pytest.raises(ZlbenchError, match="measured no row"):
        judge_ab(v, gate)


def test_a_base_with_another_flaggems_commit_is_an_error(screen):
    v, gate = screen
    other = ENV.model_copy(update={"flaggems_commit": "0" * 40})
    write_ab(gate, [(1.10, 1.10)], env=other)
    with pytest.raises(ZlbenchError, match="flaggems_commit .* an A/B may differ in the compiler"):
        judge_ab(v, gate)


def test_only_the_compiler_may_differ_between_sides():
    other = ENV.model_copy(update={"triton_version": "9.9", "flagtree_commit": "x"})
    assert side_mismatch([ENV], [other]) == ""
    assert "torch" in side_mismatch([ENV], [ENV.model_copy(update={"torch": "2.0"})])


def test_no_ab_dir_leaves_the_verdict_alone(screen):
    v, gate = screen
    assert judge_ab(v, gate) is v


def test_restating_unchanged_rows_reproduces_the_judge(screen):
    v, _ = screen
    again = restate(v, list(v.rows))
    assert again.model_dump() == v.model_dump()


@pytest.mark.parametrize("full", [True, False])
def test_full_ab_reuses_the_screen_as_round_1s_pr_side_suspects_never(screen, full):
    """Full mode measures every op the screen just measured with the PR's compiler:
    measuring them again would add a whole screen. Suspects were picked by the screen
    (selection bias), so they are always measured again."""
    from zlbench.runner.ab.env import CompilerEnv
    from zlbench.workflow.ab import FIRST_PR_NOTE, AbContext, AbOptions, measure_ab

    v, gate = screen
    calls = []

    def measure(env, ops, out):
        calls.append(out.relative_to(gate / AB_DIR).as_posix())
        side = "base" if env.spec == "/envs/base" else "pr"
        return write_batch(out, {"x": rows(1.10 if side == "pr" else 1.0)["x"]})

    ctx = AbContext(AbOptions(base_compiler="/envs/base", full=full, rounds=2))
    ctx.base = CompilerEnv("/envs/base")
    ctx.pr_id, ctx.base_id = AbCompiler(path="/pr/triton"), AbCompiler(path="/envs/base/triton")
    summary = measure_ab(ctx, v, gate, measure)
    if full:
        assert calls == ["1/base", "2/pr", "2/base"] and summary.note == FIRST_PR_NOTE
        assert (gate / AB_DIR / "1" / "pr" / "main" / "x").is_dir()
    else:
        assert calls == ["1/pr", "1/base", "2/pr", "2/base"] and summary.note == ""
    judged = judge_ab(v, gate)
    assert [r.verdict for r in judged.rows if r.key.run_name == "x" and r.key.shape == S] == [
        Verdict.REGRESSION
    ]
    from zlbench.report.ab import render_ab_section

    assert (FIRST_PR_NOTE in render_ab_section(judged)) is full
