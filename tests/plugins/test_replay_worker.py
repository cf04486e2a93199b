"""The replay worker (zlbench.plugins.replay.worker) with injected fakes: the plan's
validation (a row that cannot be replayed falls back with one line and launches
nothing; a malformed plan is exit 2 with one line), its outputs (rows.jsonl: each row
as it ends, the samples of the replayed rows only: a failing row has none), the sides'
launch callables, the line protocol, a broken device stopping the worker, and the
caller's restarts after a worker dies, hangs or breaks its device (real processes,
fake seams). Loading real binaries end to end: tests/plugins/test_replay_binaries.py."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import (
    REPLAY_PAIRS,
    ArgSpec,
    BinaryRef,
    CompileRequest,
    LaunchSpec,
    PairsFile,
    PlannedRow,
    ReplayPlanFile,
    ReplayRun,
    RowKey,
    dump_json_model,
    load_json_model,
)
from zlbench.models.codegen import KernelConfig, KernelSource, Target
from zlbench.models.replay import QUARANTINED
from zlbench.plugins.replay import worker
from zlbench.plugins.replay.binaries import DIFFERS
from zlbench.plugins.replay.materialize import ReplayError
from zlbench.plugins.replay.timing import Paired

REPO = Path(__file__).resolve().parents[2]
SIDES = ("pr", "base")
SAMPLES = [{"side": "pr", "ms": 1.0}, {"side": "base", "ms": 1.1},
           {"side": "base", "ms": 1.2}, {"side": "pr", "ms": 1.05}]  # fmt: skip


def request(kid: str) -> CompileRequest:
    return CompileRequest(
        kernel=KernelSource(
            name=f"k_{kid}", module="m", qualname=f"k_{kid}", source_sha256="0" * 64
        ),  # fmt: skip
        signature={"X": "*fp32", "N": "i32"},
        config=KernelConfig(num_warps=4, num_stages=3),
        target=Target(backend="cuda", arch=90, warp_size=32),
    )


def spec(kid: str, buffer: int = 0, count: int = 1, why_not: str = "") -> LaunchSpec:
    x = ArgSpec(name="X", kind="tensor", dtype="float32", shape=[4], strides=[1], storage=4,
                buffer=buffer, data=[1.0, 2.0, 3.0, 4.0])  # fmt: skip
    n = ArgSpec(name="N", kind="int", value=4)
    return LaunchSpec(kernel_id=kid, kernel=f"k_{kid}", grid=[4, 1, 1], args=[x, n],
                      count=count, why_not=why_not)  # fmt: skip


def key(op: str) -> RowKey:
    return RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape="[4]")


def row(op: str, *launches: LaunchSpec, sides=SIDES, kids=None) -> PlannedRow:
    kids = kids if kids is not None else [s.kernel_id for s in launches]
    binaries = {
        k: {s: BinaryRef(group_dir=f"/g/{s}/{k}", code_digest=f"{s}-{k}") for s in sides}
        for k in kids
    }
    return PlannedRow(key=key(op), launches=list(launches), binaries=binaries)


def plan_of(*rows: PlannedRow, **kw) -> ReplayPlanFile:
    kids = {s.kernel_id for r in rows for s in r.launches}
    return ReplayPlanFile(device="cpu", rows=list(rows),
                          requests={k: request(k) for k in sorted(kids)}, **kw)  # fmt: skip


def test_a_plan_holding_non_finite_values_reads_back(tmp_path):
    """The gate writes plan.json and the worker reads it: a -inf or NaN in a capture
    (flash-attention's 0-d tensor) came back as null and the plan was refused."""
    x = ArgSpec(name="X", kind="tensor", dtype="float32", shape=[], strides=[], storage=1,
                data=[float("-inf")])  # fmt: skip
    n = ArgSpec(name="N", kind="float", value=float("nan"))
    plan = plan_of(row("fa", LaunchSpec(kernel_id="a", kernel="k_a", grid=[1, 1, 1],
                                        args=[x, n])))  # fmt: skip
    dump_json_model(tmp_path / "plan.json", plan)
    back = load_json_model(tmp_path / "plan.json", ReplayPlanFile)
    args = back.rows[0].launches[0].args
    assert args[0].data == [float("-inf")] and math.isnan(args[1].value)


class Fake:
    """Seams that log what the worker asks of them. Kernel ids in ``refuse`` fail to
    load (a digest mismatch); those in ``differ`` give other outputs on the PR's side."""

    def __init__(self, refuse=(), differ=(), healthy=True, noisy=(), spread=0.25):
        self.refuse, self.differ, self.ok = set(refuse), set(differ), healthy
        self.noisy = set(noisy)  # kernel ids whose base differs from itself run again
        # by this much (PR vs base: 0.5); a list: the base's second run, third...
        self.spreads = list(spread) if isinstance(spread, list) else [spread]
        self.pr_error = 0.5  # PR against the base, for kernel ids in ``differ``
        self.outputs_runs = 0
        self.loads: list[tuple[str, str]] = []
        self.launches: list[tuple] = []
        self.seeds: list[int] = []
        self.timers: list[int] = []  # the launches each row's timer was made for
        self.settles: list[int] = []  # the plan's settle, as each row's timing got it
        self.flushes: list[object] = []  # the flush each row's timing got (None: none)
        self.targets: list[object] = []  # the plan's sample_ms, as each row's timing got it
        self.restores: list[bool] = []  # the plan's restore_each, as each row's timing got it

    def seams(self) -> worker.Seams:
        return worker.Seams(
            binaries=lambda plan: self,
            materialize=self.materialize,
            check_args=lambda req, args: None,
            launch=lambda kernel, grid, args: self.launches.append((kernel, tuple(grid),
                                                                    tuple(args))),
            timer=self.timer,
            flush=lambda device, by: f"flush@{device}:{by}",
            time_paired=self.time_paired,
            side_outputs=self.side_outputs,
            compare_outputs=self.compare,
            healthy=lambda device: self.ok,
        )  # fmt: skip

    def get(self, kid, side, ref):
        if kid in self.refuse:
            raise ReplayError(DIFFERS)
        self.loads.append((kid, side))
        assert ref.code_digest == f"{side}-{kid}"
        return f"{kid}@{side}"

    def close(self):
        pass

    def timer(self, device, launches):
        self.timers.append(launches)

    def materialize(self, launches, device, seeds):
        self.seeds += list(seeds)
        return [[f"{launch.kernel_id}:X", 4] for launch in launches]

    def time_paired(
        self, launch, args, *, rule, timer, flush, warmup, reps, target_ms, settle, restore_each
    ):
        self.settles.append(settle)
        self.restores.append(restore_each)
        self.flushes.append(flush)
        self.targets.append(target_ms)
        for side in SIDES:
            launch[side](args)
        return Paired([dict(s) for s in SAMPLES], reps - 7)

    def side_outputs(self, launch, args):
        self.outputs_runs += 1
        run = self.outputs_runs
        return {s: [(s, run, a) for a in args] for s in SIDES}

    def compare(self, pr, base, *, rtol, atol):
        kids = {str(a).split(":")[0] for _, _, a in pr}
        if pr[0][0] == "pr":  # PR against the base
            return (False, self.pr_error) if kids & self.differ else (True, 0.0)
        if pr[0][1] == base[0][1]:  # one run's outputs against themselves
            return True, 0.0
        if not kids & self.noisy:  # the base again
            return True, 0.0
        return False, self.spreads[min(base[0][1] - 2, len(self.spreads) - 1)]


def run_main(tmp_path, plan: ReplayPlanFile | str, fake: Fake, *extra: str) -> int:
    path = tmp_path / "plan.json"
    if isinstance(plan, str):
        path.write_text(plan, encoding="utf-8")
    else:
        dump_json_model(path, plan)
    return worker.main([str(path), str(tmp_path / "out"), *extra], seams=fake.seams())


def outputs(out: Path) -> tuple[ReplayRun, PairsFile]:
    return worker.read_outputs(out)


def test_rows_json_and_pairs_json_a_failing_row_has_no_samples(tmp_path, capsys):
    plan = plan_of(
        row("good", spec("a")),
        row("refused", spec("r")),
        row("differs", spec("d")),
    )
    fake = Fake(refuse={"r"}, differ={"d"})
    assert run_main(tmp_path, plan, fake) == 0
    run, pairs = outputs(tmp_path / "out")
    got = {r.key.op: r for r in run.rows}
    assert [r.key.op for r in run.rows] == ["good", "refused", "differs"]
    assert got["good"].instrument == "kernel-replay"
    assert (got["good"].outputs, got["good"].pairs, got["good"].kernels) == ("match", 2, ["a"])
    assert got["refused"].instrument == "op"
    assert got["refused"].why == "replayed binary differs from the screen's"
    assert got["differs"].instrument == "op"
    assert got["differs"].outputs == "differ"
    differ = "PR and base outputs differ after replay (max error 0.5)"
    assert got["differs"].why == f"{differ}; the base's own two runs agree"
    assert [p.key.op for p in pairs.rows] == ["good"]
    assert [s.model_dump(include={"side", "ms"}) for s in pairs.rows[0].samples] == SAMPLES
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "ZLBENCH_COMPILED 0 ok",
        "ZLBENCH_COMPILED 1 failed replayed binary differs from the screen's",
        f"ZLBENCH_COMPILED 2 failed {differ}; the base's own two runs agree",
        f"ZLBENCH_REPLAY rows=3 failed=2 out={tmp_path / 'out'}",
    ]


def test_outputs_that_differ_say_whether_the_base_differs_from_itself(tmp_path):
    """A row whose PR and base outputs differ (max error 0.5) runs the base again: where
    its runs differ by 0.1 from its first, the PR is farther off than the base's spread
    allows (RACY_MARGIN 2) however often it runs, and the row falls back after
    BASE_RUNS base runs, its line saying both; a row whose outputs match runs them
    once."""
    plan = plan_of(row("wild", spec("n")), row("fine", spec("a")))
    fake = Fake(differ={"n"}, noisy={"n"}, spread=0.1)
    assert run_main(tmp_path, plan, fake) == 0
    run, pairs = outputs(tmp_path / "out")
    wild, fine = run.rows
    assert wild.why == ("PR and base outputs differ after replay (max error 0.5); "
                        "the base's own five runs differ too (max error 0.1)")  # fmt: skip
    assert (wild.instrument, wild.outputs, wild.max_error) == ("op", "differ", 0.5)
    assert (wild.base_spread, wild.base_runs) == (0.1, 5) and not wild.timed_by_replay
    assert fine.instrument == "kernel-replay" and [p.key.op for p in pairs.rows] == ["fine"]
    assert fake.outputs_runs == 6  # five for the row that differs, once for the fine one


def test_the_base_runs_again_until_its_spread_covers_the_pr(tmp_path):
    """The base's second run 0.1 from its first, its third 0.3: after the third the PR's
    0.5 is within RACY_MARGIN of the base's spread, so the row races and the runs stop
    there, the largest of the base's errors kept."""
    fake = Fake(differ={"n"}, noisy={"n"}, spread=[0.1, 0.3, 0.05])
    assert run_main(tmp_path, plan_of(row("racy", spec("n"))), fake) == 0
    run, pairs = outputs(tmp_path / "out")
    (racy,) = run.rows
    assert (racy.outputs, racy.base_spread, racy.base_runs) == ("racy", 0.3, 3)
    assert racy.timed_by_replay and [p.key.op for p in pairs.rows] == ["racy"]
    assert fake.outputs_runs == 3  # the timed sides' own run and the base twice again
    never = Fake(differ={"n"}, noisy={"n"}, spread=[0.1, 0.2, 0.05])
    assert run_main(tmp_path / "2", plan_of(row("wide", spec("n"))), never) == 0
    (wide,) = outputs(tmp_path / "2" / "out")[0].rows
    assert (wide.outputs, wide.base_spread, wide.base_runs) == ("differ", 0.2, 5)
    infinite = Fake(differ={"n"}, noisy={"n"}, spread=[0.1, 0.3])
    infinite.pr_error = math.inf  # no spread covers it: the base runs once more only
    assert run_main(tmp_path / "3", plan_of(row("inf", spec("n"))), infinite) == 0
    (inf,) = outputs(tmp_path / "3" / "out")[0].rows
    assert (inf.outputs, inf.max_error, inf.base_spread, inf.base_runs) == ("differ", None, 0.1, 2)


def test_outputs_that_race_as_the_base_does_are_timed_by_the_replay(tmp_path):
    """PR vs base 0.5, the base's own two runs 0.25 apart: the outputs race (within
    RACY_MARGIN times the base's spread), and the row counts as replayed, its samples
    kept and both errors recorded for the judge. The base agreeing with itself: the
    same row falls back."""
    fake = Fake(differ={"n"}, noisy={"n"}, spread=0.25)
    assert run_main(tmp_path, plan_of(row("racy", spec("n"))), fake) == 0
    run, pairs = outputs(tmp_path / "out")
    (racy,) = run.rows
    assert (racy.instrument, racy.outputs, racy.why) == ("kernel-replay", "racy", "")
    assert (racy.max_error, racy.base_spread, racy.pairs, racy.base_runs) == (0.5, 0.25, 2, 2)
    assert racy.timed_by_replay and [p.key.op for p in pairs.rows] == ["racy"]
    steady = Fake(differ={"n"})
    assert run_main(tmp_path / "2", plan_of(row("racy", spec("n"))), steady) == 0
    run, pairs = outputs(tmp_path / "2" / "out")
    (row_,) = run.rows
    assert (row_.instrument, row_.outputs, row_.base_spread) == ("op", "differ", None)
    assert row_.why.endswith("the base's own two runs agree") and pairs.rows == []
    assert steady.outputs_runs == 2  # the base agreeing once ends its runs


def test_each_row_is_on_disk_before_its_line_and_a_torn_line_is_no_row(tmp_path):
    """rows.jsonl grows a line per row as it ends, written before the row's line on
    stdout (the caller trusts a row only where both say so); a line cut by a killed
    worker is not a row, the lines before it still are."""
    plan = plan_of(row("one", spec("a")), row("two", spec("r")), row("three", spec("b")))
    out = tmp_path / "out"
    seen: list[list[str]] = []

    def on_row(i, why):
        seen.append([r.key.op for r in worker.read_outputs(out)[0].rows])

    assert worker.replay_plan(plan, out, Fake(refuse={"r"}).seams(), on_row=on_row) == 0
    assert seen == [["one"], ["one", "two"], ["one", "two", "three"]]
    text = (out / worker.ROWS_JSONL).read_text(encoding="utf-8")
    assert len(text.splitlines()) == 3
    (out / worker.ROWS_JSONL).write_text(text[: len(text) - 40], encoding="utf-8")
    run, pairs = worker.read_outputs(out)
    assert [r.key.op for r in run.rows] == ["one", "two"]
    assert [p.key.op for p in pairs.rows] == ["one"]


def test_a_replayed_row_says_where_its_seconds_went_the_device_synced_at_each_phase(tmp_path):
    """load, materialize, time, outputs: each phase's host seconds, the device synced at
    its end (its queued GPU work counted in it); a row that fell back has none."""
    fake = Fake(refuse={"r"})
    synced: list[str] = []
    seams = fake.seams()
    seams.sync = synced.append
    plan = plan_of(row("good", spec("a")), row("refused", spec("r")))
    assert worker.replay_plan(plan, tmp_path / "out", seams) == 0
    good, refused = worker.read_outputs(tmp_path / "out")[0].rows
    assert list(good.phases) == ["load", "materialize", "time", "outputs"]
    assert all(v >= 0 for v in good.phases.values())
    assert synced == ["cpu"] * 4  # one sync at the end of each phase of the good row
    assert refused.phases == {}


def test_no_rows_jsonl_is_one_line(tmp_path):
    with pytest.raises(ZlbenchError, match=r"rows\.jsonl: No such file"):
        worker.read_outputs(tmp_path)


@pytest.mark.parametrize(
    ("planned", "why"),
    [
        (row("m", spec("a"), sides=("pr",)), "kernel a: no base binary"),
        (row("m", spec("a"), kids=[]), "kernel a: no pr and no base binary"),
        (row("m", spec("a", why_not="graph")), "launch of k_a not replayable: graph"),
        (
            row("m", spec("a"), spec("b", buffer=0, count=2)),
            "intermediate buffer between launches that run more than once",
        ),
        (  # an order that is not the launches' runs (b ran twice) is no order
            row("m", spec("a"), spec("b", buffer=0, count=2)).model_copy(update={"order": [0, 1]}),
            "intermediate buffer between launches that run more than once",
        ),
    ],
    ids=[
        "one side missing",
        "absent from the binaries",
        "why_not",
        "intermediate buffer",
        "an order not of its runs",
    ],
)
def test_a_row_that_cannot_be_replayed_falls_back_with_one_line(tmp_path, planned, why):
    fake = Fake()
    assert run_main(tmp_path, plan_of(planned), fake) == 0
    run, pairs = outputs(tmp_path / "out")
    assert [(r.instrument, r.why) for r in run.rows] == [("op", why)]
    assert pairs.rows == []
    assert fake.loads == fake.launches == []  # nothing loaded, nothing launched


def test_a_buffer_passed_between_launches_that_run_once_is_replayed_as_one_row(tmp_path):
    fake = Fake()
    plan = plan_of(row("m", spec("a", buffer=0), spec("b", buffer=0)))
    assert run_main(tmp_path, plan, fake) == 0
    run, pairs = outputs(tmp_path / "out")
    assert [(r.instrument, r.why) for r in run.rows] == [("kernel-replay", "")]
    assert [p.key.op for p in pairs.rows] == ["m"]
    k = key("m")
    assert fake.seeds == [worker.row_seed(k, 0), worker.row_seed(k, 1)]  # one call, the row


def test_a_buffer_passed_between_launches_run_in_a_captured_order_is_replayed_so(tmp_path):
    """A counter reset (a, twice) between two passes (b, c) on its buffer: with the
    capture's run order each side's call runs a b a c, and the timer leads 4 launches."""
    fake = Fake()
    planned = row("m", spec("a", buffer=0, count=2), spec("b", buffer=0), spec("c", buffer=0))
    plan = plan_of(planned.model_copy(update={"order": [0, 1, 0, 2]}))
    assert run_main(tmp_path, plan, fake) == 0
    run, pairs = outputs(tmp_path / "out")
    assert [(r.instrument, r.why) for r in run.rows] == [("kernel-replay", "")]
    grid = (4, 1, 1)
    ran = {side: [(f"{k}@{side}", grid, (f"{k}:X", 4)) for k in "abac"] for side in SIDES}
    assert fake.launches == ran["pr"] + ran["base"]
    assert fake.timers == [4]


def test_a_launch_whose_kernel_has_no_compile_request_falls_back(tmp_path):
    plan = plan_of(row("m", spec("a")))
    plan.requests = {}
    assert run_main(tmp_path, plan, Fake()) == 0
    run, _ = outputs(tmp_path / "out")
    assert run.rows[0].why == "kernel a: no compile request in the plan"


def test_each_side_launches_its_own_binaries_in_launch_order_count_times(tmp_path):
    fake = Fake()
    plan = plan_of(row("m", spec("a", buffer=0), spec("b", buffer=1, count=2)), settle=2)
    assert run_main(tmp_path, plan, fake) == 0
    assert fake.settles == [2]  # the plan's first-sample probe reaches the timing
    assert fake.targets == [plan.sample_ms]  # and the span a sample's calls aim at
    run, _ = outputs(tmp_path / "out")
    assert run.rows[0].reps == plan.reps - 7  # the calls a sample took, as the timing said
    assert fake.flushes == [f"flush@{plan.device}:zero"]  # L2 flushed by zeroing: the default
    assert fake.restores == [True]  # and the inputs restored before each timed call
    warm = Fake()
    assert run_main(tmp_path / "warm", plan.model_copy(update={"flush": False}), warm) == 0
    assert warm.flushes == [None]  # the L2-warm probe: no flush reaches the timing
    clean = Fake()  # the probes of written lines: a reading flush, a restore a sample
    probe = plan.model_copy(update={"flush_by": "read", "restore_each": False})
    assert run_main(tmp_path / "clean", probe, clean) == 0
    assert (clean.flushes, clean.restores) == ([f"flush@{plan.device}:read"], [False])
    grid = (4, 1, 1)
    calls = {
        side: [("a@" + side, grid, ("a:X", 4))] + [("b@" + side, grid, ("b:X", 4))] * 2
        for side in SIDES
    }
    assert fake.launches == calls["pr"] + calls["base"]  # the fake time_paired: pr, base
    assert sorted(fake.loads) == [("a", "base"), ("a", "pr"), ("b", "base"), ("b", "pr")]
    k = key("m")
    assert fake.seeds == [worker.row_seed(k, 0), worker.row_seed(k, 1)]
    assert len(set(fake.seeds)) == 2
    assert fake.timers == [3]  # the timer's lead covers a side's 3 launches (a, b, b)


def test_the_timers_lead_spin_covers_every_launch_of_a_call():
    from zlbench.plugins.replay import timing

    assert timing.lead_cycles_for(1) == timing.LEAD_CYCLES
    assert timing.lead_cycles_for(3) == 3 * timing.LEAD_CYCLES
    assert timing.lead_cycles_for(0) == timing.LEAD_CYCLES  # never no lead on a GPU


def test_the_seed_is_a_hash_of_the_row_key():
    assert worker.row_seed(key("m"), 0) == worker.row_seed(key("m"), 0)
    assert worker.row_seed(key("m"), 0) != worker.row_seed(key("n"), 0)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "plan.json"),
        (json.dumps({"kind": "replay_plan", "rows": [{"key": {}}]}), "plan.json"),
        (json.dumps({"kind": "replay_plan", "rule": "{"}), "rule"),
    ],
    ids=["not json", "invalid row", "bad rule"],
)
def test_a_malformed_plan_is_exit_2_with_one_line(tmp_path, capsys, text, says):
    assert run_main(tmp_path, text, Fake()) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert len(err.err.strip().splitlines()) == 1
    assert err.err.startswith("zlbench: ") and says in err.err
    assert not (tmp_path / "out" / worker.ROWS_JSONL).exists()


def test_a_skip_past_the_plan_is_exit_2(tmp_path, capsys):
    assert run_main(tmp_path, plan_of(row("m", spec("a"))), Fake(), "--skip", "2") == 2
    assert "--skip 2: the plan has 1 rows" in capsys.readouterr().err


def test_a_row_that_breaks_the_device_stops_the_worker(tmp_path, capsys):
    """A failed row after which the device is broken: its line, its fallback in
    rows.json, exit POISONED and no end line (the caller restarts for the rest)."""
    plan = plan_of(row("bad", spec("r")), row("next", spec("a")))
    fake = Fake(refuse={"r"}, healthy=False)
    assert run_main(tmp_path, plan, fake) == worker.POISONED
    run, pairs = outputs(tmp_path / "out")
    assert [r.key.op for r in run.rows] == ["bad"]
    assert pairs.rows == []
    out = capsys.readouterr().out.splitlines()
    assert out == ["ZLBENCH_COMPILED 0 failed replayed binary differs from the screen's"]


def test_a_skipped_worker_starts_at_its_row(tmp_path, capsys):
    plan = plan_of(row("first", spec("a")), row("second", spec("b")))
    assert run_main(tmp_path, plan, Fake(), "--skip", "1") == 0
    run, _ = outputs(tmp_path / "out")
    assert [r.key.op for r in run.rows] == ["second"]
    assert capsys.readouterr().out.splitlines()[0] == "ZLBENCH_COMPILED 1 ok"


def test_rows_the_caller_avoids_are_not_tried_and_have_no_line(tmp_path, capsys):
    plan = plan_of(row("a", spec("a")), row("b", spec("b")), row("c", spec("c")))
    fake = Fake()
    assert run_main(tmp_path, plan, fake, "--avoid", "0,2") == 0
    run, _ = outputs(tmp_path / "out")
    assert [r.key.op for r in run.rows] == ["b"]
    assert {kid for kid, _ in fake.loads} == {"b"}
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ZLBENCH_COMPILED 1 ok"
    assert out[-1].startswith("ZLBENCH_REPLAY rows=1 failed=0")


def test_an_avoid_list_that_is_not_row_indices_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        run_main(tmp_path, plan_of(row("a", spec("a"))), Fake(), "--avoid", "1,x")
    assert e.value.code == 2
    assert "not row indices: '1,x'" in capsys.readouterr().err


def test_a_warm_worker_loads_first_and_reads_its_plan_only_once_told_go(
    tmp_path, capsys, monkeypatch
):
    """--warm: the runtime loads before the plan is read, and the plan is read only
    after ``go`` on stdin (a plan file of an earlier gate there is never read early)."""
    import io

    fake, order = Fake(), []
    seams = fake.seams()
    seams.warm = lambda: order.append("warm")
    path = tmp_path / "plan.json"

    def readline():  # the caller writes the plan, then says go
        order.append("go")
        dump_json_model(path, plan_of(row("fresh", spec("a"))))
        return "go\n"

    dump_json_model(path, plan_of(row("stale", spec("a"))))
    monkeypatch.setattr("sys.stdin", type("In", (), {"readline": staticmethod(readline)})())
    assert worker.main([str(path), str(tmp_path / "out"), "--warm"], seams=seams) == 0
    assert order == ["warm", "go"]
    run, _ = outputs(tmp_path / "out")
    assert [r.key.op for r in run.rows] == ["fresh"]
    assert "replay worker warmed up in" in capsys.readouterr().err
    # anything but go (or stdin's end): exit 2, one line, no row
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    out2 = tmp_path / "out2"
    assert worker.main([str(path), str(out2), "--warm"], seams=seams) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "zlbench: replay: the caller said '', not 'go': no row replayed"
    assert not (out2 / worker.ROWS_JSONL).exists()


# --------------------------------------------------------------------------- the caller

FAKE_WORKER = textwrap.dedent("""
    import os, sys, time
    from zlbench.plugins.replay import worker
    from zlbench.plugins.replay.materialize import ReplayError
    from zlbench.plugins.replay.timing import Paired

    state = {"ok": True}

    class Loaded:
        def get(self, kid, side, ref):
            return kid
        def close(self):
            pass

    def materialize(launches, device, seeds):
        what = launches[0].kernel_id
        if what == "die":
            os._exit(9)
        if what == "hang":
            time.sleep(600)
        if what == "slow":
            time.sleep(2)
        if what == "poison":
            state["ok"] = False
            raise ReplayError("illegal memory access")
        return [[what]]

    def time_paired(launch, args, **kw):
        return Paired([{"side": "pr", "ms": 1.0}, {"side": "base", "ms": 1.0}], 10)

    seams = worker.Seams(
        binaries=lambda plan: Loaded(), materialize=materialize,
        check_args=lambda r, a: None, launch=lambda k, g, a: None,
        timer=lambda d, n: None, flush=lambda d, by: None, time_paired=time_paired,
        side_outputs=lambda launch, args: {"pr": args, "base": args},
        compare_outputs=lambda p, b, **kw: (True, 0.0),
        healthy=lambda d: state["ok"],
        warm=lambda: os._exit(7) if os.environ.get("ZL_FAKE_WARM_DIES") else None,
    )
    sys.exit(worker.main(seams=seams))
""")


@pytest.fixture
def fake_worker(tmp_path) -> tuple[str, dict[str, str]]:
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "zl_fake_replay_worker.py").write_text(FAKE_WORKER, encoding="utf-8")
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mods), str(REPO)])}
    return "zl_fake_replay_worker", env


@pytest.mark.proc
def test_the_caller_restarts_after_a_death_a_hang_and_a_broken_device(tmp_path, fake_worker):
    module, env = fake_worker
    ops = ["ok0", "die", "ok2", "hang", "ok4", "poison", "ok6"]
    kid = {"die": "die", "hang": "hang", "poison": "poison"}
    plan = plan_of(*(row(op, spec(kid.get(op, "fine"))) for op in ops), row_timeout_s=3)
    dump_json_model(tmp_path / "plan.json", plan)
    seen: list[tuple[int, str | None]] = []
    run, pairs = worker.run_rows(tmp_path / "plan.json", tmp_path / "out", module=module,
                                 env=env, on_row=lambda i, why: seen.append((i, why)))  # fmt: skip
    got = [(r.key.op, r.instrument) for r in run.rows]
    assert got == [(op, "op" if op in kid else "kernel-replay") for op in ops]
    # the progress hook heard every row a worker ended, as it ended (not the lost ones)
    assert seen == [(0, None), (2, None), (4, None), (5, "illegal memory access"), (6, None)]
    why = {r.key.op: r.why for r in run.rows if r.instrument == "op"}
    assert why["die"].startswith("replay worker died (exit 9)")
    assert why["die"].endswith("; a device fault poisons the process")
    assert why["hang"] == "replay hung: no result within 3 s"
    assert why["poison"] == "illegal memory access"
    assert [p.key.op for p in pairs.rows] == ["ok0", "ok2", "ok4", "ok6"]
    merged = tmp_path / "out"
    assert load_json_model(merged / worker.ROWS_JSON, ReplayRun) == run
    assert load_json_model(merged / REPLAY_PAIRS, PairsFile) == pairs
    assert sorted(p.name for p in (tmp_path / "out").glob("part*")) == [
        "part0", "part1", "part2", "part3"]  # fmt: skip


@pytest.mark.proc
def test_a_row_of_long_calls_is_given_its_own_hang_limit(tmp_path, fake_worker):
    """A row that takes 2 s replays under a 1 s plan limit when it carries its own 6 s
    (a row of long calls: ``PlannedRow.timeout_s``); without it, it is hung at 1 s."""
    module, env = fake_worker
    slow = row("slow", spec("slow"))

    def replay(rows: list[PlannedRow], where: str) -> dict[str, str]:
        plan = plan_of(row("ok0", spec("fine")), *rows, row("ok2", spec("fine")),
                       row_timeout_s=1)  # fmt: skip
        dump_json_model(tmp_path / f"{where}.json", plan)
        run, _ = worker.run_rows(tmp_path / f"{where}.json", tmp_path / where, module=module,
                                 env=env)  # fmt: skip
        return {r.key.op: r.why for r in run.rows}

    assert replay([slow.model_copy(update={"timeout_s": 6})], "own") == dict.fromkeys(
        ["ok0", "slow", "ok2"], ""
    )
    hung = replay([slow], "plan")
    assert hung == {"ok0": "", "slow": "replay hung: no result within 1 s", "ok2": ""}


@pytest.mark.proc
def test_a_hang_after_a_quarantined_row_is_the_hanging_rows(tmp_path, fake_worker):
    """Row 1 dies and quarantines row 3 (its op's, its kernel's); the next worker replays
    row 2, passes row 3 by and hangs in row 4: row 4 is the one hung, and row 3 keeps
    why it was not tried (the row after the last ended one, row 3, took the blame, and a
    third worker hung in row 4 again)."""
    module, env = fake_worker
    again = row("m", spec("die")).model_copy(update={"key": key("m").model_copy(
        update={"shape": "[8]"})})  # fmt: skip
    rows = [row("ok0", spec("fine")), row("m", spec("die")), row("ok2", spec("fine")), again,
            row("h", spec("hang"))]  # fmt: skip
    dump_json_model(tmp_path / "plan.json", plan_of(*rows, row_timeout_s=2))
    run, _ = worker.run_rows(tmp_path / "plan.json", tmp_path / "out", module=module, env=env)
    why = [r.why for r in run.rows]
    assert why[0] == why[2] == "" and why[1].startswith("replay worker died (exit 9)")
    assert why[3] == QUARANTINED.format(kernel="k_die")
    assert why[4] == "replay hung: no result within 2 s"
    assert sorted(p.name for p in (tmp_path / "out").glob("part*")) == ["part0", "part1"]


@pytest.mark.proc
def test_a_broken_device_before_a_quarantined_row_quarantines_its_own_ops_rows(
    tmp_path, fake_worker
):
    """Row 0 dies and quarantines row 3; the next worker breaks the device in row 2,
    the row before row 3: row 2 is the culprit (the last ended, failed), so row 5 (its
    op's, its kernel's) is not tried. (Taking the row before the next one to try, row 3,
    for it found no culprit, and row 5 broke a third worker.)"""
    module, env = fake_worker

    def other(op: str, kid: str) -> PlannedRow:  # the op's row of another shape
        return row(op, spec(kid)).model_copy(update={"key": key(op).model_copy(
            update={"shape": "[8]"})})  # fmt: skip

    rows = [row("m", spec("die")), row("ok1", spec("fine")), row("p", spec("poison")),
            other("m", "die"), row("ok4", spec("fine")), other("p", "poison")]  # fmt: skip
    dump_json_model(tmp_path / "plan.json", plan_of(*rows, row_timeout_s=5))
    run, _ = worker.run_rows(tmp_path / "plan.json", tmp_path / "out", module=module, env=env)
    why = [r.why for r in run.rows]
    assert why[0].startswith("replay worker died (exit 9)") and why[2] == "illegal memory access"
    assert why[3] == QUARANTINED.format(kernel="k_die")
    assert why[5] == QUARANTINED.format(kernel="k_poison") and why[1] == why[4] == ""


@pytest.mark.proc
def test_after_a_break_the_ops_later_rows_of_its_kernel_are_not_tried(tmp_path, fake_worker):
    """A row that broke the device (a fault; a death) quarantines the later rows of its
    op that launch a kernel of its name: they fall back without a worker trying them (a
    fault each, a fresh worker each, before), said to the progress hook; the op's rows
    of other kernels and another op's rows of that kernel are tried."""
    module, env = fake_worker
    rows = [("moe", "poison"), ("moe", "poison"), ("moe", "fine"), ("other", "poison"),
            ("d", "die"), ("moe", "poison"), ("d", "die"), ("d", "fine")]  # fmt: skip
    plan = plan_of(*(row(op, spec(kid)) for op, kid in rows))
    plan.rows = [r.model_copy(update={"key": r.key.model_copy(update={"shape": f"[{i}]"})})
                 for i, r in enumerate(plan.rows)]  # fmt: skip
    dump_json_model(tmp_path / "plan.json", plan)
    seen: list[tuple[int, str | None]] = []
    run, pairs = worker.run_rows(tmp_path / "plan.json", tmp_path / "out", module=module,
                                 env=env, on_row=lambda i, why: seen.append((i, why)))  # fmt: skip
    quarantine = "not tried: kernel `k_{}` broke the replay in an earlier row of this op"
    why = [r.why for r in run.rows]
    assert why[0] == why[3] == "illegal memory access"  # tried: the culprit; another op
    assert why[1] == why[5] == quarantine.format("poison")
    assert why[6] == quarantine.format("die")
    assert why[4].startswith("replay worker died (exit 9)")
    assert [r.instrument for r in run.rows][2::5] == ["kernel-replay", "kernel-replay"]
    assert [p.key.op for p in pairs.rows] == ["moe", "d"]
    assert (1, why[1]) in seen and (5, why[5]) in seen and (6, why[6]) in seen
    # three breaks, four workers (six breaks and seven workers without the quarantine)
    assert len(list((tmp_path / "out").glob("part*"))) == 4


@pytest.mark.proc
def test_two_fresh_workers_that_end_nothing_stop_the_restarts(tmp_path, fake_worker):
    module, env = fake_worker
    plan = plan_of(row("a", spec("die")), row("b", spec("die")), row("c", spec("fine")))
    dump_json_model(tmp_path / "plan.json", plan)
    run, pairs = worker.run_rows(tmp_path / "plan.json", tmp_path / "out", module=module,
                                 env=env)  # fmt: skip
    assert [r.instrument for r in run.rows] == ["op", "op", "op"]
    assert all(r.why.startswith("replay worker died (exit 9)") for r in run.rows)
    assert pairs.rows == []
    assert len(list((tmp_path / "out").glob("part*"))) == 2


@pytest.mark.proc
def test_the_first_worker_started_warm_before_its_plan_replays_it_once_told_go(
    tmp_path, fake_worker
):
    """start_warm before the plan exists (the gate's builds run meanwhile), then
    run_rows(early=) tells it go: it replays the plan written after it started, in
    part0, and no second worker starts."""
    module, env = fake_worker
    path = tmp_path / "plan.json"
    dump_json_model(path, plan_of(row("stale", spec("fine"))))  # an earlier gate's
    early = worker.start_warm(path, tmp_path / "out", module=module, env=env)
    dump_json_model(path, plan_of(row("a", spec("fine")), row("b", spec("fine"))))
    run, pairs = worker.run_rows(path, tmp_path / "out", module=module, env=env, early=early)
    worker.cancel(early)
    assert [(r.key.op, r.instrument) for r in run.rows] == [
        ("a", "kernel-replay"), ("b", "kernel-replay")]  # fmt: skip
    assert [p.name for p in (tmp_path / "out").glob("part*")] == ["part0"]
    log = (tmp_path / "out" / "part0" / "stderr.log").read_text(encoding="utf-8")
    assert "replay worker warmed up in" in log


@pytest.mark.proc
def test_a_warm_worker_that_died_before_go_costs_no_row(tmp_path, fake_worker):
    module, env = fake_worker
    path = tmp_path / "plan.json"
    dump_json_model(path, plan_of(row("a", spec("fine"))))
    early = worker.start_warm(path, tmp_path / "out", module=module,
                              env={**env, "ZL_FAKE_WARM_DIES": "1"})  # fmt: skip
    assert early.wait(timeout=60) == 7
    run, _ = worker.run_rows(path, tmp_path / "out", module=module, env=env, early=early)
    assert [(r.key.op, r.instrument) for r in run.rows] == [("a", "kernel-replay")]


@pytest.mark.proc
def test_a_warm_worker_never_told_go_is_cancelled_and_replays_nothing(tmp_path, fake_worker):
    module, env = fake_worker
    path = tmp_path / "plan.json"
    early = worker.start_warm(path, tmp_path / "out", module=module, env=env)
    worker.cancel(early)
    assert early.poll() is not None
    assert not (tmp_path / "out" / "part0" / worker.ROWS_JSONL).exists()


def test_the_launchers_are_prepared_once_for_the_rows_from_skip_and_a_failure_costs_no_row(
    tmp_path, capsys
):
    fake, got = Fake(), []
    seams = fake.seams()
    seams.prepare = lambda plan, rows, loaded: got.append([r.key.op for r in rows]) or 3
    plan = plan_of(row("first", spec("a")), row("second", spec("b")))
    dump_json_model(tmp_path / "plan.json", plan)
    args = [str(tmp_path / "plan.json"), str(tmp_path / "out"), "--skip", "1"]
    assert worker.main(args, seams=seams) == 0
    assert got == [["second"]]
    assert "zlbench: replay: 3 launcher(s) ready in" in capsys.readouterr().err

    def broken(plan, rows, loaded):
        raise RuntimeError("no C compiler")

    seams.prepare = broken
    assert worker.main([str(tmp_path / "plan.json"), str(tmp_path / "o2")], seams=seams) == 0
    run, _ = outputs(tmp_path / "o2")
    assert [r.instrument for r in run.rows] == ["kernel-replay", "kernel-replay"]
    assert "launchers not built ahead: RuntimeError: no C compiler" in capsys.readouterr().err


def test_the_launchers_are_prepared_a_chunk_of_rows_at_a_time(tmp_path, monkeypatch):
    """Each chunk's binaries and launchers just before its first row: the pause stays
    within one row's timeout however long the plan (v7: ~6,000 rows)."""
    monkeypatch.setattr(worker, "PREPARE_ROWS", 2)
    fake, got = Fake(), []
    seams = fake.seams()
    seams.prepare = lambda plan, rows, loaded: got.append([r.key.op for r in rows]) or 0
    plan = plan_of(*(row(f"r{i}", spec("a")) for i in range(5)))
    dump_json_model(tmp_path / "plan.json", plan)
    assert worker.main([str(tmp_path / "plan.json"), str(tmp_path / "out")], seams=seams) == 0
    assert got == [["r0", "r1"], ["r2", "r3"], ["r4"]]
