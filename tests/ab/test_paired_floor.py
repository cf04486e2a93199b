"""The paired floor: a row is a REGRESSION against the base only when it is slower
beyond the relative paired threshold AND by more than the floor in µs per call
(docs/thresholds.md); within the floor it passes with a reason that says so. Judged
through ``zlbench gate --results <gate dir with ab/>`` as CI does, plus the pure rule."""

from __future__ import annotations

import json
import math

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.paired import (
    DEFAULT_PAIRED_THRESHOLD,
    judge_paired,
    pair_rounds,
)
from zlbench.models import (
    AbCompiler,
    AbSummary,
    GateVerdict,
    RowVerdict,
    Verdict,
    load_json_model,
)
from zlbench.report.ab import render_ab_section
from zlbench.runner.ab.rounds import AB_DIR, AB_FILE, write_summary
from zlbench.workflow.ab import AbOptions, prepare

S = "[1024]"
# op -> (base µs, PR µs) of every A/B round: +18 % (+0.18 µs), +3.5 % (+3.5 µs),
# +12 % (+0.36 µs) slower than the base.
SLOWER = {"tiny": (1.0, 1.18), "big": (100.0, 103.5), "small": (3.0, 3.36)}
# The same, faster: -15 % (-0.15 µs), -3.5 % (-3.5 µs), -12 % (-0.36 µs).
FASTER = {"tiny": (1.0, 0.85), "big": (100.0, 96.5), "small": (3.0, 2.64)}


def batch(root, lat_us: dict[str, float], torch_us: dict[str, float]):
    runs = [
        run_result(
            op, [crow(op, S, torch_us[op] / us, lat=us / 1000, torch_lat=torch_us[op] / 1000)]
        )
        for op, us in lat_us.items()
    ]
    return write_results(root, runs)


def one_round(op: str, base_us: float, pr_us: float):
    """``op``'s row key and its PairedRow of one A/B round at these latencies."""
    k = crow(op, S, 1.0).key("main", op)
    pr, base = crow(op, S, 1.0, lat=pr_us / 1000), crow(op, S, 1.0, lat=base_us / 1000)
    return k, pair_rounds([({k: pr}, {k: base})])[k]


def gate_dir(tmp_path, rounds, *, screen=1.10, mode="suspects", rounds_n=1, floor_us=0.3):
    """Baseline: every op at its base µs. A gate dir whose screen has every op
    ``screen`` times slower (1.10: all suspects) and whose A/B has ``rounds``' (base,
    PR) µs in each of ``rounds_n`` rounds; ab.json records ``floor_us`` (None: an
    ab.json written before the floor existed, without the key)."""
    base_us = {op: b for op, (b, _) in rounds.items()}
    bl = write_baseline(
        tmp_path / "bl", {op: [brow(op, S, 1.0, lat=b / 1000)] for op, b in base_us.items()}
    )
    gate = tmp_path / "gate"
    batch(gate / "results", {op: b * screen for op, b in base_us.items()}, base_us)
    for i in range(1, rounds_n + 1):
        batch(gate / AB_DIR / str(i) / "pr", {op: p for op, (_, p) in rounds.items()}, base_us)
        batch(gate / AB_DIR / str(i) / "base", base_us, base_us)
    summary = AbSummary(
        mode=mode,
        rounds=rounds_n,
        order=["pr", "base"] * rounds_n,
        threshold=DEFAULT_PAIRED_THRESHOLD,
        floor_us=floor_us or 0.0,
        ops=[f"main/{op}" for op in rounds],
        pr=AbCompiler(env="pr", path="/pr/triton"),
        base=AbCompiler(env="/envs/base", path="/envs/base/triton"),
    )
    write_summary(gate / AB_DIR, summary)
    if floor_us is None:
        data = json.loads((gate / AB_DIR / AB_FILE).read_text())
        del data["floor_us"]
        (gate / AB_DIR / AB_FILE).write_text(json.dumps(data))
    return bl, gate


def judge(tmp_path, bl, gate, *extra: str) -> tuple[int, GateVerdict, str]:
    """``zlbench gate --results <gate dir>``: exit code, verdict.json, report.md."""
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out), *extra])
    return rc, load_json_model(out / "verdict.json", GateVerdict), (out / "report.md").read_text()


def by_op(v: GateVerdict) -> dict[str, tuple[Verdict, str]]:
    return {r.key.op: (r.verdict, r.reason) for r in v.rows}


def test_full_ab_a_1us_row_18_percent_slower_passes_within_the_floor_and_says_so(tmp_path):
    bl, gate = gate_dir(tmp_path, SLOWER, screen=1.0, mode="full")
    rc, v, _ = judge(tmp_path, bl, gate)
    verdict, reason = by_op(v)["tiny"]
    assert verdict is Verdict.PASS
    assert reason == (
        "within the 0.3 µs floor: +18.0 % vs the base is +0.18 µs (median of 1 paired round)"
    )
    row = next(r for r in v.rows if r.key.op == "tiny")
    assert row.ab.delta_us == pytest.approx(0.18) and row.ab.floor_us == 0.3
    assert rc == 1  # big and small regress


def test_a_100us_row_3_5_percent_slower_and_a_3us_row_12_percent_slower_regress(tmp_path):
    bl, gate = gate_dir(tmp_path, SLOWER)
    rc, v, _ = judge(tmp_path, bl, gate)
    got = by_op(v)
    assert got["big"] == (
        Verdict.REGRESSION,
        "slower than the base: +3.5 % (+3.50 µs) vs the base (median of 1 paired round)",
    )
    assert got["small"][0] is Verdict.REGRESSION and "+12.0 % (+0.36 µs)" in got["small"][1]
    assert rc == 1 and v.verdict == "FAIL"


def test_a_suspect_within_the_floor_is_inherited_and_names_the_floor(tmp_path):
    bl, gate = gate_dir(tmp_path, {"tiny": SLOWER["tiny"]})
    rc, v, _ = judge(tmp_path, bl, gate)
    verdict, reason = by_op(v)["tiny"]
    assert verdict is Verdict.PASS and rc == 0
    assert reason.startswith("inherited from the base (baseline vtest is stale here)")
    assert reason.endswith(
        "+18.0 % (+0.18 µs) vs the base (median of 1 paired round), within the 0.3 µs floor"
    )


def test_floor_0_is_the_relative_threshold_alone(tmp_path):
    bl, gate = gate_dir(tmp_path, SLOWER, floor_us=0.0)
    rc, v, _ = judge(tmp_path, bl, gate)
    assert {op: x[0] for op, x in by_op(v).items()} == dict.fromkeys(SLOWER, Verdict.REGRESSION)
    assert "floor" not in by_op(v)["tiny"][1]


def test_an_ab_json_without_a_floor_is_judged_as_before_it_floor_0(tmp_path):
    bl, gate = gate_dir(tmp_path, SLOWER, floor_us=None)
    assert "floor_us" not in json.loads((gate / AB_DIR / AB_FILE).read_text())
    rc, v, md = judge(tmp_path, bl, gate)
    assert by_op(v)["tiny"][0] is Verdict.REGRESSION and v.ab.floor_us == 0.0
    assert "paired threshold 3.0 % (no µs floor)" in md


def test_full_ab_improvements_are_symmetric(tmp_path):
    bl, gate = gate_dir(tmp_path, FASTER, screen=1.0, mode="full")
    rc, v, _ = judge(tmp_path, bl, gate)
    got = by_op(v)
    assert got["tiny"] == (
        Verdict.PASS,
        "within the 0.3 µs floor: -15.0 % vs the base is -0.15 µs (median of 1 paired round)",
    )
    assert got["small"][0] is Verdict.IMPROVEMENT and got["big"][0] is Verdict.IMPROVEMENT
    assert got["small"][1] == (
        "faster than the base: -12.0 % (-0.36 µs) vs the base (median of 1 paired round)"
    )
    assert rc == 0


def test_the_absolute_change_is_the_median_of_the_rounds_differences():
    """Per round PR − base: +0.1, +0.5, +0.2 µs -> +0.2 (not the change of the medians)."""
    k = crow("x", S, 1.0).key("main", "x")

    def one(us):
        return {k: crow("x", S, 1.0, lat=us / 1000)}

    rounds = [(one(1.1), one(1.0)), (one(1.5), one(1.0)), (one(3.2), one(3.0))]
    p = pair_rounds(rounds)[k]
    assert p.delta_us == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("base_us", "pr_us", "floor", "expected"),
    [
        (1.0, 1.18, 0.3, Verdict.PASS),  # +18 %, +0.18 µs: within the floor
        (100.0, 103.5, 0.3, Verdict.REGRESSION),  # +3.5 %, +3.5 µs
        (3.0, 3.36, 0.3, Verdict.REGRESSION),  # +12 %, +0.36 µs
        (1.0, 1.18, 0.0, Verdict.REGRESSION),  # no floor
        (100.0, 102.5, 0.3, Verdict.PASS),  # +2.5 %: within the threshold, whatever the µs
    ],
)
def test_a_regression_is_beyond_the_threshold_and_the_floor(base_us, pr_us, floor, expected):
    k, p = one_round("x", base_us, pr_us)
    row = RowVerdict(key=k, verdict=Verdict.PASS, ratio=1.0, judged_change=0.0)
    got = judge_paired(row, p, 0.03, "vtest", full=False, floor_us=floor)
    assert got.verdict is expected and got.ab.floor_us == floor


def test_the_report_states_the_floor_and_each_rows_absolute_change(tmp_path):
    bl, gate = gate_dir(tmp_path, SLOWER, screen=1.0, mode="full")
    _, _, md = judge(tmp_path, bl, gate)
    assert "paired threshold 3.0 % and 0.3 µs" in md
    assert "+18.0 % (+0.18 µs, 1 round)" in md and "within the 0.3 µs floor" in md
    assert "+3.5 % (+3.50 µs, 1 round)" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>A/B against the base compiler</h2>" in html
    assert "paired threshold 3.0 % and 0.3 µs: a row is a REGRESSION" in html
    assert "within the 0.3 µs floor: +18.0 % vs the base is +0.18 µs" in html  # its reason


def test_a_thresholds_file_paired_ops_entry_sets_its_ops_relative_threshold(tmp_path):
    """small, +12 % (+0.36 µs): beyond the floor, within its own 15 %; the others keep 3 %."""
    bl, gate = gate_dir(tmp_path, SLOWER)
    y = tmp_path / "th.yaml"
    y.write_text("paired_ops:\n  small: 0.15\n")
    rc, v, md = judge(tmp_path, bl, gate, "--thresholds", str(y))
    got = {r.key.op: (r.verdict, r.ab.threshold) for r in v.rows}
    assert got["small"] == (Verdict.PASS, 0.15)
    assert got["big"] == (Verdict.REGRESSION, DEFAULT_PAIRED_THRESHOLD)
    assert v.thresholds.paired_ops == {"small": 0.15}  # the file's entries only
    assert "- paired\\_ops.small: 0.15 \\(A/B against the base\\)" in md
    assert rc == 1


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("-1", "--ab-floor-us -1: must be at least 0 (0 = no floor)"),
        ("nan", "--ab-floor-us nan: must be a finite number"),
        ("inf", "--ab-floor-us inf: must be a finite number"),
    ],
)
def test_a_bad_ab_floor_is_one_line_exit_2(tmp_path, capsys, bad, said):
    bl, gate = gate_dir(tmp_path, SLOWER)
    out = tmp_path / "out"
    args = ["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out)]
    assert main([*args, "--ab-floor-us", bad]) == 2
    assert one_error_line(capsys).endswith(said)
    assert not out.exists()


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_the_ab_options_refuse_a_bad_floor(bad):
    """The workflow's own check, for callers that build AbOptions without the CLI."""
    with pytest.raises(ZlbenchError, match=r"--ab-floor-us must be a finite number >= 0"):
        prepare(AbOptions(floor_us=bad), measuring=False)


def test_gate_help_states_both_paired_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # the interleaved A/B's defaults (PairRule), which the measuring gate pairs by
    assert "paired threshold vs the base (default 0.03;" in text
    assert "--ab-floor-us F" in text and "(default 0.2; 0: none;" in text
    assert text.count("gate --results: its recorded one unless given") == 2


def two_row_op(tmp_path, lat: dict[str, tuple[float, float]]):
    """A full A/B gate dir of one op ``op`` whose rows (shape -> (base µs, PR µs)) the
    screen and the A/B's PR side measured at PR µs, the base at base µs; 3 %, 0.3 µs."""
    bl = write_baseline(
        tmp_path / "bl", {"op": [brow("op", s, 1.0, lat=b / 1000) for s, (b, _) in lat.items()]}
    )

    def side(root, which):
        rows = [
            crow("op", s, 1.0, lat=v[which] / 1000, torch_lat=v[0] / 1000) for s, v in lat.items()
        ]
        write_results(root, [run_result("op", rows)])

    gate = tmp_path / "gate"
    side(gate / "results", 1)
    side(gate / AB_DIR / "1" / "pr", 1)
    side(gate / AB_DIR / "1" / "base", 0)
    summary = AbSummary(mode="full", rounds=1, order=["pr", "base"], threshold=0.03, floor_us=0.3)
    summary.ops, summary.pr, summary.base = (
        ["main/op"],
        AbCompiler(env="pr", path="/pr/triton"),
        AbCompiler(env="b", path="/b/triton"),
    )
    write_summary(gate / AB_DIR, summary)
    return bl, gate, summary


def test_an_op_of_two_1us_rows_within_the_floor_passes_its_geomean_too(tmp_path):
    """embedding has two ~1 µs rows: both +18 % (+0.18 µs) in one gate must not fail
    the op through its geomean (+18 % < -3 %) when every row passed by the floor."""
    bl, gate, summary = two_row_op(tmp_path, {S: (1.0, 1.18), "[2048]": (1.0, 1.18)})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert [r.verdict for r in v.rows] == [Verdict.PASS, Verdict.PASS]
    assert v.ops[0].verdict is Verdict.PASS and rc == 0
    # the same rows without the floor: the rows and the op regress
    summary.floor_us = 0.0
    write_summary(gate / AB_DIR, summary)
    rc, v, _ = judge(tmp_path, bl, gate)
    assert v.ops[0].verdict is Verdict.REGRESSION and rc == 1


def test_an_op_whose_rows_pass_by_threshold_and_by_floor_passes(tmp_path):
    """One op, two rows: 100 -> 102.5 µs (+2.5 %, within 3 %) and 1.0 -> 1.18 µs (+18 %,
    within the floor). Both rows pass; the op's paired geomean counts the floor-passed row
    as unchanged, so the op passes too (without that: geomean 0.909 < 0.970)."""
    bl, gate, _ = two_row_op(tmp_path, {S: (100.0, 102.5), "[2048]": (1.0, 1.18)})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert [r.verdict for r in v.rows] == [Verdict.PASS, Verdict.PASS]
    assert [r.ab.within_floor for r in v.rows] == [False, True]
    assert v.ops[0].verdict is Verdict.PASS and rc == 0


def test_an_op_of_two_100us_rows_beyond_3_percent_fails_on_its_paired_geomean(tmp_path):
    """100 -> 102.5 µs and 100 -> 104 µs: deltas far beyond the floor, so the floor counts
    nothing as unchanged and the paired geomean (0.969 < 0.970) fails the op; its reason
    names the paired geomean and threshold, not the screen's numbers."""
    bl, gate, _ = two_row_op(tmp_path, {S: (100.0, 102.5), "[2048]": (100.0, 104.0)})
    rc, v, _ = judge(tmp_path, bl, gate)
    assert [r.verdict for r in v.rows] == [Verdict.PASS, Verdict.REGRESSION]
    assert not any(r.ab.within_floor for r in v.rows)
    op = v.ops[0]
    assert op.verdict is Verdict.REGRESSION and rc == 1
    assert op.reason == "1 row(s) REGRESSION; paired geomean ratio 0.969 < 0.970"


def test_an_op_regressing_on_its_ab_names_the_ab_not_the_screen(tmp_path):
    """The screen found every op 10 % slower; the A/B judges big +3.5 %: its op's reason
    comes from the A/B's rows, not from the screen's numbers."""
    bl, gate = gate_dir(tmp_path, SLOWER)
    rc, v, _ = judge(tmp_path, bl, gate)
    op = next(o for o in v.ops if o.op == "big")
    assert rc == 1 and op.verdict is Verdict.REGRESSION and op.reason == "1 row(s) REGRESSION"


def test_a_row_not_judged_on_numbers_is_never_within_the_floor():
    k, p = one_round("x", 1.0, 1.18)
    row = RowVerdict(key=k, verdict=Verdict.FALLBACK, reason="fallback marker")
    got = judge_paired(row, p, 0.03, "vtest", full=False, floor_us=0.3)
    assert got.verdict is Verdict.FALLBACK and not got.ab.within_floor
    judged = judge_paired(
        row.model_copy(update={"verdict": Verdict.PASS}), p, 0.03, "v", False, 0.3
    )
    assert judged.ab.within_floor


def test_the_report_never_labels_a_fallback_row_within_the_floor(tmp_path):
    """tiny's A/B is +18 % (+0.18 µs), within the floor; as a FALLBACK row (not judged on
    numbers) the A/B table shows it without the note, as a judged row with it."""
    bl, gate = gate_dir(tmp_path, SLOWER, screen=1.0, mode="full")
    _, v, _ = judge(tmp_path, bl, gate)
    tiny = next(r for r in v.rows if r.key.op == "tiny")
    fallback = RowVerdict(key=tiny.key, verdict=Verdict.FALLBACK, reason="fallback marker")
    row = judge_paired(fallback, tiny.ab, 0.03, "vtest", full=True, floor_us=0.3)
    text = render_ab_section(v.model_copy(update={"rows": [row]}))
    assert "| FALLBACK |" in text and "+18.0 % (+0.18 µs, 1 round)" in text
    assert "within the" not in text
    assert "within the 0.3 µs floor" in render_ab_section(v.model_copy(update={"rows": [tiny]}))


def test_results_rejudged_with_a_given_floor_and_threshold_say_so(tmp_path):
    """An A/B recorded without a floor, re-judged with --ab-floor-us 0.3: tiny passes by
    the floor, and the verdict's A/B names what was recorded; --ab-threshold likewise."""
    bl, gate = gate_dir(tmp_path, SLOWER, floor_us=None)
    rc, v, _ = judge(tmp_path, bl, gate)
    assert by_op(v)["tiny"][0] is Verdict.REGRESSION and v.ab.floor_us == 0.0
    rc, v, md = judge(tmp_path, bl, gate, "--ab-floor-us", "0.3")
    assert by_op(v)["tiny"][0] is Verdict.PASS and v.ab.floor_us == 0.3
    assert "re-judged: recorded threshold 0.03, floor 0 µs" in v.ab.note and "re-judged" in md
    rc, v, _ = judge(tmp_path, bl, gate, "--ab-threshold", "0.2", "--ab-floor-us", "0.3")
    assert rc == 0 and v.ab.threshold == 0.2
    assert {op: verdict for op, (verdict, _) in by_op(v).items()} == dict.fromkeys(
        SLOWER, Verdict.PASS
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("floor_us", -1),
        ("floor_us", "NaN"),
        ("floor_us", "inf"),
        ("threshold", 2),
        ("threshold", "NaN"),
    ],
)
def test_a_bad_rule_in_ab_json_is_one_line_exit_2(tmp_path, capsys, field, value):
    bl, gate = gate_dir(tmp_path, SLOWER)
    data = json.loads((gate / AB_DIR / AB_FILE).read_text())
    data[field] = value
    (gate / AB_DIR / AB_FILE).write_text(json.dumps(data))
    out = tmp_path / "out"
    args = ["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out)]
    assert main(args) == 2
    assert AB_FILE in one_error_line(capsys)
    assert not out.exists() or not any(out.iterdir())  # nothing written
