"""A gate dir with a kernel replay (``replay/``) re-judged by ``zlbench gate --results``
(issue 51): the replayed op, which FlagGems never measured, is judged on its replay
pairs by the A/B's rule, and report.md says what timed each changed row; a replay
artifact that does not add up is refused with one line."""

from __future__ import annotations

import json

import pytest

from tests.support.interleaved import RULE, S, batch
from tests.support.zlsynth import brow, crow, gate, one_error_line, write_baseline
from zlbench.gate.replay import NO_LAUNCH
from zlbench.models import (
    LAUNCHES_JSON,
    AbCompiler,
    AbSummary,
    GateVerdict,
    PairedSamples,
    PairSample,
    PairsFile,
    ReplayedRow,
    ReplayRun,
    dump_json_model,
)
from zlbench.models.replay import LaunchCapture, RowLaunches
from zlbench.report.replay_text import NO_LAUNCH_CELL
from zlbench.runner.ab.rounds import AB_DIR, write_summary


def _samples(pr_us: float, base_us: float, n: int = 10) -> list[PairSample]:
    out = []
    for i in range(n):
        two = [PairSample(side="pr", ms=pr_us / 1000), PairSample(side="base", ms=base_us / 1000)]
        out += two if i % 2 == 0 else two[::-1]
    return out


BASE = {"x": [brow("x", S, 1.0, lat=0.1)], "softmax": [brow("softmax", S, 1.0, lat=0.01)]}


def _gate_dir(tmp_path, replay_pr_us: float, outputs: str = "match", x_replayed: bool = False,
              errors: tuple[float | None, float | None] = (None, None)):  # fmt: skip
    """Baseline ops x and softmax; the op path (an interleaved A/B) measured x only;
    the replay timed softmax's row (``x_replayed``: x's too, 2x slower: a family
    sentinel's row, which both instruments time)."""
    bl = write_baseline(tmp_path / "bl", BASE)
    g = tmp_path / "gate"
    batch(g / "results", {"x": 100.0})
    batch(g / AB_DIR / "1" / "base", {"x": 100.0})
    xkey = crow("x", S, 1.0).key("main", "x")
    dump_json_model(
        g / AB_DIR / "pairs.json",
        PairsFile(rows=[PairedSamples(key=xkey, samples=_samples(100.0, 100.0))]),
    )
    write_summary(
        g / AB_DIR,
        AbSummary(mode="changed", rounds=1, order=["pr", "base"], threshold=RULE.threshold,
                  floor_us=RULE.floor_us, ops=["main/x"],
                  pr=AbCompiler(env="(this environment)", path="/pr/triton"),
                  base=AbCompiler(env="/envs/base", path="/envs/base/triton"),
                  method="interleaved", pr_is_screen=True, sampling=RULE.sampling),
    )  # fmt: skip
    skey = crow("softmax", S, 1.0).key("main", "softmax")
    replayed = [skey, *([xkey] if x_replayed else [])]
    run = ReplayRun(
        changed_rows=len(replayed),
        rows=[
            ReplayedRow(
                key=k,
                instrument="kernel-replay",
                outputs=outputs,
                kernels=["k"],
                max_error=errors[0],
                base_spread=errors[1],
                base_runs=3 if outputs == "racy" else 0,
            )  # fmt: skip
            for k in replayed
        ],
    )
    dump_json_model(g / "replay" / "replay.json", run)
    pairs = [PairedSamples(key=skey, samples=_samples(replay_pr_us, 10.0))]
    pairs += [PairedSamples(key=xkey, samples=_samples(200.0, 100.0))] if x_replayed else []
    dump_json_model(g / "replay" / "pairs.json", PairsFile(rows=pairs))
    return bl, g


def test_a_replayed_regression_fails_the_gate_and_the_report_names_the_instrument(tmp_path):
    bl, g = _gate_dir(tmp_path, replay_pr_us=20.0)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    rows = {r.key.op: r for r in v.rows}
    assert rows["softmax"].verdict.value == "REGRESSION"
    assert rows["softmax"].ab.instrument == "kernel-replay"
    assert rows["x"].verdict.value == "PASS"
    assert "2 ops checked = 2 timed (1 failing) + 0 proven identical" in v.summary  # replayed
    md = (out / "report.md").read_text()
    assert "### Kernel replay" in md
    assert "Kernel replay: 1 of 1 changed rows replayed (100 %)." in md
    assert "kernel replay, 10 pairs" in md


def test_a_row_both_instruments_timed_keeps_the_op_paths_verdict_and_the_report_says_so(
    tmp_path,
):
    """A family sentinel's row is replayed and measured through FlagGems: the op path's
    verdict stands (PASS, though the replay read +100 %), and the Kernel replay table
    says the row was timed by both and whose verdict it is."""
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0, x_replayed=True)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    x = next(r for r in v.rows if r.key.op == "x")
    assert x.verdict.value == "PASS" and x.ab.instrument == ""
    md = (out / "report.md").read_text()
    (line,) = [ln for ln in md.splitlines() if ln.startswith("| `x`")]
    assert "kernel replay; also through FlagGems, whose verdict stands" in line
    (line,) = [ln for ln in md.splitlines() if ln.startswith("| `softmax`")]
    assert line.rstrip(" |").endswith("kernel replay")


def test_unchanged_replayed_rows_pass(tmp_path):
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert {o.run_name: o.verdict.value for o in v.ops} == {"x": "PASS", "softmax": "PASS"}


def test_pairs_of_a_row_whose_outputs_differed_are_refused(tmp_path, capsys):
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0, outputs="differ")
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    assert "not list it as replayed with matching outputs" in one_error_line(capsys)


def test_a_row_whose_outputs_race_is_judged_on_its_pairs_and_the_report_says_so(tmp_path):
    """Outputs that differ PR vs base by 0.5, the base's own three runs by 0.3: they race
    (within RACY_MARGIN), the row is judged on its pairs (REGRESSION) and the report
    names both errors and the base's runs."""
    bl, g = _gate_dir(tmp_path, replay_pr_us=20.0, outputs="racy", errors=(0.5, 0.3))
    rc, out = gate(tmp_path, bl, g)
    assert rc == 1
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert {r.key.op: r.verdict.value for r in v.rows}["softmax"] == "REGRESSION"
    lines = [ln for ln in (out / "report.md").read_text().splitlines()
             if ln.startswith("| `softmax`")]  # fmt: skip
    race = "kernel replay (outputs race: PR vs base 0.5, the base's own 3 runs 0.3) |"
    assert sum(ln.endswith(race) for ln in lines) == 1, lines  # the Kernel replay table


@pytest.mark.parametrize("errors", [(0.7, 0.3), (0.5, None), (None, 0.3), (0.5, 0.0)])
def test_racy_outputs_the_judge_does_not_find_racy_again_are_refused(tmp_path, capsys, errors):
    """replay.json's word "racy" is weighed again from its errors: the PR farther off
    than RACY_MARGIN times the base's spread, an error not given, a base that agrees
    with itself: its pairs are refused in one line."""
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0, outputs="racy", errors=errors)
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    assert "not list it as replayed with matching outputs" in one_error_line(capsys)


def test_a_replay_json_that_is_not_one_is_refused(tmp_path, capsys):
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0)
    data = json.loads((g / "replay" / "replay.json").read_text())
    data["changed_rows"] = "many"
    (g / "replay" / "replay.json").write_text(json.dumps(data))
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    assert "replay.json" in one_error_line(capsys)


def _no_launch_gate(tmp_path, captured: bool, occurrences: int = 1):
    """softmax's row listed in replay.json as timing no Triton kernel; ``captured``: the
    baseline's capture of softmax shows it (else replay.json says what nothing proves),
    in ``occurrences`` rows of its dtype and shape (the baseline holds one)."""
    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0)
    skey = crow("softmax", S, 1.0).key("main", "softmax")
    dump_json_model(g / "replay" / "replay.json", ReplayRun(no_launch=[skey]))
    dump_json_model(g / "replay" / "pairs.json", PairsFile())
    if captured:
        rows = [
            RowLaunches(run_name="softmax", op="softmax", dtype=skey.dtype, shape=skey.shape,
                        occurrence=i)
            for i in range(occurrences)
        ]  # fmt: skip
        cap = LaunchCapture(rows=rows, lists_every_row=True, every_launch_hooked=True)
        dump_json_model(bl / "main" / "softmax" / "codegen" / LAUNCHES_JSON, cap)
        write_baseline(bl, BASE)  # its manifest lists the capture
    return bl, g


def test_a_row_its_capture_proves_times_no_kernel_passes_and_the_report_says_why(tmp_path):
    bl, g = _no_launch_gate(tmp_path, captured=True)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    soft = next(r for r in v.rows if r.key.op == "softmax")
    assert soft.verdict.value == "PASS" and soft.reason == NO_LAUNCH
    # neither timed nor replayed: the first line counts it apart from the timed op x
    assert "2 ops checked = 1 timed (0 failing) + 1 proven untimed + 0 proven" in v.summary
    md = (out / "report.md").read_text()
    assert v.summary.replace("(", "\\(").replace(")", "\\)") in md
    assert "Kernel replay: no changed rows; 1 row(s) proven by their capture" in md
    (line,) = [ln for ln in md.splitlines() if ln.startswith("| `softmax`") and "none:" in ln]
    assert NO_LAUNCH_CELL in line


@pytest.mark.parametrize("captured, occurrences", [(False, 1), (True, 2)])
def test_a_row_listed_as_timing_no_kernel_its_baselines_capture_does_not_prove_is_refused(
    tmp_path, capsys, captured, occurrences
):
    """No capture; or one whose rows of the row's dtype and shape are two where the
    baseline's rows imply one (which is the row's is not known, though neither launched
    anything)."""
    bl, g = _no_launch_gate(tmp_path, captured=captured, occurrences=occurrences)
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    line = one_error_line(capsys)
    assert "softmax" in line and "launch capture does not show it" in line


def test_replay_without_a_base_compiler_is_one_line(tmp_path, capsys):
    from zlbench.cli import main

    bl, _ = _gate_dir(tmp_path, replay_pr_us=10.0)
    rc = main(["gate", "--baseline", str(bl), "--replay", "--out", str(tmp_path / "o")])
    assert rc == 2
    assert "--replay times the PR's and the base's binaries" in one_error_line(capsys)
    assert not (tmp_path / "o").exists()


def test_replay_is_refused_with_results_screen_only_or_a_shard_that_would_replay(tmp_path, capsys):
    from zlbench.cli import main

    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0)
    base = ["gate", "--baseline", str(bl), "--replay", "--base-compiler", str(tmp_path)]
    for extra in (["--results", str(g)], ["--screen-only"]):
        rc = main([*base, *extra, "--out", str(tmp_path / "o")])
        assert rc == 2
        assert "--replay measures on a GPU" in one_error_line(capsys)
    # each shard would replay every row: only the gate that takes the parts is sharded
    rc = main([*base, "--shard", "1/2", "--out", str(tmp_path / "o")])
    assert rc == 2 and "then shard the op path" in one_error_line(capsys)
    assert not (tmp_path / "o").exists()


def test_replay_parts_are_refused_without_replay_together_or_misnumbered(tmp_path, capsys):
    from zlbench.cli import main

    bl, g = _gate_dir(tmp_path, replay_pr_us=10.0)
    base = ["gate", "--baseline", str(bl), "--base-compiler", str(tmp_path)]
    cases = [
        (["--replay-part", "1/2"], "give --replay"),
        (["--replayed", str(g)], "give --replay"),
        (["--replay-l2", "warm"], "give --replay"),
        (["--replay", "--replay-part", "1/2", "--replayed", str(g)], "give one of them"),
        (["--replay", "--replay-part", "3/2"], "K must be between 1 and 2"),
    ]
    for extra, why in cases:
        rc = main([*base, *extra, "--out", str(tmp_path / "o")])
        assert rc == 2 and why in one_error_line(capsys), extra
        assert not (tmp_path / "o").exists()


def test_a_deferred_rows_command_is_the_gate_without_its_op_selection_and_budget():
    from zlbench.workflow.gate import rerun_command

    argv = ["/venv/bin/zlbench", "gate", "--baseline", "baselines/v7", "--ops", "abs", "mm"]
    argv += ["--time-budget=90", "--base-compiler", "/envs/base", "--out", "o", "--replay"]
    assert rerun_command(argv) == (
        "zlbench gate --baseline baselines/v7 --base-compiler /envs/base --replay"
    )
    assert rerun_command([]) == "zlbench gate"


def _shards(tmp_path, replay_pr_us: float = 20.0):
    """Two shard gate dirs of one `--replayed ... --shard K/2` gate: the first measured
    x (with its A/B), the second nothing; both hold the parts' replay (the step's own
    seconds apart)."""
    import shutil

    from zlbench.runner.batch.status import write_ops_status

    bl, g1 = _gate_dir(tmp_path, replay_pr_us=replay_pr_us)
    g2 = tmp_path / "shard2"
    write_ops_status(g2 / "results", [])
    shutil.copytree(g1 / "replay", g2 / "replay")
    run = ReplayRun.model_validate_json((g2 / "replay" / "replay.json").read_text())
    dump_json_model(g2 / "replay" / "replay.json", run.model_copy(update={"seconds": 3.5}))
    return bl, g1, g2


def test_the_shards_of_a_replayed_gates_op_path_merge_and_judge_with_their_replay(tmp_path, capsys):
    from zlbench.cli import main

    bl, g1, g2 = _shards(tmp_path)
    merged = tmp_path / "merged"
    assert main(["merge", str(g1), str(g2), "--out", str(merged)]) == 0
    assert (merged / "replay" / "pairs.json").read_text() == (
        g1 / "replay" / "pairs.json"
    ).read_text()
    rc, out = gate(tmp_path, bl, merged)
    assert rc == 1  # softmax's regression is the replay's: only the copied replay holds it
    rows = {
        r.key.op: r
        for r in GateVerdict.model_validate_json((out / "verdict.json").read_text()).rows
    }
    assert rows["softmax"].verdict.value == "REGRESSION"
    assert rows["softmax"].ab.instrument == "kernel-replay"


def test_shards_whose_replays_differ_or_that_lack_one_do_not_merge(tmp_path, capsys):
    import shutil

    from zlbench.cli import main

    _, g1, g2 = _shards(tmp_path)
    dump_json_model(g2 / "replay" / "pairs.json", PairsFile())  # other samples
    assert main(["merge", str(g1), str(g2), "--out", str(tmp_path / "m1")]) == 2
    assert "disagree (their samples)" in one_error_line(capsys)
    shutil.copy(g1 / "replay" / "pairs.json", g2 / "replay" / "pairs.json")
    run = ReplayRun.model_validate_json((g2 / "replay" / "replay.json").read_text())
    dump_json_model(g2 / "replay" / "replay.json", run.model_copy(update={"changed_rows": 9}))
    assert main(["merge", str(g1), str(g2), "--out", str(tmp_path / "m2")]) == 2
    assert "disagree (replay.json changed_rows)" in one_error_line(capsys)
    shutil.rmtree(g2 / "replay")
    assert main(["merge", str(g1), str(g2), "--out", str(tmp_path / "m3")]) == 2
    assert "has no kernel replay" in one_error_line(capsys)
    assert not any((tmp_path / m).exists() for m in ("m1", "m2", "m3"))
