"""The gate's codegen step (zlbench.workflow.codegen) with its seams faked: the
screen before measuring, ``--time changed`` (only unproven ops and sentinels
timed; the skipped ops not judged MISSING), the explanation of every REGRESSION
row in report.md, junit.xml, verdict.json and report.html, a kernel that stops
compiling failing the gate, a v1 baseline gating with a note, and ``zlbench
report`` re-judging the gate dir the same way. The real screen: tests/e2e/
test_gate_codegen_e2e.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.codegen.screen import ScreenOptions
from zlbench.errors import ZlbenchError
from zlbench.models import (
    CodegenClass,
    CodegenScreen,
    GateVerdict,
    KernelScreen,
    Resources,
    RowKey,
    Selection,
    TimingPlanFile,
    dump_json_model,
    load_json_model,
)
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

S = "[1024]"
DIFF = "--- baseline/k.ttgir\n+++ current/k.ttgir\n-  ttg.mma_v3\n+  ttg.fma\n"


def key(op: str, shape: str = S) -> RowKey:
    return RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape)


def kernel(name: str, op: str, status: CodegenClass, **kw) -> KernelScreen:
    shapes = [S, "[8]"] if op == "add" else [S]
    return KernelScreen(
        kernel_id=f"id{name}",
        name=name,
        config="BLOCK=64 num_warps=4 num_stages=3",
        status=status,
        ops=[f"main/{op}"],
        rows=[key(op, s) for s in shapes],
        **kw,
    )


MM_CHANGED = kernel(
    "mm_kernel",
    "mm",
    CodegenClass.TTGIR,
    first_stage="ttgir",
    baseline=Resources(n_regs=96, sass_instructions=900),
    current=Resources(n_regs=104, sass_instructions=1072),
    deltas={"n_regs": 8, "sass_instructions": 172},
    diff_file="diffs/idmm_kernel.diff",
)
ADD_SAME = kernel("add_kernel", "add", CodegenClass.IDENTICAL)
MM_FAILED = kernel("mm_kernel", "mm", CodegenClass.FAILED, error="RuntimeError: no dot")


class FakeScreen:
    """The screen seam: writes codegen.json (+ diffs) into opts.out like the real one."""

    def __init__(self, *kernels: KernelScreen):
        self.kernels = list(kernels)
        self.calls: list[ScreenOptions] = []

    def __call__(self, opts: ScreenOptions, say) -> CodegenScreen:
        self.calls.append(opts)
        counts: dict[str, int] = {}
        for k in self.kernels:
            counts[k.status.value] = counts.get(k.status.value, 0) + 1
            if k.diff_file and not k.diff_file.startswith(".."):
                (opts.out / k.diff_file).parent.mkdir(parents=True, exist_ok=True)
                (opts.out / k.diff_file).write_text(DIFF)
        s = CodegenScreen(baseline_dir=str(opts.baseline), counts=counts, kernels=self.kernels)
        dump_json_model(opts.out / "codegen.json", s)
        return s


class FakeBatch:
    """The measure seam: writes each request's ops from ``results`` into a batch dir."""

    def __init__(self, results):
        self.results = results
        self.requests = []

    def __call__(self, req):
        self.requests.append(req)
        write_results(req.out_dir, [r for r in self.results if f"main/{r.run_name}" in req.ops])
        return req.out_dir, 0


def good():
    return [
        run_result("add", [crow("add", S, 1.0), crow("add", "[8]", 2.0)]),
        run_result("mm", [crow("mm", S, 0.8)]),
        run_result("sum", [crow("sum", S, 1.0)]),
    ]


def mm_slower():
    res = good()
    res[1] = run_result("mm", [crow("mm", S, 0.6)])
    return res


def baseline(root: Path, records: bool = True) -> Path:
    """add, mm, sum; with ``records``, a codegen index so the gate screens it."""
    if records:
        for op in ("add", "mm", "sum"):
            cg = root / "main" / op / "codegen"
            cg.mkdir(parents=True)
            (cg / "index.json").write_text("{}")  # the fake screen never reads it
    ops = {
        "add": [brow("add", S, 1.0), brow("add", "[8]", 2.0)],
        "mm": [brow("mm", S, 0.8)],
        "sum": [brow("sum", S, 1.0)],
    }
    return write_baseline(root, ops)


@pytest.fixture
def ops_dir(tmp_path) -> Path:
    d = tmp_path / "ops"
    d.mkdir()
    (d / "sentinels.txt").write_text("# always timed\nsum\n")
    return d


def gate(tmp_path, bl, ops_dir, screen, measure, **kw):
    out, err = tmp_path / "out", io.StringIO()
    job = GateJob(
        baseline=str(bl), out=out, selection=Selection(ops_dir=ops_dir), codegen_jobs=3, **kw
    )
    seams = GateSeams(measure=measure, screen=screen, stdout=err, stderr=err)
    return run_gate(job, seams), out, err.getvalue()


def verdict(out: Path) -> GateVerdict:
    return load_json_model(out / "verdict.json", GateVerdict)


def test_screen_runs_before_measuring_and_all_ops_are_timed_by_default(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen, batch = FakeScreen(ADD_SAME, MM_CHANGED), FakeBatch(good())
    rc, out, err = gate(tmp_path, bl, ops_dir, screen, batch)
    assert rc == 0
    (opts,) = screen.calls
    assert (opts.baseline, opts.out, opts.jobs) == (bl, out / "codegen", 3)
    assert opts.ops is None  # no op selection: every kernel of the baseline is screened
    assert batch.requests[0].ops == {"main/add", "main/mm", "main/sum"}
    v = verdict(out)
    assert v.codegen.screened and (v.codegen.changed, v.codegen.kernels) == (1, 2)
    assert v.codegen.time == "all" and v.codegen.not_timed == {}
    assert "1 of 2 kernels changed" in err
    md = (out / "report.md").read_text()
    assert "### Generated code" in md and "1 of 2 kernels changed their generated code" in md
    timing = load_json_model(out / "codegen" / "timing.json", TimingPlanFile)
    assert timing.skipped == {} and set(timing.timed) == {"main/add", "main/mm", "main/sum"}


def test_time_changed_times_only_unproven_ops_and_sentinels(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    batch = FakeBatch(good())
    rc, out, err = gate(
        tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED), batch, time="changed"
    )
    assert rc == 0
    assert batch.requests[0].ops == {"main/mm", "main/sum"}  # mm changed, sum a sentinel
    v = verdict(out)
    assert v.counts == {"PASS": 2}  # add skipped on proof, not judged MISSING
    assert set(v.codegen.not_timed) == {"main/add"}
    assert "identical" in v.codegen.not_timed["main/add"]
    assert "2 op(s) timed, 1 proven unchanged" in err
    md = (out / "report.md").read_text()
    assert "1 op(s) not timed" in md and "`add`" in md


def test_a_row_whose_kernels_are_unknown_is_always_timed(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    partial = ADD_SAME.model_copy(update={"rows": [key("add")]})  # row [8] named by no record
    batch = FakeBatch(good())
    rc, _, _ = gate(tmp_path, bl, ops_dir, FakeScreen(partial, MM_CHANGED), batch, time="changed")
    assert rc == 0 and "main/add" in batch.requests[0].ops


def test_regression_row_says_kernel_stage_deltas_and_diff_everywhere(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    batch = FakeBatch(mm_slower())
    rc, out, _ = gate(
        tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED), batch, time="changed", confirm=0
    )
    assert rc == 1
    v = verdict(out)
    (reg,) = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    (note,) = reg.codegen
    assert (note.name, note.first_stage, note.diff_file) == (
        "mm_kernel",
        "ttgir",
        "codegen/diffs/idmm_kernel.diff",
    )
    assert note.config == "BLOCK=64 num_warps=4 num_stages=3"
    assert note.deltas == {"n_regs": 8, "sass_instructions": 172}
    assert all(not r.codegen for r in v.rows if r.verdict.value == "PASS")  # identical: lean
    words = ["mm_kernel", "TTGIR differs", "regs +8", "SASS +172 instructions"]
    words += ["codegen/diffs/idmm_kernel.diff"]  # the config: in the diff file and report.html
    md = (out / "report.md").read_text()
    section = md.split("### Regressed rows", 1)[1].split("\n### ", 1)[0]
    junit = (out / "junit.xml").read_text()
    body = junit.split('type="REGRESSION"', 1)[1].split("</failure>", 1)[0]
    for w in words:
        assert w.replace("_", "\\_") in section or w in section, w
        assert w in body, w
    assert (out / "codegen" / "diffs" / "idmm_kernel.diff").is_file()
    html = (out / "report.html").read_text()
    assert "ttg.mma_v3" in html and "ttg.fma" in html  # the IR diff in the HTML
    assert (out / "comment.md").read_text().startswith("<!-- zlbench-gate -->")


def test_a_kernel_that_stops_compiling_fails_the_gate(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    rc, out, err = gate(tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_FAILED), FakeBatch(good()))
    assert rc == 1
    v = verdict(out)
    assert v.verdict == "FAIL" and v.exit_code == 1
    assert v.summary.startswith("FAIL: 1 kernel(s) the baseline compiled fail to compile")
    assert v.codegen.failed == [
        "mm_kernel [BLOCK=64 num_warps=4 num_stages=3]: RuntimeError: no dot"
    ]
    assert "FAILED mm_kernel" in err
    md = (out / "report.md").read_text()
    assert "### Kernels that no longer compile (1)" in md and "no dot" in md
    junit = (out / "junit.xml").read_text()
    assert 'classname="zlbench.codegen"' in junit and 'type="COMPILE_FAILED"' in junit


def test_v1_baseline_without_records_gates_with_a_note(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl", records=False)
    screen, batch = FakeScreen(), FakeBatch(good())
    rc, out, err = gate(tmp_path, bl, ops_dir, screen, batch, time="changed")
    assert rc == 0 and screen.calls == []
    assert batch.requests[0].ops == {"main/add", "main/mm", "main/sum"}
    v = verdict(out)
    assert not v.codegen.screened and "no codegen records" in v.codegen.note
    assert "no codegen records" in err
    assert "every op is timed" in (out / "report.md").read_text()
    assert not (out / "codegen").exists()


def test_report_rejudges_a_changed_mode_gate_dir_the_same_way(tmp_path, ops_dir, monkeypatch):
    bl = baseline(tmp_path / "bl")
    monkeypatch.chdir(tmp_path)
    batch = FakeBatch(mm_slower())
    rc, out, _ = gate(
        tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED), batch, time="changed", confirm=0
    )
    assert rc == 1
    rep = tmp_path / "rep"
    args = ["report", "out", "--baseline", str(bl), "--out", str(rep)]
    assert main(args) == 1
    v, again = verdict(out), verdict(rep)
    assert again.counts == v.counts == {"PASS": 1, "REGRESSION": 1}  # add not MISSING
    assert again.codegen.not_timed == v.codegen.not_timed
    (reg,) = [r for r in again.rows if r.verdict.value == "REGRESSION"]
    assert reg.codegen[0].diff_file == "out/codegen/diffs/idmm_kernel.diff"  # from rep's reader
    assert "`out/codegen/diffs/idmm_kernel.diff`" in (rep / "report.md").read_text()
    assert "ttg.fma" in (rep / "report.html").read_text()


def test_time_changed_with_results_and_codegen_jobs_0_are_refused(tmp_path, capsys):
    bl = baseline(tmp_path / "bl", records=False)
    rdir = write_results(tmp_path / "r", good())
    base = ["gate", "--baseline", str(bl), "--out", str(tmp_path / "o"), "--time", "changed"]
    assert main([*base, "--results", str(rdir)]) == 2
    assert "not with --results" in capsys.readouterr().err
    assert main([*base[:-2], "--codegen-jobs", "0"]) == 2
    assert "--codegen-jobs" in capsys.readouterr().err


def test_run_url_comes_from_the_github_environment():
    from zlbench.cli.settings import Settings

    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r"}
    assert Settings.from_env({**env, "GITHUB_RUN_ID": "7"}).run_url == (
        "https://github.com/o/r/actions/runs/7"
    )
    assert Settings.from_env(env).run_url == ""


def test_verdict_json_row_codegen_round_trips(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    rc, out, _ = gate(
        tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED), FakeBatch(mm_slower()), confirm=0
    )
    data = json.loads((out / "verdict.json").read_text())
    (row,) = [r for r in data["rows"] if r["verdict"] == "REGRESSION"]
    assert row["codegen"][0]["status"] == "ttgir_changed"
    assert "codegen: mm_kernel" in row["reason"]


class ShardBatch(FakeBatch):
    """Measures shard K/N's share of the requested ops (every N-th, sorted)."""

    def __call__(self, req):
        if req.shard is not None:
            k, n = req.shard
            req.ops = set(sorted(req.ops)[k - 1 :: n])
        return super().__call__(req)


def test_sharded_changed_mode_merges_and_judges_like_one_gate(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen, outs = FakeScreen(ADD_SAME, MM_CHANGED), []
    for k in (1, 2):
        out = tmp_path / f"s{k}"
        job = GateJob(
            baseline=str(bl),
            out=out,
            selection=Selection(ops_dir=ops_dir),
            time="changed",
            shard=(k, 2),
        )
        seams = GateSeams(measure=ShardBatch(mm_slower()), screen=screen, stdout=io.StringIO())
        assert run_gate(job, seams) == 0
        outs.append(str(out))
    merged, judged = tmp_path / "merged", tmp_path / "judged"
    assert main(["merge", *outs, "--out", str(merged)]) == 0
    assert (merged / "codegen" / "timing.json").is_file()
    rc = main(["gate", "--baseline", str(bl), "--results", str(merged), "--out", str(judged)])
    assert rc == 1
    v = verdict(judged)
    assert v.counts == {"PASS": 1, "REGRESSION": 1}  # add skipped on proof, not MISSING
    (reg,) = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    assert reg.codegen[0].name == "mm_kernel" and "codegen: mm_kernel" in reg.reason
    assert set(v.codegen.not_timed) == {"main/add"}


def test_a_shard_whose_screen_found_a_compile_failure_exits_1(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    job = GateJob(
        baseline=str(bl), out=tmp_path / "s1", selection=Selection(ops_dir=ops_dir), shard=(1, 2)
    )
    seams = GateSeams(
        measure=ShardBatch(good()), screen=FakeScreen(ADD_SAME, MM_FAILED), stdout=io.StringIO()
    )
    assert run_gate(job, seams) == 1


def test_a_diff_path_leading_out_of_the_screen_dir_is_not_read(tmp_path, ops_dir):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    evil = MM_CHANGED.model_copy(update={"diff_file": "../../secret.txt"})
    bl = baseline(tmp_path / "bl")
    batch = FakeBatch(mm_slower())
    rc, out, _ = gate(tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, evil), batch, confirm=0)
    assert rc == 1
    assert "TOP SECRET" not in (out / "report.html").read_text()


def test_cli_reports_name_the_thresholds_file_as_given(tmp_path, monkeypatch):
    baseline(tmp_path / "bl", records=False)
    write_results(tmp_path / "r", good())
    monkeypatch.chdir(tmp_path)
    Path("loose.yaml").write_text("default: 0.2\n")
    argv = [
        "gate",
        "--baseline",
        "bl",
        "--results",
        "r",
        "--out",
        "o",
        "--thresholds",
        "loose.yaml",
    ]
    assert main(argv) == 0
    assert verdict(Path("o")).thresholds_source == "loose.yaml"
    assert "from loose.yaml" in Path("o/report.md").read_text()


# --------------------------------------------------------------------------- compile failures


def failed_kernel(name: str, op: str) -> KernelScreen:
    return kernel(name, op, CodegenClass.FAILED, error="compile failed: RuntimeError: zl no dot")


class NoMeasure:
    def __call__(self, req):
        pytest.fail(f"measured on the GPU although nothing compiles: {sorted(req.ops)}")


def test_a_compiler_that_compiles_nothing_fails_without_measuring(tmp_path, ops_dir, monkeypatch):
    """61 of 61 kernels failed on the H200 and the gate still ran every op (97 s) to end
    ERROR exit 2 "nothing measured": now FAIL, exit 1, no GPU time, one lead line."""
    bl = baseline(tmp_path / "bl")
    screen = FakeScreen(*(failed_kernel(f"{op}_kernel", op) for op in ("add", "mm", "sum")))
    rc, out, err = gate(tmp_path, bl, ops_dir, screen, NoMeasure())
    assert rc == 1, err
    v = verdict(out)
    lead = (
        "FAIL: 3 kernel(s) the baseline compiled fail to compile: RuntimeError: zl no dot "
        "(add_kernel and 2 more; 3 op(s) not timed, their rows FAILED; codegen/codegen.md)"
    )
    assert v.verdict == "FAIL" and v.exit_code == 1
    counts = " — 3 ops checked = 3 timed (3 failing) + 0 proven identical + 0 skipped"
    assert v.summary.startswith(lead + counts + "; 4 rows: 4 failed")
    md = (out / "report.md").read_text()
    assert md.splitlines()[1] == "## ❌ zlbench gate: FAIL"
    assert md.splitlines()[3].startswith(lead.replace("_", "\\_").replace("(", "\\(")
                                         .replace(")", "\\)"))  # fmt: skip
    assert "### Kernels that no longer compile (3)" in md
    assert "Environment mismatch" not in md  # nothing ran: there is no environment to compare
    assert v.counts == {"FAILED": 4}
    by_op = {r.key.run_name: r for r in v.rows}
    assert by_op["mm"].reason == (
        "not timed: mm_kernel [BLOCK=64 num_warps=4 num_stages=3] fails to compile: "
        "RuntimeError: zl no dot"
    )
    assert {o.verdict.value for o in v.ops} == {"FAILED"}
    assert "3 op(s) not timed: their kernels fail to compile; nothing to measure" in err
    assert load_json_model(out / "codegen" / "timing.json", TimingPlanFile).failed.keys() == {
        "main/add", "main/mm", "main/sum"
    }  # fmt: skip
    steps = json.loads((out / "steps.json").read_text())
    assert steps["seconds"]["measure"] == 0.0
    # `zlbench report` on the gate dir judges the same
    monkeypatch.chdir(tmp_path)
    rep = tmp_path / "rep"
    assert main(["report", "out", "--baseline", str(bl), "--out", str(rep)]) == 1
    again = verdict(rep)
    assert again.verdict == "FAIL" and again.counts == {"FAILED": 4}
    assert again.summary.startswith("FAIL: 3 kernel(s) the baseline compiled fail to compile")


def test_ops_whose_kernels_fail_are_not_timed_and_the_rest_are(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    batch = FakeBatch(good())
    screen = FakeScreen(ADD_SAME, failed_kernel("mm_kernel", "mm"))
    rc, out, _ = gate(tmp_path, bl, ops_dir, screen, batch, confirm=0)
    assert rc == 1
    assert [r.ops for r in batch.requests] == [{"main/add", "main/sum"}]
    v = verdict(out)
    assert v.counts == {"FAILED": 1, "PASS": 3}
    (mm,) = [r for r in v.rows if r.key.run_name == "mm"]
    assert mm.verdict.value == "FAILED" and "mm_kernel" in mm.reason and "zl no dot" in mm.reason
    assert v.summary.startswith(
        "FAIL: 1 kernel(s) the baseline compiled fail to compile: RuntimeError: zl no dot "
        "(mm_kernel; 1 op(s) not timed, their rows FAILED; codegen/codegen.md) — "
    )


SUM_CHANGED = kernel("sum_kernel", "sum", CodegenClass.TTGIR, first_stage="ttgir")


def test_a_gpu_budget_times_sentinels_first_and_lists_every_changed_op_left_out(
    tmp_path, ops_dir, monkeypatch
):
    bl = baseline(tmp_path / "bl")
    monkeypatch.chdir(tmp_path)
    batch = FakeBatch(mm_slower())  # mm would be a REGRESSION, were it timed
    rc, out, err = gate(
        tmp_path, bl, ops_dir, FakeScreen(ADD_SAME, MM_CHANGED, SUM_CHANGED), batch,
        time="changed", confirm=0, time_budget_s=1.0,
    )  # fmt: skip
    assert batch.requests[0].ops == {"main/sum"}  # the sentinel is timed whatever the budget
    assert rc == 0
    v = verdict(out)
    assert set(v.codegen.over_budget) == {"main/mm"} and set(v.codegen.not_timed) == {"main/add"}
    assert v.codegen.over_budget["main/mm"].startswith(
        "changed, not timed: beyond the GPU budget of 1 s (priority 2 of 2"
    )
    assert not [r for r in v.rows if r.key.run_name == "mm"]  # not judged, not MISSING
    assert "1 changed op(s) not timed (listed in every report)" in err
    for name in ("report.md", "comment.md"):
        text = (out / name).read_text()
        assert "Not judged: 1 op(s) whose timed kernels changed were not timed" in text, name
        assert "`mm`" in text
    assert "Not judged: 1 op(s)" in (out / "report.html").read_text()
    timing = load_json_model(out / "codegen" / "timing.json", TimingPlanFile)
    assert timing.budget_s == 1.0 and set(timing.over_budget) == {"main/mm"}
    # re-judged offline the same way; an op listed beyond the budget whose rows the
    # results hold is judged all the same
    rep = tmp_path / "rep"
    assert main(["report", "out", "--baseline", str(bl), "--out", str(rep)]) == 0
    assert set(verdict(rep).codegen.over_budget) == {"main/mm"}
    write_results(out / "results", mm_slower())  # mm's rows now in the results
    assert main(["report", "out", "--baseline", str(bl), "--out", str(tmp_path / "r2")]) == 1
    assert not verdict(tmp_path / "r2").codegen.over_budget


def test_a_budget_with_time_all_or_not_positive_is_refused(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = FakeScreen(ADD_SAME, MM_CHANGED)
    for kw, said in (
        ({"time": "all", "time_budget_s": 60.0}, "only with --time changed"),
        ({"time": "changed", "time_budget_s": 0.0}, "must be a number of seconds > 0"),
    ):
        with pytest.raises(ZlbenchError, match=said):
            gate(tmp_path, bl, ops_dir, screen, FakeBatch(good()), **kw)
        assert not screen.calls and not (tmp_path / "out").exists()  # before any work


def test_a_gate_narrowed_by_ops_screens_the_kernels_of_those_ops_only(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen, batch = FakeScreen(ADD_SAME, MM_CHANGED), FakeBatch(good())
    out, err = tmp_path / "out", io.StringIO()
    job = GateJob(baseline=str(bl), out=out, codegen_jobs=3,
                  selection=Selection(ops_dir=ops_dir, ops=("mm", "sum")))  # fmt: skip
    run_gate(job, GateSeams(measure=batch, screen=screen, stdout=err, stderr=err))
    (opts,) = screen.calls
    assert opts.ops == frozenset({"main/mm", "main/sum"})
