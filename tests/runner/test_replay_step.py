"""The gate's replay step (zlbench.runner.replay, issue 51): from a baseline with
captured launches and a screen, the plan, both sides' builds and the worker (seams
here: no GPU), to replay/replay.json and pairs.json and the ops judged by replay alone."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest

from tests.support import cgsynth
from tests.support.zlsynth import brow, write_baseline
from zlbench.codegen.diff import code_digest
from zlbench.codegen.replay_plan import (
    BUILD_CPU_S,
    BUILD_START_S,
    BUILD_WORKER_S,
    HIT_CPU_S,
    replay_cost_s,
)
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline
from zlbench.models import (
    LAUNCHES_JSON,
    LaunchCapture,
    PairedSamples,
    PairSample,
    PairsFile,
    ReplayedRow,
    ReplayRun,
    RowKey,
    dump_json_model,
    load_json_model,
)
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, KernelScreen
from zlbench.models.replay import (
    HANG_FACTOR,
    REPLAY_PLAN,
    ArgSpec,
    BinaryRef,
    LaunchSpec,
    PlannedRow,
    ReplayPlanFile,
    RowLaunches,
    TensorStats,
)
from zlbench.plugins.replay.binaries import SideBuild
from zlbench.protocol.pairs import AB_SIDE_FACTOR
from zlbench.report.replay_text import fallback_counts
from zlbench.runner.ab.env import PR_ENV, CompilerEnv
from zlbench.runner.batch.costs import AB_START_S
from zlbench.runner.batch.progress import fmt_seconds
from zlbench.runner.replay import DIFFERS_FROM_SCREEN, op_path_wall, replay_changed

SH, SH2, SH3 = "[torch.Size([64])]", "[torch.Size([128])]", "[torch.Size([256])]"


def key(op: str, shape: str = SH) -> RowKey:
    return RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape)


def _launch(kid: str) -> LaunchSpec:
    x = ArgSpec(name="x", kind="tensor", dtype="bfloat16", shape=[64], strides=[1], storage=64,
                stats=TensorStats(min=-1.0, max=1.0, mean=0.0))  # fmt: skip
    return LaunchSpec(
        kernel_id=kid, kernel="k", grid=[1, 1, 1], args=[x, ArgSpec(kind="int", value=64)]
    )


def _baseline(tmp_path, a_256=False, a_ms=0.01):
    """Ops a and c (one family) each with a changed, captured 64-row and an unchanged
    128-row; op b changed without a capture. ``a_256``: op a has an unchanged 256-row
    too, with a kernel of its own; ``a_ms``: op a's 64-row's recorded latency."""
    root = tmp_path / "bl"
    ids, screen_kernels = {}, []
    if a_256:
        screen_kernels.append(KernelScreen(
            kernel_id="a-256", name="a_256", status=CodegenClass.IDENTICAL, ops=["main/a"],
            rows=[key("a", SH3)], timed_ops=["main/a"], timed_rows=[key("a", SH3)],
        ))  # fmt: skip
    for op in ("a", "b", "c"):
        req = cgsynth.request(name=f"{op}_kernel")
        texts = cgsynth.stage_texts(op)
        rec = cgsynth.record(req, texts, uses=[cgsynth.use(op, dtype="bfloat16", shape=SH)])
        cgsynth.write_index(root / "main" / op / "codegen", [rec], [texts])
        ids[op] = rec.id
        screen_kernels.append(
            KernelScreen(
                kernel_id=rec.id,
                name=f"{op}_kernel",
                status=CodegenClass.TTGIR,
                ops=[f"main/{op}"],
                rows=[key(op)],
                timed_ops=[f"main/{op}"],
                timed_rows=[key(op)],
                deltas={"sass_instructions": 5.0},
                code_digest=f"{op}digest",
            )  # fmt: skip
        )
        screen_kernels.append(  # the 128-row's own kernel: identical
            KernelScreen(
                kernel_id=f"{op}-same",
                name=f"{op}_other",
                status=CodegenClass.IDENTICAL,
                ops=[f"main/{op}"],
                rows=[key(op, SH2)],
                timed_ops=[f"main/{op}"],
                timed_rows=[key(op, SH2)],
            )  # fmt: skip
        )
        if op != "b":
            order = [0] if op == "a" else None  # a's capture gave its run order
            captured = RowLaunches(run_name=op, op=op, dtype="bfloat16", shape=SH,
                                   launches=[_launch(rec.id)], order=order)  # fmt: skip
            cap = LaunchCapture(rows=[captured])
            dump_json_model(root / "main" / op / "codegen" / LAUNCHES_JSON, cap)
    rows = {op: [brow(op, SH, 1.0, lat=0.01), brow(op, SH2, 1.0, lat=0.01)] for op in "abc"}
    rows["a"][0] = brow("a", SH, 1.0, lat=a_ms)
    if a_256:
        rows["a"].append(brow("a", SH3, 1.0, lat=0.01))
    write_baseline(root, rows)
    screen = CodegenScreen(baseline_dir=str(root), kernels=screen_kernels)
    return load_baseline(root), screen, ids


class Fakes:
    """build_side and run_rows seams: every kernel built; each planned row replayed with
    ``outputs`` and 8 pairs of ``pr_us`` vs 10 µs."""

    def __init__(self, outputs="match", pr_us=10.0, missing=()):
        self.outputs, self.pr_us, self.missing, self.plan = outputs, pr_us, set(missing), None

    def build_side(self, records, work, cache_dir, **kw):
        self.builds = [*getattr(self, "builds", []), (work.name, cache_dir, kw.get("in_cache"))]
        out = SideBuild()
        for r in records:
            if r.id in self.missing:
                out.errors[r.id] = "compile failed: boom"
            else:
                out.refs[r.id] = BinaryRef(group_dir=str(cache_dir / r.id), code_digest="d" * 64)
        return out

    def run_rows(self, plan_path, out_dir, python=None, env=None, on_row=None, early=None):
        self.plan, self.early = load_json_model(plan_path, ReplayPlanFile), early
        rows, pairs = [], []
        for i, p in enumerate(self.plan.rows):
            if on_row is not None:
                on_row(i, None if self.outputs == "match" else "outputs differ")
            rows.append(ReplayedRow(key=p.key, instrument="kernel-replay", outputs=self.outputs,
                                    kernels=list(p.binaries)))  # fmt: skip
            s = []
            for i in range(8):
                two = [
                    PairSample(side="pr", ms=self.pr_us / 1000),
                    PairSample(side="base", ms=0.01),
                ]
                s += two if i % 2 == 0 else two[::-1]
            pairs.append(PairedSamples(key=p.key, samples=s))
        return ReplayRun(rows=rows), PairsFile(rows=pairs)


def run(tmp_path, fakes, families=None, timed_anyway=(), every_row=False, pr_cache=None,
        recorded_on=None, base_cache=None, runner_gpu=None, recorded_gpu=None,
        a_ms=0.01):  # fmt: skip
    baseline, screen, ids = _baseline(tmp_path, a_ms=a_ms)
    if every_row:  # op a's unchanged 128-row captured too
        path = baseline.path / "main" / "a" / "codegen" / LAUNCHES_JSON
        cap = load_json_model(path, LaunchCapture)
        cap.rows.append(RowLaunches(run_name="a", op="a", dtype="bfloat16", shape=SH2,
                                    launches=[_launch(ids["a"])]))  # fmt: skip
        dump_json_model(path, cap)
    said = []
    outcome = replay_changed(
        timed_anyway=timed_anyway,
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"},
        out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base", python="/base/python"),
        budget_s=None, rerun="zlbench gate --baseline bl", say=said.append,
        families=families if families is not None else {"main/a": "F", "main/c": "F"},
        run_rows=fakes.run_rows, build_side=fakes.build_side, every_row=every_row,
        pr_cache=pr_cache, recorded_on=recorded_on, base_cache=base_cache,
        runner_gpu=runner_gpu,
        recorded_gpu=recorded_gpu,
    )  # fmt: skip
    return outcome, ids, said


def test_a_row_of_long_calls_gets_its_own_hang_limit_in_the_plan(tmp_path):
    """ormqr's float64 4096² row records 704 ms a call: by the model its replay under a
    broad change's PR (calls up to 19 times slower) outlasts the 120 s every row had,
    and would be taken for hung. A row gets HANG_FACTOR times its modelled seconds when
    that is more; the other rows keep the plan's."""
    fakes = Fakes()
    run(tmp_path, fakes, a_ms=700.0)
    own = {r.key.op: r.timeout_s for r in fakes.plan.rows}
    cost = replay_cost_s(700.0 * 1000)  # the row's modelled seconds, recorded on one GPU
    assert own == {"a": round(HANG_FACTOR * cost, 1), "c": None}
    assert own["a"] > fakes.plan.row_timeout_s == 120.0
    limits = {r.key.op: fakes.plan.timeout_of(i) for i, r in enumerate(fakes.plan.rows)}
    assert limits == {"a": own["a"], "c": 120.0}
    assert fakes.plan.timeout_of(len(fakes.plan.rows)) == 120.0  # past the last: the plan's


def test_replayed_rows_and_the_op_judged_by_replay_alone(tmp_path):
    fakes = Fakes()
    outcome, ids, said = run(tmp_path, fakes)
    run_ = load_json_model(tmp_path / "gate" / "replay" / "replay.json", ReplayRun)
    assert run_ == outcome.run
    how = {(r.key.op, r.instrument) for r in run_.rows}
    assert how == {("a", "kernel-replay"), ("c", "kernel-replay"), ("b", "op")}
    assert run_.changed_rows == 3 and run_.replayed == 2
    assert next(r for r in run_.rows if r.key.op == "b").why == "no capture for this op"
    # one of the family's two ops stays on the op path as its sentinel; the other is whole
    assert len(outcome.replayed_ops) == 1 and outcome.replayed_ops < {"main/a", "main/c"}
    # both ops' unchanged rows are proven identical: the sentinel's too, whose op path
    # times its one changed row only
    assert run_.identical == [key("a", SH2), key("c", SH2)]
    pairs = load_json_model(tmp_path / "gate" / "replay" / "pairs.json", PairsFile)
    assert {p.key.op for p in pairs.rows} == {"a", "c"}
    plan = load_json_model(tmp_path / "gate" / "replay" / REPLAY_PLAN, ReplayPlanFile)
    assert {r.key.op for r in plan.rows} == {"a", "c"}
    assert set(plan.rows[0].binaries[ids[plan.rows[0].key.op]]) == {"pr", "base"}
    assert any("2 of 3 changed rows replayed" in line for line in said)
    # the step's seconds split into what the forecast models apart: builds and replay
    assert 0 <= run_.build_seconds <= run_.seconds and 0 <= run_.worker_seconds <= run_.seconds
    (end,) = [x for x in said if "changed rows replayed (67 %) in " in x]
    assert re.search(r" in \d+ s \(builds \d+ s, replay \d+ s\); 1 op\(s\) judged", end), end
    # before replaying: the forecast (a, c replayed: 2 kernels; b and F's sentinel left
    # to FlagGems: the 30 s an op without recorded seconds costs, both sides)
    (line,) = [x for x in said if "expected about" in x]
    # builds: both sides at once, each its 2 kernels on one worker (jobs 1)
    builds = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * BUILD_CPU_S
    # b whole, F's sentinel at its one changed row of 2: 30 s + 15 s, both sides taking
    # turns (AB_SIDE_FACTOR), and the A/B's start
    op_path = fmt_seconds(AB_SIDE_FACTOR * (30 + 15) + AB_START_S)
    assert f"builds {builds:.1f}s" in line and f"2 op(s) through FlagGems {op_path} (" in line
    assert "both sides, and the A/B's start" in line
    (sentinel,) = set(outcome.op_rows) - {"main/b"}
    assert outcome.op_rows[sentinel] == [key(sentinel.split("/")[1], SH)]
    assert outcome.sentinel_rows == {sentinel: key(sentinel.split("/")[1], SH)}
    # a progress line per row as the worker ends it, with the counts
    lines = [line for line in said if "replay [" in line]
    assert [line.split("replay ")[1][:5] for line in lines] == ["[1/2]", "[2/2]"]
    assert "ETA" not in lines[1]  # the last row: nothing left


def _b_times_no_kernel(tmp_path):
    """Op b's capture: its changed 64-row's timed calls launched no Triton kernel."""
    cap = LaunchCapture(rows=[RowLaunches(run_name="b", op="b", dtype="bfloat16", shape=SH)],
                        lists_every_row=True, every_launch_hooked=True, gpu_model="G")  # fmt: skip
    dump_json_model(tmp_path / "bl" / "main" / "b" / "codegen" / LAUNCHES_JSON, cap)


def test_a_row_whose_capture_proves_it_times_no_kernel_is_judged_without_timing(tmp_path):
    _baseline(tmp_path)
    _b_times_no_kernel(tmp_path)
    outcome, _, said = run(tmp_path, Fakes(), runner_gpu="G")
    run_ = outcome.run
    assert run_.no_launch == [key("b")] and run_.changed_rows == 2 and run_.replayed == 2
    assert not any(r.key.op == "b" for r in run_.rows)  # neither replayed nor on the op path
    assert "main/b" in outcome.replayed_ops and "main/b" not in outcome.op_rows
    assert key("b") not in run_.identical and key("b", SH2) in run_.identical
    assert run_.coverage() == (
        "2 of 2 changed rows replayed (100 %); 1 row(s) proven by their capture "
        "(no Triton kernel timed)"
    )
    (planned,) = [x for x in said if "changed row(s):" in x]
    assert planned.endswith("; 1 row(s) proven by their capture (no Triton kernel timed)")
    (line,) = [x for x in said if "expected about" in x]
    assert "1 op(s) through FlagGems" in line  # F's sentinel only: b is not timed


def test_no_row_is_proven_on_another_gpu_model_or_with_flaggems_c_extension_asked_for(
    tmp_path, monkeypatch
):
    from zlbench.runner.replay import proof_gpu

    _baseline(tmp_path)
    _b_times_no_kernel(tmp_path)
    outcome, _, _ = run(tmp_path, Fakes(), runner_gpu="H")
    assert not outcome.run.no_launch and "main/b" not in outcome.replayed_ops
    assert proof_gpu("G", [{}, {"USE_C_EXTENSION": "0"}]) == "G"
    assert proof_gpu("G", [{}, {"USE_C_EXTENSION": "1"}]) is None  # either side
    assert proof_gpu(None, [{}]) is None and proof_gpu("", [{}]) is None
    monkeypatch.setenv("USE_C_EXTENSION", "1")  # the sides' environments inherit it
    outcome, _, _ = run(tmp_path, Fakes(), runner_gpu="G")
    assert not outcome.run.no_launch


def test_the_judge_re_derives_the_rows_timing_no_kernel_from_the_baselines_captures(tmp_path):
    from zlbench.workflow.ab import proven_no_launch

    baseline, _, _ = _baseline(tmp_path)
    rows = [key("a"), key("b"), key("c", SH2), key("nope")]
    assert proven_no_launch(rows, baseline) == frozenset()  # b has no capture yet
    _b_times_no_kernel(tmp_path)
    assert proven_no_launch(rows, baseline) == {key("b")}  # a launched its kernel
    assert proven_no_launch(rows, None) == frozenset()  # no baseline read: nothing proven


def test_the_op_paths_wall_is_the_measure_steps_forecast_of_its_seconds():
    # both sides' seconds on one GPU, one process start, as an A/B side's own forecast
    assert op_path_wall({"main/a": 10.0, "main/b": 5.0}) == 15.0 + AB_START_S


def test_every_row_replays_an_unchanged_row_and_counts_it_apart_from_the_changed(tmp_path):
    outcome, _, said = run(tmp_path, Fakes(), every_row=True)
    run_ = outcome.run
    unchanged = [r.key for r in run_.rows if not r.changed]
    assert unchanged == [key("a", SH2)]
    assert run_.changed_rows == 3 and run_.replayed == 2 and run_.unchanged_replayed == 1
    assert run_.coverage() == (
        "2 of 3 changed rows replayed (67 %); 1 unchanged row(s) too (--time all)"
    )
    assert key("a", SH2) not in run_.identical  # its pairs judge it, not the screen's proof
    pairs = load_json_model(tmp_path / "gate" / "replay" / "pairs.json", PairsFile)
    assert key("a", SH2) in {p.key for p in pairs.rows}
    assert any("2 to replay" in line and "1 unchanged row(s) replayed too" in line
               for line in said)  # fmt: skip


def test_every_row_an_unchanged_row_whose_build_fails_is_no_changed_rows_fallback(tmp_path):
    _, _, ids = _baseline(tmp_path / "ids")  # the kernel ids (the same records below)
    outcome, _, _ = run(tmp_path, Fakes(missing={ids["a"]}), every_row=True)
    by_key = {r.key: r for r in outcome.run.rows}
    assert by_key[key("a", SH2)].instrument == "op" and not by_key[key("a", SH2)].changed
    assert by_key[key("a")].instrument == "op" and by_key[key("a")].changed
    # the failed build counts for a's changed row only (b: no capture)
    assert sum(n for _, n in fallback_counts(outcome.run)) == 2


def test_rows_whose_outputs_differ_keep_no_samples_and_no_op_is_judged_by_replay(tmp_path):
    outcome, _, _ = run(tmp_path, Fakes(outputs="differ"))
    assert outcome.run.replayed == 0 and outcome.replayed_ops == set()
    pairs = load_json_model(tmp_path / "gate" / "replay" / "pairs.json", PairsFile)
    assert pairs.rows == []


def test_a_kernel_the_base_cannot_build_falls_back_with_why(tmp_path):
    baseline, _, ids = _baseline(tmp_path / "x")
    outcome, _, _ = run(tmp_path, Fakes(missing={ids["a"]}))
    a = next(r for r in outcome.run.rows if r.key.op == "a")
    assert a.instrument == "op" and "compile failed: boom" in a.why
    assert "main/a" not in outcome.replayed_ops


def test_a_pr_build_that_is_not_the_screens_falls_back(tmp_path):
    """The PR side's build has another code digest than the screen's rebuild."""
    fakes = Fakes()
    baseline, screen, ids = _baseline(tmp_path)

    built = {}

    def build_side(records, work, cache_dir, **kw):
        out = fakes.build_side(records, work, cache_dir, **kw)
        if work.name == "build-pr":  # rebuilt as recorded: not the screen's "adigest"
            out.rebuilt = {r.id: r.model_copy(deep=True) for r in records}
            built.update(out.rebuilt)
        return out

    said = []
    outcome = replay_changed(
        baseline=baseline, screen=screen, ops={"main/a"}, out=tmp_path / "gate",
        pr=PR_ENV, base=CompilerEnv("base"), budget_s=None, rerun="zlbench gate",
        say=said.append, families={}, run_rows=fakes.run_rows, build_side=build_side,
    )  # fmt: skip
    (a,) = outcome.run.rows
    assert a.instrument == "op" and a.why.startswith(DIFFERS_FROM_SCREEN)
    # the same build, where the screen's digest is that build's: replayed
    kernels = [k.model_copy(update={"code_digest": code_digest(built[k.kernel_id])})
               if k.kernel_id in built else k for k in screen.kernels]  # fmt: skip
    again = replay_changed(
        baseline=baseline, screen=screen.model_copy(update={"kernels": kernels}),
        ops={"main/a"}, out=tmp_path / "gate2", pr=PR_ENV, base=CompilerEnv("base"),
        budget_s=None, rerun="zlbench gate", say=said.append, families={},
        run_rows=fakes.run_rows, build_side=build_side,
    )  # fmt: skip
    assert [r.instrument for r in again.run.rows] == ["kernel-replay"]


def test_the_pr_build_is_held_to_the_screens_binary_not_its_sass_digest(tmp_path):
    """The screen disassembled a kernel (its code_digest takes the SASS stage's digest);
    the replay's builds do not (--no-sass), so their code_digest can never equal it. With
    the screen's binary_digest (its cubin's code digest) the same binary is replayed,
    and another binary falls back."""
    fakes = Fakes()
    baseline, screen, ids = _baseline(tmp_path)
    cubin = "c" * 64

    def build_side(records, work, cache_dir, **kw):
        out = fakes.build_side(records, work, cache_dir, **kw)
        if work.name == "build-pr":  # no SASS stage: the cubin's code digest only
            out.rebuilt = {r.id: r.model_copy(deep=True) for r in records}
            for r in out.rebuilt.values():
                r.result.stages.pop("sass", None)
                r.result.cubin_code_sha256 = cubin
        return out

    def gate(out, binary):
        kernels = [k.model_copy(update={"binary_digest": binary}) for k in screen.kernels]
        return replay_changed(
            baseline=baseline, screen=screen.model_copy(update={"kernels": kernels}),
            ops={"main/a"}, out=tmp_path / out, pr=PR_ENV, base=CompilerEnv("base"),
            budget_s=None, rerun="zlbench gate", say=[].append, families={},
            run_rows=fakes.run_rows, build_side=build_side,
        ).run.rows  # fmt: skip

    (same,) = gate("g1", cubin)
    assert same.instrument == "kernel-replay"
    (other,) = gate("g2", "e" * 64)
    assert other.instrument == "op" and other.why.startswith(DIFFERS_FROM_SCREEN)
    (old,) = gate("g3", "")  # a screen without binary digests: its code_digest ("adigest")
    assert old.instrument == "op" and old.why.startswith(DIFFERS_FROM_SCREEN)


def test_the_progress_line_counts_rows_and_its_eta_is_the_models_rows_left_corrected():
    """Rows a-d cost 1, 1, 2 and 4 modelled seconds, the worker's start 10. The first
    row ends at 11 s (start included): as modelled, ETA 7 s (the mean row so far would
    say 3 x 11 = 33 s). The second ends at 24 s: 24 wall s for 12 modelled, ETA 2 x 6."""
    from zlbench.codegen.replay_plan import WORKER_START_S
    from zlbench.runner.replay import progress

    assert WORKER_START_S == 10.0
    rows = [PlannedRow(key=key(op), launches=[_launch("k")]) for op in ("a", "b", "c", "d")]
    plan = ReplayPlanFile(rows=rows)
    costs = {key("a"): 1.0, key("b"): 1.0, key("c"): 2.0, key("d"): 4.0}
    said, now = [], [100.0]
    on_row = progress(plan, said.append, 100.0, costs, clock=lambda: now[0])
    now[0] = 111.0
    on_row(0, None)
    now[0] = 124.0
    on_row(1, "outputs differ from the base's")
    on_row(1, "outputs differ from the base's")  # a row's line twice counts once
    now[0] = 130.0
    on_row(2, None)
    on_row(3, None)
    assert said[0] == (
        f"zlbench gate: replay [1/4] a bfloat16 {SH}: replayed; 0 fell back, ETA 7.0s"
    )
    assert said[1] == (
        f"zlbench gate: replay [2/4] b bfloat16 {SH}: through FlagGems (outputs differ "
        "from the base's); 1 fell back, ETA 12.0s"
    )
    assert said[2] == said[1]
    assert said[3].startswith("zlbench gate: replay [3/4] c") and "1 fell back, ETA" in said[3]
    assert said[4] == f"zlbench gate: replay [4/4] d bfloat16 {SH}: replayed; 1 fell back"


def test_the_progress_lines_are_the_first_the_last_each_fallback_and_one_per_interval():
    from zlbench.runner.replay import progress

    rows = [PlannedRow(key=key(f"op{i}"), launches=[_launch("k")]) for i in range(100)]
    said, now = [], [0.0]
    on_row = progress(ReplayPlanFile(rows=rows), said.append, 0.0, clock=lambda: now[0],
                      every_s=5.0)  # fmt: skip
    for i in range(100):
        now[0] = 10.0 + 0.1 * i  # a row every 0.1 s: 9.9 s in all
        on_row(i, "outputs differ from the base's" if i == 42 else None)
    counts = [line.split("replay [")[1].split("]")[0] for line in said]
    # the first (10.0 s); the fallback at once (14.2 s); 5 s after it (19.2 s); the last
    assert counts == ["1/100", "43/100", "93/100", "100/100"]
    assert any("through FlagGems (outputs differ" in line for line in said)
    assert said[-1].endswith("1 fell back")  # the last line: no ETA


def test_a_gate_sentinel_is_its_familys_sentinel_so_the_other_op_is_judged_by_replay(tmp_path):
    """Ops a and c share family F; the gate times c anyway (ops/sentinels.txt): c is F's
    sentinel and a is judged by replay alone. Without it, a (the first by key) is."""
    with_c, _, _ = run(tmp_path / "1", Fakes(), timed_anyway={"main/c"})
    assert with_c.replayed_ops == {"main/a"}
    without, _, _ = run(tmp_path / "2", Fakes())
    assert without.replayed_ops == {"main/c"}


def test_every_op_the_gate_times_anyway_stays_on_the_op_path_even_when_replayed_whole(tmp_path):
    """a and c share family F and the gate times both anyway: c is F's sentinel, and a
    (replayed whole) is still timed through FlagGems: the gate's sentinels always are."""
    both, _, _ = run(tmp_path, Fakes(), timed_anyway={"main/a", "main/c"})
    assert both.run.replayed == 2 and both.replayed_ops == set()


def test_the_pr_side_builds_in_the_screens_cache_so_its_kernels_are_not_compiled_again(tmp_path):
    fakes = Fakes()
    screens(tmp_path / "shared")
    _, _, said = run(tmp_path, fakes, pr_cache=tmp_path / "shared")
    gate = tmp_path / "gate" / "replay"
    assert sorted(fakes.builds) == [
        ("build-base", gate / "cache-base", False),
        ("build-pr", tmp_path / "shared", True),
    ]
    (line,) = [x for x in said if "expected about" in x]
    # both sides at once; the base's alone compiles its 2 kernels, the PR's are hits
    assert f"builds {BUILD_START_S + 2 * BUILD_WORKER_S + 2 * BUILD_CPU_S:.1f}s" in line, line
    alone = Fakes()
    run(tmp_path / "2", alone)  # no shared cache: each side its own
    assert {(w, c.name, i) for w, c, i in alone.builds} == {
        ("build-pr", "cache-pr", False),
        ("build-base", "cache-base", False),
    }


def test_the_base_side_builds_in_the_screens_base_cache_so_neither_side_compiles_again(
    tmp_path,
):
    """The screen's base rebuild left its kernels in a cache dir of its own: the base
    side builds there too (cache hits), and the forecast charges only the sides' start."""
    fakes = Fakes()
    screens(tmp_path / "shared", tmp_path / "base-shared")
    _, _, said = run(tmp_path, fakes, pr_cache=tmp_path / "shared",
                     base_cache=tmp_path / "base-shared")  # fmt: skip
    assert sorted(fakes.builds) == [
        ("build-base", tmp_path / "base-shared", True),
        ("build-pr", tmp_path / "shared", True),
    ]
    (line,) = [x for x in said if "expected about" in x]
    hits = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * HIT_CPU_S  # a worker a side, 2 hits
    assert f"builds {hits:.1f}s" in line, line
    # the base-screen cache served the screen: its base dir is empty, the base compiles
    (tmp_path / "empty").mkdir()
    _, _, said = run(tmp_path / "2", Fakes(), pr_cache=tmp_path / "shared",
                     base_cache=tmp_path / "empty")  # fmt: skip
    (line,) = [x for x in said if "expected about" in x]
    assert f"builds {BUILD_START_S + 2 * BUILD_WORKER_S + 2 * BUILD_CPU_S:.1f}s" in line, line


def test_a_kept_kernel_cache_notes_each_sides_builds_for_the_next_gate(tmp_path):
    """``gate --kernel-cache``: the sides build in dirs that outlive the gate, each build
    notes what it put there, and the next gate (a later part, the next PR on the same
    base) whose kernels are all noted builds them as cache hits."""
    from zlbench.protocol.cache import built_ids, mark_built

    pr, base = tmp_path / "kc" / "pr", tmp_path / "kc" / "base"
    screens(pr)  # the screen filled the PR's dir and noted part of the plan's kernels
    mark_built(pr, ["k-not-this-plans"])
    base.mkdir(parents=True)
    fakes = Fakes()
    _, _, said = run(tmp_path / "1", fakes, pr_cache=pr, base_cache=base)
    assert sorted(fakes.builds) == [("build-base", base, True), ("build-pr", pr, True)]
    cold = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * BUILD_CPU_S
    (line,) = [x for x in said if "expected about" in x]
    assert f"builds {cold:.1f}s" in line, line  # the notes do not cover this plan's kernels
    assert built_ids(base) and built_ids(base) == built_ids(pr) - {"k-not-this-plans"}
    _, _, said = run(tmp_path / "2", Fakes(), pr_cache=pr, base_cache=base)
    (line,) = [x for x in said if "expected about" in x]
    hits = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * HIT_CPU_S
    assert f"builds {hits:.1f}s" in line, line  # every kernel noted: both sides hits
    # dirs that note one of the plan's two kernels (an earlier part built it): that one
    # is a hit, the other compiled, on each side
    one = sorted(built_ids(base))[0]
    pr3, base3 = tmp_path / "kc3" / "pr", tmp_path / "kc3" / "base"
    mark_built(pr3, [one])
    mark_built(base3, [one])
    _, _, said = run(tmp_path / "3", Fakes(), pr_cache=pr3, base_cache=base3)
    (line,) = [x for x in said if "expected about" in x]
    partly = BUILD_START_S + 2 * BUILD_WORKER_S + BUILD_CPU_S + HIT_CPU_S
    assert f"builds {partly:.1f}s" in line, line


def screens(*caches) -> None:
    """The screen's kernels put into each triton cache dir (a compiled kernel's group
    each, as triton's file cache keeps it)."""
    for c in caches:
        (c / "key").mkdir(parents=True)
        (c / "key" / "__grp__k.json").write_text("{}")


def test_the_rows_cost_is_scaled_to_the_runners_gpu_model(tmp_path, monkeypatch):
    """The rows' recorded latencies are the recording GPU's: replayed on an H100, an
    H200 baseline's rows cost KERNEL_SCALE more (the plan's cost, the part's deal and
    the ETA read it); on its own model, or an unknown runner, as recorded."""
    import zlbench.runner.replay as step
    from tests.support.zlsynth import GPU
    from zlbench.codegen.replay_plan import KERNEL_SCALE

    scales, real = [], step.replay_costs

    def seen(results, pairs=None, scale=1.0):
        scales.append(scale)
        return real(results, pairs, scale)

    monkeypatch.setattr(step, "replay_costs", seen)
    run(tmp_path / "1", Fakes(), recorded_gpu=GPU, runner_gpu="NVIDIA H100 80GB HBM3")
    run(tmp_path / "2", Fakes(), recorded_gpu=GPU, runner_gpu=GPU)
    run(tmp_path / "3", Fakes(), recorded_gpu=GPU)
    assert scales == [KERNEL_SCALE[("h200", "h100")], 1.0, 1.0]


def test_the_forecast_charges_each_kernels_recorded_compile_seconds(tmp_path, monkeypatch):
    """The builds' forecast reads each kernel's record's compile seconds from the screen
    (KernelScreen.baseline.compile_s): the part of v7 they would have put at 117 s took
    111 s on an H100, where a flat 0.75 s a kernel said 3m21s."""
    me = sys.modules[__name__]
    from zlbench.codegen.replay_plan import BUILD_EXTRA_S
    from zlbench.models import Resources

    plain = me._baseline

    def recorded(tmp, **kw):  # each kernel's record took 2 s to compile
        baseline, screen, ids = plain(tmp, **kw)
        for k in screen.kernels:
            k.baseline = Resources(compile_s=2.0)
        return baseline, screen, ids

    _, _, said = run(tmp_path / "1", Fakes())
    (line,) = [x for x in said if "expected about" in x]
    flat = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * BUILD_CPU_S  # a and c's kernels, a side
    assert f"builds {flat:.1f}s" in line, line
    monkeypatch.setattr(me, "_baseline", recorded)
    _, _, said = run(tmp_path / "2", Fakes())
    (line,) = [x for x in said if "expected about" in x]
    charged = BUILD_START_S + 2 * BUILD_WORKER_S + 2 * (2.0 + BUILD_EXTRA_S)
    assert f"builds {charged:.1f}s" in line, line


def test_the_forecast_says_when_the_recorded_seconds_come_from_another_gpu_model(tmp_path):
    """The op path's seconds are the baseline's: on another GPU model the line says they
    may undercount, in the batch's words (the H100 took up to 4.8x v5's H200 seconds)."""
    from zlbench.runner.batch.forecast import where_recorded

    note = where_recorded("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    _, _, said = run(tmp_path, Fakes(), recorded_on=note)
    (line,) = [x for x in said if "expected about" in x]
    assert line.endswith(f"(recorded seconds, both sides, and the A/B's start; {note})"), line
    assert "this runner has NVIDIA H100 80GB HBM3: they may undercount" in line
    _, _, plain = run(tmp_path / "2", Fakes())
    (line,) = [x for x in plain if "expected about" in x]
    assert line.endswith("(recorded seconds, both sides, and the A/B's start)")


def test_an_op_replayed_in_part_is_measured_for_its_other_rows_only():
    """An op some of whose changed rows were replayed and the others fell back: the op
    path measures those others only. Not an op with no row replayed, nor one the op path
    keeps whole (a sentinel, an op timed anyway, one with a failed or deferred row)."""
    from zlbench.codegen.replay_plan import ReplayPlan
    from zlbench.models import DeferredRow
    from zlbench.runner.replay import _op_path_split

    def rows(op, instruments):
        return [
            ReplayedRow(
                key=key(op, f"[{i}]"),
                instrument=inst,
                why="" if inst != "op" else "x",
                outputs="match" if inst != "op" else "",
            )  # fmt: skip
            for i, inst in enumerate(instruments)
        ]

    run = ReplayRun(rows=[
        *rows("a", ["kernel-replay", "op", "op"]),  # in part: its two fallen rows
        *rows("c", ["op", "op"]),  # none replayed: whole
        *rows("s", ["kernel-replay", "op"]),  # its family's sentinel: whole
        *rows("t", ["kernel-replay", "op"]),  # the gate times it anyway: whole
        *rows("d", ["kernel-replay", "op"]),  # a row deferred: not measured at all
        *rows("e", ["kernel-replay", "kernel-replay"]),  # replayed whole
    ])  # fmt: skip
    later = DeferredRow(key=key("d", "[9]"), command="zlbench gate", score=1.0)
    plan = ReplayPlan(sentinels={"F": "main/s"}, anyway={"main/t"}, deferred=[later])
    assert _op_path_split(run, plan)[1] == {"main/a": [key("a", "[1]"), key("a", "[2]")]}
    # a family sentinel timed at its one row: that row and its fallen ones; e, replayed
    # whole, with a row of its own is no longer judged by replay alone
    plan.sentinels["G"] = "main/e"
    plan.sentinel_rows = {"main/s": key("s", "[0]"), "main/e": key("e", "[1]")}
    whole, partly = _op_path_split(run, plan)
    assert partly == {
        "main/a": [key("a", "[1]"), key("a", "[2]")],
        "main/e": [key("e", "[1]")],
        "main/s": [key("s", "[1]"), key("s", "[0]")],
    }
    assert "main/e" not in whole
    plan.failed[key("a", "[7]")] = "kernel `k` does not compile"
    plan.failed[key("s", "[8]")] = "kernel `k` does not compile"
    assert _op_path_split(run, plan)[1] == {"main/e": [key("e", "[1]")]}


def test_the_gate_picks_an_op_s_rows_not_replayed_by_their_place_in_its_baseline(tmp_path):
    """``op_path_picks``: the rows the op path measures named as the plugins count them
    (benchmark op, dtype, index within them); an op picked whole, or not measured, is
    left out (measured whole, or not at all)."""
    from zlbench.workflow.gate import op_path_picks

    baseline, _, _ = _baseline(tmp_path)
    measured = {"main/a", "main/b", "main/c"}
    picks = op_path_picks(baseline, {"main/a": [key("a", SH2)], "main/b": [key("b", SH)]},
                          measured)  # fmt: skip
    assert picks == {"main/a": (("a", "bfloat16", 1),), "main/b": (("b", "bfloat16", 0),)}
    every = {"main/c": [key("c", SH), key("c", SH2)]}  # all of c's rows: measured whole
    assert op_path_picks(baseline, every, measured) == {}
    assert op_path_picks(baseline, {"main/a": [key("a", SH2)]}, {"main/b"}) == {}


def test_the_picks_line_counts_rows_not_replayed_apart_from_family_sentinel_rows():
    from zlbench.workflow.gate import picks_line

    picks = {"main/a": (("a", "bf16", 1), ("a", "bf16", 2)), "main/s": (("s", "bf16", 0),)}
    assert picks_line(picks, {"main/s": key("s")}) == (
        "zlbench gate: replay: 2 op(s) timed through FlagGems for some rows only: 2 row(s) "
        "not replayed, 1 family sentinel row(s) (the replay judges the rest)"
    )
    assert picks_line({"main/a": picks["main/a"]}, {}).endswith(
        "for some rows only: 2 row(s) not replayed (the replay judges the rest)"
    )


def test_the_step_names_the_rows_the_op_path_measures_of_an_op_replayed_in_part(tmp_path):
    """Op a's 128-row changes too, with no capture of its own: its 64-row is replayed,
    the 128-row falls back, and the op path measures a for that row only; its unchanged
    256-row, measured by neither, PASSes as proven identical."""
    baseline, screen, ids = _baseline(tmp_path, a_256=True)
    kernels = [
        k.model_copy(update={"status": CodegenClass.TTGIR}) if k.kernel_id == "a-same" else k
        for k in screen.kernels
    ]
    fakes = Fakes()
    outcome = replay_changed(
        baseline=baseline, screen=screen.model_copy(update={"kernels": kernels}),
        ops={"main/a"}, out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base"),
        budget_s=None, rerun="zlbench gate", say=[].append, families={},
        run_rows=fakes.run_rows, build_side=fakes.build_side,
    )  # fmt: skip
    assert {r.key: r.instrument for r in outcome.run.rows} == {
        key("a"): "kernel-replay",
        key("a", SH2): "op",
    }
    assert outcome.op_rows == {"main/a": [key("a", SH2)]} and outcome.replayed_ops == set()
    assert outcome.run.identical == [key("a", SH3)]


def test_the_builds_read_the_replayed_ops_records_and_another_ops_when_one_launches_it(
    tmp_path,
):
    """The builds read only the replayed ops' codegen records (all of v7's take 5-6 s),
    and every op's when a captured launch names a kernel that only another op recorded
    (the screen lists it under op a, a's own records lack it): op a's row launches op
    b's kernel too, and is built and replayed with it."""
    baseline, screen, ids = _baseline(tmp_path)
    kb = next(k for k in screen.kernels if k.kernel_id == ids["b"])
    kb.ops.append("main/a")
    kb.rows.append(key("a"))
    kb.timed_ops.append("main/a")
    kb.timed_rows.append(key("a"))
    path = baseline.path / "main" / "a" / "codegen" / LAUNCHES_JSON
    cap = load_json_model(path, LaunchCapture)
    cap.rows[0].launches.append(_launch(ids["b"]))
    dump_json_model(path, cap)
    fakes = Fakes()
    replay_changed(
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"},
        out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base", python="/base/python"),
        budget_s=None, rerun="zlbench gate --baseline bl", say=[].append,
        families={}, run_rows=fakes.run_rows, build_side=fakes.build_side,
    )  # fmt: skip
    run_ = load_json_model(tmp_path / "gate" / "replay" / "replay.json", ReplayRun)
    a = next(r for r in run_.rows if r.key == key("a"))
    assert a.instrument == "kernel-replay", a.why
    (row,) = [r for r in fakes.plan.rows if r.key == key("a")]
    assert set(row.binaries) == {ids["a"], ids["b"]}


class WarmProc:
    """A stand-in for worker.start_warm's process: cancel() polls it, closes its pipes."""

    def __init__(self, events):
        self.events, self.stdin, self.stdout = events, None, None

    def poll(self):
        self.events.append("cancel")
        return 0


def test_the_first_replay_worker_starts_before_the_builds_and_is_handed_to_the_rows(
    tmp_path,
):
    """The replay's first worker starts (warm) before both sides build, with the plan
    path and the PR side's interpreter, and run_rows gets it; cancelled after."""
    baseline, screen, ids = _baseline(tmp_path)
    events, fakes = [], Fakes()
    build = fakes.build_side

    def build_side(records, work, cache_dir, **kw):
        events.append("build")
        return build(records, work, cache_dir, **kw)

    def start_warm(plan_path, out_dir, python=None, env=None):
        events.append(("warm", plan_path.name, out_dir.name, python))
        return WarmProc(events)

    replay_changed(
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"},
        out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base", python="/base/python"),
        budget_s=None, rerun="zlbench gate --baseline bl", say=[].append, families={},
        run_rows=fakes.run_rows, build_side=build_side, start_warm=start_warm,
    )  # fmt: skip
    assert events[0] == ("warm", REPLAY_PLAN, "worker", PR_ENV.python)
    assert events[1:] == ["build", "build", "cancel"]
    assert isinstance(fakes.early, WarmProc)


def test_a_warm_worker_is_cancelled_when_no_row_builds(tmp_path):
    baseline, screen, ids = _baseline(tmp_path)
    events, fakes = [], Fakes(missing=set(ids.values()))
    replay_changed(
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"},
        out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base", python="/base/python"),
        budget_s=None, rerun="zlbench gate --baseline bl", say=[].append, families={},
        run_rows=fakes.run_rows, build_side=fakes.build_side,
        start_warm=lambda *a, **k: WarmProc(events),
    )  # fmt: skip
    assert fakes.plan is None and events == ["cancel"]


def test_a_warm_workers_progress_counts_only_what_the_builds_left_of_its_start():
    """The first worker started warm: its start is what the builds left (start_s), so
    a first row done at 2 s (1 s start + the row's 1 modelled s) keeps the rows left at
    their modelled 7 s; counting the cold start of 10 s there would say 1.3 s."""
    from zlbench.runner.replay import progress

    rows = [PlannedRow(key=key(op), launches=[_launch("k")]) for op in ("a", "b", "c", "d")]
    costs = {key("a"): 1.0, key("b"): 1.0, key("c"): 2.0, key("d"): 4.0}
    said = []
    on_row = progress(ReplayPlanFile(rows=rows), said.append, 0.0, costs,
                      clock=lambda: 2.0, start_s=1.0)  # fmt: skip
    on_row(0, None)
    assert said[0].endswith("ETA 7.0s")


def test_after_the_builds_the_rest_is_forecast_at_this_hosts_pace(tmp_path):
    """The builds say how fast this host imports FlagGems (a rebuild worker's load
    phase); the op path's A/B start scales with it (AB_START_PER_LOAD; AB_START_S
    without it), and the step says what is left once they are done. Ops a, c replayed
    (F's sentinel on the op path at its one row), b through FlagGems: both sides' turns,
    AB_SIDE_FACTOR x (30 + 15)."""
    from zlbench.codegen.replay_plan import host_load_s
    from zlbench.models.replay import SideBuildTime
    from zlbench.plugins.replay.binaries import PartTime
    from zlbench.runner.batch.costs import AB_START_PER_LOAD, ab_start_s

    fakes = Fakes()
    build = fakes.build_side

    def build_side(records, work, cache_dir, **kw):
        out = build(records, work, cache_dir, **kw)
        load = 5.0 if work.name.endswith("pr") else 6.0  # the base side is slower
        out.parts = [PartTime(spawned=0.0, wall=load + 1, phases={"load": load})] * 2
        return out

    said = []
    baseline, screen, _ = _baseline(tmp_path)
    replay_changed(
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"},
        out=tmp_path / "gate", pr=PR_ENV, base=CompilerEnv("base", python="/base/python"),
        budget_s=None, rerun="zlbench gate --baseline bl", say=said.append,
        families={"main/a": "F", "main/c": "F"}, run_rows=fakes.run_rows,
        build_side=build_side,
    )  # fmt: skip
    (line,) = [x for x in said if "the rest expected about" in x]
    start = 6.0 * AB_START_PER_LOAD
    op_path = AB_SIDE_FACTOR * (30 + 15) + start
    assert f"through FlagGems {fmt_seconds(op_path)}" in line, line
    assert line.endswith(f"(recorded seconds, both sides, and the A/B's start "
                         f"{fmt_seconds(start)}: FlagGems imported in 6.0s here)")  # fmt: skip
    run_ = load_json_model(tmp_path / "gate" / "replay" / "replay.json", ReplayRun)
    assert host_load_s(run_.builds) == 6.0  # the slower side's, per worker (12 s over 2)
    assert host_load_s([SideBuildTime(side="pr", workers=1, kernels=1)]) is None
    assert ab_start_s(None) == AB_START_S and ab_start_s(2.0) == 2 * AB_START_PER_LOAD
    # a slow host's start is as long as its import says (the thirty-seventh session's
    # 11.5 s import started in ~18 s): no cap at the no-load start
    assert ab_start_s(11.5) == pytest.approx(18.6, abs=0.1) and ab_start_s(11.5) > AB_START_S
    # builds that do not say their load phase: no second forecast
    _, _, plain = run(tmp_path / "plain", Fakes())
    assert not any("the rest expected" in x for x in plain)


def _replay(baseline, screen, out, fakes, **kw):
    said = []
    outcome = replay_changed(
        baseline=baseline, screen=screen, ops={"main/a", "main/b", "main/c"}, out=out,
        pr=PR_ENV, base=CompilerEnv("base", python="/base/python"), budget_s=None,
        rerun="zlbench gate --baseline bl", say=said.append,
        families={"main/a": "F", "main/c": "F"}, run_rows=fakes.run_rows,
        build_side=fakes.build_side, runner_gpu="NVIDIA H100 80GB HBM3", **kw,
    )  # fmt: skip
    return outcome, said


def test_parts_replay_the_plans_rows_apart_and_the_merging_gate_takes_them(tmp_path):
    """gate --replay-part K/N replays part K of the plan's rows (their cost dealt over
    N device calls); gate --replayed takes every part's rows and samples as its own
    replay, builds and times nothing, and leaves the op path as the whole run would."""
    from zlbench.codegen.replay_plan import part_rows

    baseline, screen, _ = _baseline(tmp_path)
    whole, _ = _replay(baseline, screen, tmp_path / "whole", Fakes())
    ran = []
    for k in (1, 2):
        fakes = Fakes()
        part, said = _replay(baseline, screen, tmp_path / f"p{k}", fakes, part=(k, 2))
        ran.append({r.key for r in fakes.plan.rows})
        assert part.run.part == f"{k}/2" and part.run.gpu == "NVIDIA H100 80GB HBM3"
        assert any(f"part {k}/2 replays 1 of them" in x for x in said)
        assert part.run.changed_rows == 3  # the plan's own lists whole
        assert {r.key.op for r in part.run.rows if r.instrument == "op"} == {"b"}
    assert ran[0] | ran[1] == {key("a"), key("c")} and not ran[0] & ran[1]  # each row once
    idle = Fakes()
    merged, said = _replay(baseline, screen, tmp_path / "final", idle,
                           parts=[tmp_path / "p2", tmp_path / "p1"])  # fmt: skip
    assert idle.plan is None and not getattr(idle, "builds", [])  # nothing built or timed
    assert any("replayed by 2 part(s)" in x for x in said)
    strip = {"seconds", "build_seconds", "worker_seconds", "builds"}
    assert merged.run.model_dump(exclude=strip) == whole.run.model_dump(exclude=strip)
    assert (merged.replayed_ops, merged.op_rows) == (whole.replayed_ops, whole.op_rows)
    pairs = load_json_model(tmp_path / "final" / "replay" / "pairs.json", PairsFile)
    assert {p.key for p in pairs.rows} == {key("a"), key("c")}
    # the deal: by cost, largest first, to the least loaded part; in the rows' order
    rows = [SimpleNamespace(key=key(op), cost_s=c) for op, c in (("a", 5), ("b", 3), ("c", 3))]
    assert [p.key.op for p in part_rows(rows, (1, 2))] == ["a"]
    assert [p.key.op for p in part_rows(rows, (2, 2))] == ["b", "c"]


def test_the_merging_gates_forecast_is_the_op_path_its_parts_left(tmp_path):
    """gate --replayed announces nothing to build or replay and the op path as its parts
    left it: the plan's (as the whole gate announced it) and the ops of the rows a part
    sent back. (Before: every op of the gate, as if no row had been replayed.)"""
    baseline, screen, _ = _baseline(tmp_path)
    _, said = _replay(baseline, screen, tmp_path / "whole", Fakes())
    (whole,) = [x for x in said if "expected about" in x]
    for k in (1, 2):
        _replay(baseline, screen, tmp_path / f"p{k}", Fakes(), part=(k, 2))
    parts = [tmp_path / "p1", tmp_path / "p2"]
    merged, said = _replay(baseline, screen, tmp_path / "m", Fakes(), parts=parts)
    (line,) = [x for x in said if "expected about" in x]
    assert "builds 0.0s, replay 0.0s (the cost model)" in line
    op_path = whole.split("(the cost model), ")[1]
    assert line.endswith(op_path) and op_path.startswith("2 op(s) through FlagGems ")
    assert set(merged.op_rows) == {"main/a"}  # b whole, a (F's sentinel) at its one row
    # part 2's row (c) sent back, its outputs differing: c joins the op path
    _replay(baseline, screen, tmp_path / "q2", Fakes(outputs="differ"), part=(2, 2))
    back, said = _replay(baseline, screen, tmp_path / "m2", Fakes(),
                         parts=[tmp_path / "p1", tmp_path / "q2"])  # fmt: skip
    assert "main/c" not in back.replayed_ops  # its one changed row: through FlagGems
    (line,) = [x for x in said if "expected about" in x]
    assert "3 op(s) through FlagGems " in line


def test_the_l2_policy_sets_the_plans_flush_and_restore_and_the_run_names_it(tmp_path):
    """gate --replay-l2: the plan the worker reads carries the policy's three settings
    (models.replay.L2_POLICIES), the same for both sides, and replay.json names it."""
    baseline, screen, _ = _baseline(tmp_path)
    want = {
        "flush": (True, "zero", True),
        "clean": (True, "read", True),
        "warm": (False, "zero", False),
    }
    for policy, settings in want.items():
        fakes = Fakes()
        outcome, _ = _replay(baseline, screen, tmp_path / policy, fakes, l2=policy)
        plan = fakes.plan
        assert (plan.flush, plan.flush_by, plan.restore_each) == settings, policy
        assert outcome.run.l2 == policy
        on_disk = load_json_model(tmp_path / policy / "replay" / "replay.json", ReplayRun)
        assert on_disk.l2 == policy
    fakes = Fakes()
    _replay(baseline, screen, tmp_path / "default", fakes)
    assert (fakes.plan.flush, fakes.plan.flush_by, fakes.plan.restore_each) == want["warm"]
    # and each row's captured run order reaches the worker with it
    assert {r.key.op: r.order for r in fakes.plan.rows} == {"a": [0], "c": None}


def test_parts_that_are_not_one_plans_every_part_once_are_refused_in_one_line(tmp_path):
    baseline, screen, _ = _baseline(tmp_path)
    for k in (1, 2):
        _replay(baseline, screen, tmp_path / f"p{k}", Fakes(), part=(k, 2))
    whole = tmp_path / "whole"
    _replay(baseline, screen, whole, Fakes())
    p1, p2 = tmp_path / "p1", tmp_path / "p2"

    def refused(parts, **kw) -> str:
        with pytest.raises(ZlbenchError) as e:
            _replay(baseline, screen, tmp_path / "final", Fakes(), parts=parts, **kw)
        assert "\n" not in str(e.value)
        return str(e.value)

    assert "not one of 1 parts" in refused([p1])  # a part missing
    assert "not one of 2 parts" in refused([p1, whole])  # not a part
    assert "given twice" in refused([p1, p1])
    assert "nothing" in refused([p1, tmp_path / "nothing"])  # no gate dir there
    # a part of another plan: it left another row to the op path
    run_ = load_json_model(p2 / "replay" / "replay.json", ReplayRun)
    run_.changed_rows = 4
    dump_json_model(p2 / "replay" / "replay.json", run_)
    assert "has 4 changed rows, this plan 3" in refused([p1, p2])
    run_.changed_rows = 3
    origin = run_.planned_from  # the baseline's manifest digest and both compilers
    assert origin.startswith("baseline ") and "; PR " in origin and "; base " in origin
    run_.planned_from = origin.replace("; PR ", "; PR another ")
    dump_json_model(p2 / "replay" / "replay.json", run_)
    assert "was planned from" in refused([p1, p2])  # another compiler's part
    run_.planned_from = origin
    dump_json_model(p2 / "replay" / "replay.json", run_)
    # parts timed under one L2 policy, merged by a gate that asks another
    assert "was timed under --replay-l2 warm, this gate asks flush" in refused([p1, p2], l2="flush")
    run_.gpu = "NVIDIA H200"
    dump_json_model(p2 / "replay" / "replay.json", run_)
    assert "replayed on NVIDIA H200, this runner is NVIDIA H100" in refused([p1, p2])
    # a row in two parts; a part that proves other rows by their capture
    run_.gpu = "NVIDIA H100 80GB HBM3"
    dump_json_model(p2 / "replay" / "replay.json", run_)
    run1 = load_json_model(p1 / "replay" / "replay.json", ReplayRun)
    twice = run1.model_copy(update={"rows": [*run1.rows, *run_.rows]})
    twice.rows = list({r.key: r for r in twice.rows}.values())
    dump_json_model(p1 / "replay" / "replay.json", twice)
    assert "replayed by two parts" in refused([p1, p2])
    dump_json_model(
        p1 / "replay" / "replay.json", run1.model_copy(update={"no_launch": [key("b")]})
    )
    assert "proves other rows by their capture" in refused([p1, p2])
    dump_json_model(p1 / "replay" / "replay.json", run1)
    # a part's samples count for its own rows only: p1's forged samples of p2's row
    run_.gpu = "NVIDIA H100 80GB HBM3"
    dump_json_model(p2 / "replay" / "replay.json", run_)
    theirs = load_json_model(p2 / "replay" / "pairs.json", PairsFile)
    forged = [q.model_copy(update={"samples": q.samples[:2]}) for q in theirs.rows]
    pairs1 = load_json_model(p1 / "replay" / "pairs.json", PairsFile)
    dump_json_model(p1 / "replay" / "pairs.json", PairsFile(rows=[*pairs1.rows, *forged]))
    _replay(baseline, screen, tmp_path / "final2", Fakes(), parts=[p1, p2])
    kept = load_json_model(tmp_path / "final2" / "replay" / "pairs.json", PairsFile)
    assert [q for q in kept.rows if q.key == theirs.rows[0].key] == theirs.rows
    # a planned row that no part lists goes to the op path
    mine = [r for r in run_.rows if r.instrument == "kernel-replay"]
    run_.rows = [r for r in run_.rows if r.instrument != "kernel-replay"]
    dump_json_model(p2 / "replay" / "replay.json", run_)
    merged, _ = _replay(baseline, screen, tmp_path / "final3", Fakes(), parts=[p1, p2])
    (gone,) = [r for r in merged.run.rows if r.key == mine[0].key]
    assert gone.instrument == "op" and gone.why == "not replayed by its part"
