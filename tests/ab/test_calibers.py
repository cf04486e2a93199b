"""Calibers (docs/judging.md "Calibers"): the records check of `zlbench compare`, the
refusals of `zlbench ab` before anything is measured, and its report (pure; the
measured ends are tests/ab/test_calibers_e2e.py)."""

from __future__ import annotations

import json

import pytest

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import AbCompiler, AbSummary, PairedRow, RowKey
from zlbench.report.ab import AbRun, AbRunCaliber, render_ab_run
from zlbench.report.compare import RecordsCheck, caliber_lines, check_records, winners_diff
from zlbench.runner.ab.env import parse_env_vars
from zlbench.runner.ab.records import OpRecords, op_records
from zlbench.workflow.ab_run import AbRunJob, check_ab_job, check_sides_differ

S = "[1024]"
WIN_A = {"k:softmax_kernel": {'[8,"torch.float32"]': {"kwargs": {"BLOCK_N": 32}}}}
WIN_B = {"k:softmax_kernel": {'[8,"torch.float32"]': {"kwargs": {"BLOCK_N": 128}}}}


def recorded(tmp_path, name, winners, mode="record", replay_from=None, flagtune=None):
    """A batch dir of op add whose run recorded ``winners`` (record mode) or replayed
    ``replay_from`` (replay mode)."""
    env = run_result("add", []).environment.model_copy(update={"use_flagtune": flagtune})
    res = run_result("add", [crow("add", S, 1.0)], replay_from=replay_from, env=env)
    res.mode = mode
    root = write_results(tmp_path / name, [res])
    if winners is not None:
        d = root / "main" / "add" / "autotune_records"
        d.mkdir(parents=True)
        (d / "add.json").write_text(json.dumps(winners))
    return root


# ---------------------------------------------------------------- env vars and refusals


def test_env_vars_parse_and_bad_names_are_refused():
    assert parse_env_vars(["USE_FLAGTUNE=1", "X_2=a=b", "E="], "--env-b") == {
        "USE_FLAGTUNE": "1",
        "X_2": "a=b",
        "E": "",
    }
    for bad in ("1X=1", "A-B=1", "=1", "NOEQ", "É=1"):
        with pytest.raises(ZlbenchError, match="--env-a"):
            parse_env_vars([bad], "--env-a")


def test_zlbench_ab_refuses_a_bad_env_name_in_one_line(tmp_path, capsys):
    rc = main(["ab", "--ops", "add", "--env-b", "USE-FLAGTUNE=1", "--out", str(tmp_path / "o")])
    assert rc == 2
    line = one_error_line(capsys)
    assert line.startswith("zlbench ab: error: --env-b 'USE-FLAGTUNE=1'")
    assert not (tmp_path / "o").exists()


def job(tmp_path, **kw) -> AbRunJob:
    return AbRunJob(config=None, out=tmp_path / "o", **kw)  # type: ignore[arg-type]


def test_own_best_needs_a_place_to_record_and_no_records_to_replay(tmp_path):
    with pytest.raises(ZlbenchError, match="own-best records autotune winners first: name"):
        check_ab_job(job(tmp_path, caliber="own-best", out_given=False))
    with pytest.raises(ZlbenchError, match="pinned without --records records"):
        check_ab_job(job(tmp_path, caliber="pinned", out_given=False))
    with pytest.raises(ZlbenchError, match="tunes each side fresh: --records"):
        check_ab_job(job(tmp_path, caliber="own-best", records=tmp_path))
    check_ab_job(job(tmp_path, caliber="pinned", records=tmp_path, out_given=False))  # fine


def test_sides_alike_are_refused_unless_declared_an_a_a():
    said = []
    c = AbCompiler(env="(this environment)", path="/site/triton")
    alike = AbRunJob(config=None, out=None, env_a={"X": "1"}, env_b={"X": "1"})  # type: ignore[arg-type]
    with pytest.raises(ZlbenchError, match="tests no switch .* --aa for an A/A on purpose"):
        check_sides_differ(alike, c, c, said.append)
    alike.aa = True
    check_sides_differ(alike, c, c, said.append)
    assert said and "warning: an A/A on purpose" in said[0]
    switch = AbRunJob(config=None, out=None, env_b={"X": "1"}, aa=True)  # type: ignore[arg-type]
    with pytest.raises(ZlbenchError, match="--aa declares an A/A, but the sides differ"):
        check_sides_differ(switch, c, c, said.append)
    switch.aa = False
    check_sides_differ(switch, c, c, said.append)  # an env switch on one compiler: measured
    other = AbCompiler(env="base-site", path="/base/triton")
    compilers = AbRunJob(config=None, out=None, base_compiler="base-site")  # type: ignore[arg-type]
    check_sides_differ(compilers, other, c, said.append)  # two compilers, no variables


def test_an_ab_json_written_before_calibers_loads_as_pinned():
    old = {"mode": "changed", "rounds": 1, "threshold": 0.03, "method": "interleaved"}
    s = AbSummary.model_validate_json(json.dumps(old))
    assert s.caliber == "pinned" and s.env_vars == {} and s.records == {} and not s.aa
    with pytest.raises(ValueError, match="is not a side"):
        AbSummary.model_validate({**old, "env_vars": {"a": {"X": "1"}}})


# ---------------------------------------------------------------- the records check


def test_check_records_tells_pinned_own_best_unverified_and_the_tuning_space():
    a = {"main/add": OpRecords("record", "/r/a", WIN_A)}
    same_dir = {"main/add": OpRecords("replay", "/r/a", None)}
    copy = {"main/add": OpRecords("replay", "/elsewhere", WIN_A)}
    own = {"main/add": OpRecords("record", "/r/b", WIN_B)}
    other = {"main/add": OpRecords("replay", "/r/b", WIN_B)}
    lost = {"main/add": OpRecords("replay", "/gone", None)}
    assert check_records(a, same_dir).caliber == "pinned"
    assert check_records(a, copy).caliber == "pinned"
    for b in (own, other):
        c = check_records(a, b)
        assert c.caliber == "own-best" and c.mismatch and c.own == ["main/add"]
        assert [(d.kernel, d.a, d.b) for d in c.diffs] == [
            ("k:softmax_kernel", {"kwargs": {"BLOCK_N": 32}}, {"kwargs": {"BLOCK_N": 128}})
        ]
    c = check_records(a, lost)
    assert c.caliber == "mixed" and c.unverified == ["main/add"]
    space = {"main/add": OpRecords("replay", "/r/a", None, use_flagtune="1")}
    c = check_records(a, space)
    assert c.caliber == "pinned" and c.mismatch and c.space == ["main/add: USE_FLAGTUNE 0 vs 1"]
    assert caliber_lines(c) == [
        "caliber: pinned: B replayed A's autotune records for all 1 op(s) (compared by records "
        "dir, else content); but the tuning space differs: main/add: USE\\_FLAGTUNE 0 vs 1"
    ]


def test_versioned_and_bare_records_files_read_alike(tmp_path):
    a = recorded(
        tmp_path, "a", {"kind": "autotune_record_set", "schema_version": 1, "kernels": WIN_A}
    )
    bare = recorded(tmp_path, "bare", WIN_A)  # written before records were versioned
    copy = bare / "main" / "add" / "autotune_records"
    b = recorded(tmp_path, "b", None, mode="replay", replay_from=str(copy))
    assert op_records(a)["main/add"].records == WIN_A == op_records(bare)["main/add"].records
    assert check_records(op_records(a), op_records(b)).caliber == "pinned"  # same content
    gone = recorded(tmp_path, "c", None, mode="replay", replay_from=str(tmp_path / "gone"))
    assert check_records(op_records(a), op_records(gone)).unverified == ["main/add"]


def test_winners_diff_counts_a_key_one_side_lacks():
    diffs = winners_diff("op", WIN_A, {})
    assert len(diffs) == 1 and diffs[0].b is None and diffs[0].a == {"kwargs": {"BLOCK_N": 32}}


def test_compare_says_in_its_first_line_that_b_did_not_replay_a_s_records(tmp_path, capsys):
    a = recorded(tmp_path, "a", WIN_A)
    b_own = recorded(tmp_path, "b", WIN_B)
    assert main(["compare", str(a), str(b_own)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("caliber: own-best: B did NOT replay A's autotune records for 1 of 1")
    assert "B ran with its own winners: main/add; 1 winner(s) differ" in out[1]
    text = "\n".join(out)
    assert "Winners that differ (A vs B):" in text and "`BLOCK_N=32`" in text
    assert "`BLOCK_N=128`" in text
    rc = main(["compare", str(a), str(b_own), "--caliber", "pinned"])
    assert rc == 2
    line = one_error_line(capsys)
    assert line.startswith("zlbench compare: error: --caliber pinned: caliber: own-best: B did NOT")


def test_compare_of_b_replaying_a_s_records_says_pinned(tmp_path, capsys):
    a = recorded(tmp_path, "a", WIN_A)
    rec = a / "main" / "add" / "autotune_records"
    b = recorded(tmp_path, "b", None, mode="replay", replay_from=str(rec))
    assert main(["compare", str(a), str(b), "--caliber", "pinned"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("caliber: pinned: B replayed A's autotune records for all 1 op(s)")
    assert op_records(b)["main/add"].records == WIN_A
    b2 = recorded(tmp_path, "b2", None, mode="replay", replay_from=str(rec), flagtune="1")
    assert main(["compare", str(a), str(b2)]) == 0
    out = capsys.readouterr().out
    assert "but the tuning space differs: main/add: USE\\_FLAGTUNE 0 vs 1" in out.splitlines()[0]
    assert main(["compare", str(a), str(b2), "--caliber", "pinned"]) == 2
    assert "tuning space differs" in one_error_line(capsys)


def test_compare_of_a_baseline_checks_the_records_it_ships(tmp_path, capsys):
    from tests.support.zlsynth import brow, write_baseline

    bl = tmp_path / "bl"
    (bl / "main" / "add" / "autotune_records").mkdir(parents=True)
    (bl / "main" / "add" / "autotune_records" / "add.json").write_text(json.dumps(WIN_A))
    write_baseline(bl, {"add": [brow("add", S, 1.0)]})
    recs = op_records(bl)
    assert recs["main/add"].mode == "baseline" and recs["main/add"].records == WIN_A


# ---------------------------------------------------------------- the report


def row(change: float, decision: str, pairs: int = 5) -> PairedRow:
    return PairedRow(
        rounds=pairs, change=change, change_lo=change - 0.01, change_hi=change + 0.01,
        delta_us=change * 10, delta_lo_us=change * 9, delta_hi_us=change * 11,
        decision=decision, ratio=1 / (1 + change),
    )  # fmt: skip


KEY = RowKey(repo="main", run_name="softmax", op="softmax", dtype="float32", shape="[4, 8]")


def caliber(name: str, change: float, decision: str, check: RecordsCheck) -> AbRunCaliber:
    s = AbSummary(
        mode="full", rounds=1, threshold=0.03, floor_us=0.2, ops=["main/softmax"],
        method="interleaved", caliber=name, env_vars={"pr": {"USE_FLAGTUNE": "1"}},
        records={"base": "out/records/a", "pr": "out/records/b"}, min_pairs=5, max_pairs=16,
    )  # fmt: skip
    return AbRunCaliber(summary=s, rows={KEY: row(change, decision)}, records=check)


def test_the_own_best_report_names_its_caliber_the_winners_and_the_pinned_number():
    a = {"main/softmax": OpRecords("replay", "/r/a", WIN_A)}
    b = {"main/softmax": OpRecords("replay", "/r/b", WIN_B)}
    own = caliber("own-best", 0.4, "REGRESSION", check_records(a, b))
    pinned = caliber("pinned", 0.0, "PASS", check_records(a, a))
    run = AbRun(own, pinned)
    text = render_ab_run(run)
    lines = text.splitlines()
    assert lines[0] == "# zlbench ab: B vs A, caliber own-best"
    assert lines[2].startswith("caliber own-best: each side tuned fresh into its own records")
    assert lines[3].startswith("verdict: FAIL: 1 REGRESSION, 0 INCONCLUSIVE")
    assert lines[4].startswith("caliber: own-best: B did NOT replay A's autotune records")
    assert any(
        ln.startswith("pinned caliber (B replaying A's records): 0 REGRESSION") for ln in lines
    )
    assert "`USE_FLAGTUNE=1`" in text and "caliber own-best: 1 op measured" in text
    assert "| B vs A, own-best [interval] | B vs A, pinned [interval] |" in text
    assert "REGRESSION: +40.0 %" in text and "PASS: +0.0 %" in text
    assert "## Winners that differ (A vs B): 1" in text and "`BLOCK_N=128`" in text
    assert run.exit_code == 1
    assert AbRun(pinned).exit_code == 0
    assert "Winners that differ" not in render_ab_run(AbRun(pinned))


# ---------------------------------------------------------------- own-best, winners alike


def test_own_best_winners_that_are_identical_are_said_so_and_never_called_pinned():
    # the H200's softmax USE_FLAGTUNE 0 vs 1 (issue 30): both sides tuned fresh, same winners
    a = {"main/softmax": OpRecords("replay", "/o/records/a/main/softmax", WIN_A, "0")}
    b = {"main/softmax": OpRecords("replay", "/o/records/b/main/softmax", WIN_A, "1")}
    assert check_records(a, b).caliber == "pinned"  # `zlbench compare`: B replayed A's content
    c = check_records(a, b, own_best=True)
    assert c.caliber == "own-best" and c.identical == ["main/softmax"] and not c.pinned
    assert not c.diffs
    (line,) = caliber_lines(c)
    assert line.startswith(
        "caliber: own-best: the two sides' own winners are identical for all 1 op(s)"
    )
    assert (
        "pinned" not in line and "tuning space differs: main/softmax: USE\\_FLAGTUNE 0 vs 1" in line
    )
    run = AbRun(caliber("own-best", 0.0, "PASS", c))
    text = render_ab_run(run)
    assert text.splitlines()[4] == line and "caliber: pinned" not in text
    assert "Winners that differ" not in text
    # differing winners of an own-best run: the table of them, as before
    other = {"main/softmax": OpRecords("replay", "/o/records/b/main/softmax", WIN_B, "1")}
    d = check_records(a, other, own_best=True)
    assert d.caliber == "own-best" and not d.identical and len(d.diffs) == 1
    assert "## Winners that differ (A vs B): 1" in render_ab_run(
        AbRun(caliber("own-best", 0, "PASS", d))
    )


def test_a_record_side_with_a_s_winners_is_identical_in_compare_too(tmp_path, capsys):
    a = recorded(tmp_path, "a", WIN_A)
    b = recorded(tmp_path, "b", WIN_A)  # B tuned fresh and found A's winners
    c = check_records(op_records(a), op_records(b))
    assert c.caliber == "own-best" and c.identical == ["main/add"]
    assert main(["compare", str(a), str(b)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("caliber: own-best: the two sides' own winners are identical for all 1")


def test_zlbench_ab_checks_an_own_best_run_s_records_as_own_winners(tmp_path):
    from zlbench.workflow.ab_run import records_check

    rec_a = recorded(tmp_path, "rec_a", WIN_A) / "main" / "add" / "autotune_records"
    rec_b = recorded(tmp_path, "rec_b", WIN_A) / "main" / "add" / "autotune_records"
    base = recorded(tmp_path, "base", None, mode="replay", replay_from=str(rec_a))
    pr = recorded(tmp_path, "pr", None, mode="replay", replay_from=str(rec_b), flagtune="1")
    own = records_check("own-best", base, pr)
    assert own.caliber == "own-best" and own.identical == ["main/add"]
    assert records_check("pinned", base, pr).caliber == "pinned"  # same content, pinned asked


def test_an_env_switch_on_one_compiler_is_measured_by_both_sides():
    c = AbCompiler(env="(this environment)", dist="triton", version="3.6.0", path="/site/triton")
    check = check_records({}, {})
    one = caliber("own-best", 0.0, "PASS", check)
    one.summary.pr, one.summary.base = c, c
    text = render_ab_run(AbRun(one))
    assert "1 op measured by both sides at once" in text and "both compilers" not in text
    two = caliber("own-best", 0.0, "PASS", check)
    two.summary.pr, two.summary.base = c, c.model_copy(update={"path": "/base/triton"})
    assert "1 op measured by both compilers at once" in render_ab_run(AbRun(two))
