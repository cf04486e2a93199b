"""Both sides' binaries of a replayed kernel (zlbench.plugins.replay.binaries), on this CPU:
a small kernel recorded for sm_90 under the stand-in driver, then built twice by the
rebuild worker into triton cache dirs of their own, once with the installed triton (the
PR's side) and once with a triton whose ptxas runs without optimisation for that kernel
(the base's side: its SASS differs). The rebuild worker names each kernel id's cache
group (groups.json); a group's code digest is the screen's digest of its cubin; a binary
whose digest is not the one expected is refused; a group loads as a triton
CompiledKernel of this runtime (and launches, doing nothing, under the stand-in driver);
arguments the binary was not specialised for are refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from tests.support.codegen import patched_triton, ptxas_O0_for, subprocess_env  # noqa: E402
from zlbench.models import (  # noqa: E402
    ArgSpec,
    BinaryRef,
    CodegenIndex,
    LaunchSpec,
    PlannedRow,
    ReplayPlanFile,
    RowKey,
    TensorStats,
    load_json_model,
)
from zlbench.models.base import dump_json_model  # noqa: E402
from zlbench.plugins.compiler import rebuild, standin  # noqa: E402
from zlbench.plugins.replay import binaries, worker  # noqa: E402
from zlbench.plugins.replay.materialize import ReplayError  # noqa: E402

pytestmark = pytest.mark.proc

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def zl_scale(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * 2, mask=m)
"""

RECORD = textwrap.dedent("""
    import sys
    from pathlib import Path
    import torch
    from zlbench.plugins import codegen
    from zlbench.plugins.compiler import standin

    recorder = codegen.Recorder(sass=False)
    standin.activate("cuda:90", launch="skip")
    codegen.install(recorder)
    import zl_replay_kern as k

    x, y = torch.randn(1024), torch.empty(1024)
    k.zl_scale[(8,)](x, y, 1024, BLOCK=128)
    recorder.write("", Path(sys.argv[1]))
""")


class Built:
    def __init__(self, root: Path):
        self.root = root
        self.mod = root / "mod"
        self.index = load_json_model(root / "rec" / "index.json", CodegenIndex)
        self.rec = self.index.records[0]

    def env(self, *front: Path) -> dict[str, str]:
        return subprocess_env(self.root, *front, self.mod)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Built, binaries.SideBuild, binaries.SideBuild]:
    """The recorded kernel, and its PR-side and base-side builds."""
    root = tmp_path_factory.mktemp("replay-bin")
    (root / "mod").mkdir()
    (root / "mod" / "zl_replay_kern.py").write_text(KERNEL, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(root / "rec")],
        env=subprocess_env(root, root / "mod"), capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    b = Built(root)
    site = patched_triton(root / "site", ptxas_O0_for("zl_scale"))
    pr = binaries.build_side([b.rec], root / "w-pr", root / "cache-pr", env=b.env())
    base = binaries.build_side([b.rec], root / "w-base", root / "cache-base", env=b.env(site))
    return b, pr, base


def test_the_rebuild_worker_names_each_kernels_cache_group(built):
    b, pr, _ = built
    groups = json.loads((b.root / "w-pr" / "out" / rebuild.GROUPS_JSON).read_text())
    assert list(groups) == [b.rec.id]
    group = b.root / "cache-pr" / groups[b.rec.id]
    assert len(list(group.glob("__grp__zl_scale.json"))) == 1
    assert pr.refs[b.rec.id].group_dir == str(group)
    assert pr.errors == {}


def test_a_group_digest_is_the_screens_digest_of_its_cubin(built):
    b, pr, base = built
    recorded = b.rec.result.cubin_code_sha256
    assert binaries.code_digest(pr.refs[b.rec.id].group_dir) == recorded  # same compiler
    assert pr.refs[b.rec.id].code_digest == recorded
    other = binaries.code_digest(base.refs[b.rec.id].group_dir)
    assert other != recorded  # ptxas -O0: another binary


def test_the_replays_build_leaves_the_disassembly_out(built, tmp_path):
    """The replay's builds run the rebuild worker with --no-sass: the binary and its
    code digest, no SASS stage (the screen's rebuild of the same kernel by the same
    compiler disassembles it, with the same code digest)."""
    b, _, base = built
    replayed = base.rebuilt[b.rec.id].result
    assert replayed.cubin_code_sha256 and "sass" not in replayed.stages
    assert replayed.n_regs is None
    index = tmp_path / "in.json"
    dump_json_model(index, CodegenIndex(compiler=b.index.compiler, records=[b.rec]))
    cmd = [sys.executable, "-m", "zlbench.plugins.compiler.rebuild", str(index)]
    cmd.append(str(tmp_path / "o"))
    proc = subprocess.run(cmd, env=b.env(b.root / "site"), capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    screened = load_json_model(tmp_path / "o" / "index.json", CodegenIndex).records[0].result
    assert "sass" in screened.stages and screened.n_regs is not None
    assert screened.cubin_code_sha256 == replayed.cubin_code_sha256


def test_a_sides_timing_says_where_its_build_went(built):
    """Each worker's end line gives its phases; the side adds its own start and the
    parent's time around its workers (replay.json's ``builds``)."""
    b, pr, _ = built
    t = pr.timing("pr", 1)
    assert (t.side, t.workers, t.kernels, t.compiled) == ("pr", 1, 1, 1)
    assert set(t.phases_s) == {*rebuild.PHASES, "start"}
    assert t.phases_s["compile"] > 0 and t.phases_s["sass"] == 0.0  # --no-sass
    assert 0 <= t.late_s <= t.seconds and 0 <= t.after_s <= t.seconds
    assert 0 < t.slowest_s <= t.seconds


def test_a_build_whose_binary_is_not_the_screens_is_refused(built, tmp_path):
    b, _, _ = built
    site = b.root / "site"  # the patched compiler, but the screen's digest is the PR's
    expected = {b.rec.id: b.rec.result.cubin_code_sha256}
    got = binaries.build_side([b.rec], tmp_path / "w", tmp_path / "c", env=b.env(site),
                              expected=expected)  # fmt: skip
    assert got.refs == {}
    assert got.errors == {b.rec.id: binaries.DIFFERS}


def test_jobs_deal_the_kernels_to_rebuild_workers_at_once_into_one_cache(built, tmp_path):
    b, pr, _ = built
    twin = b.rec.model_copy(update={"id": "twin"})  # the same request under another id
    got = binaries.build_side([b.rec, twin], tmp_path / "w", tmp_path / "c", env=b.env(), jobs=4)
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["part-0", "part-1"]
    assert got.errors == {} and set(got.refs) == {b.rec.id, "twin"}
    assert {r.code_digest for r in got.refs.values()} == {pr.refs[b.rec.id].code_digest}
    assert set(got.rebuilt) == {b.rec.id, "twin"}


def test_a_sides_parts_share_one_reading_of_the_compiler_identity(built, tmp_path, monkeypatch):
    """Reading it walks every installed distribution under the GIL: once per side, not
    once per part (15 parts at once were 18-21 s late on an H100's host)."""
    b, _, _ = built
    calls = []
    real = binaries.capture.compiler_identity

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(binaries.capture, "compiler_identity", counted)
    monkeypatch.setattr(binaries, "_run_build", lambda cmd, env, t: ("build failed: x", {}))
    recs = [b.rec.model_copy(update={"id": f"k{i}"}) for i in range(3)]
    got = binaries.build_side(recs, tmp_path / "w", tmp_path / "c", env=b.env(), jobs=3)
    assert len(got.parts) == 3 and len(calls) == 1
    for i in range(3):
        index = load_json_model(tmp_path / "w" / f"part-{i}" / "in.json", CodegenIndex)
        assert index.compiler == real() and [r.id for r in index.records] == [f"k{i}"]


def test_in_cache_a_kernel_already_in_the_cache_is_not_compiled_again(built, tmp_path):
    """The replay's PR side builds in the gate's shared cache, where the screen put its
    kernels: one there is a cache hit (its group's files not written again), and its
    ref is the same group."""
    b, pr, _ = built
    cache = tmp_path / "c"
    first = binaries.build_side([b.rec], tmp_path / "w1", cache, env=b.env(), in_cache=True)
    group = Path(first.refs[b.rec.id].group_dir)
    assert group.parent == cache and first.refs[b.rec.id] == pr.refs[b.rec.id].model_copy(
        update={"group_dir": str(group)}
    )
    stamps = {p.name: p.stat().st_mtime_ns for p in group.iterdir()}
    again = binaries.build_side([b.rec], tmp_path / "w2", cache, env=b.env(), in_cache=True)
    assert again.refs == first.refs and again.errors == {}
    assert {p.name: p.stat().st_mtime_ns for p in group.iterdir()} == stamps
    assert len(list(cache.iterdir())) == 1  # no second group: nothing compiled again
    assert "cubin" in first.rebuilt[b.rec.id].result.times  # compiled: every stage timed
    assert "cubin" not in again.rebuilt[b.rec.id].result.times  # a cache hit: no stage ran
    assert (first.timing("pr", 1).compiled, again.timing("pr", 1).compiled) == (1, 0)
    plain = binaries.build_side([b.rec], tmp_path / "w3", cache, env=b.env())
    assert "cubin" in plain.rebuilt[b.rec.id].result.times  # without: a private cache


def test_a_part_that_fails_as_a_whole_is_its_kernels_error_only(built, tmp_path, monkeypatch):
    b, _, _ = built
    twin = b.rec.model_copy(update={"id": "twin"})
    real = binaries._run_build

    def fail_part_1(cmd, env, timeout_s):
        if "part-1" in cmd[-3]:
            return "build failed (exit 9): boom", {}
        return real(cmd, env, timeout_s)

    monkeypatch.setattr(binaries, "_run_build", fail_part_1)
    got = binaries.build_side([b.rec, twin], tmp_path / "w", tmp_path / "c", env=b.env(), jobs=2)
    assert set(got.refs) == {b.rec.id} and got.errors == {"twin": "build failed (exit 9): boom"}


def test_loading_refuses_a_binary_whose_digest_differs(built, monkeypatch):
    b, pr, base = built
    monkeypatch.syspath_prepend(str(b.mod))
    wrong = BinaryRef(group_dir=base.refs[b.rec.id].group_dir,
                      code_digest=pr.refs[b.rec.id].code_digest)  # fmt: skip
    loader = rebuild.Loader(b.root / "gen")
    with pytest.raises(ReplayError, match="replayed binary differs from the screen's"):
        binaries.load_kernel(wrong, b.rec.request, loader)


def test_a_side_binary_loads_and_launches_through_this_runtime(built, monkeypatch, tmp_path):
    """Under the stand-in driver (launch="skip") the CompiledKernel's handles and
    launcher are built and the launch does nothing; with launch="error" loading the
    cubin raises (no GPU)."""
    b, pr, base = built
    monkeypatch.syspath_prepend(str(b.mod))
    moved = tmp_path / "moved"
    shutil.copytree(base.refs[b.rec.id].group_dir, moved)  # a group read where it is now
    ref = BinaryRef(group_dir=str(moved), code_digest=base.refs[b.rec.id].code_digest)
    kernel = binaries.load_kernel(ref, b.rec.request, rebuild.Loader(tmp_path / "gen"))
    assert kernel.name == "zl_scale"
    assert kernel.hash == moved.name
    assert all(Path(p).parent == moved for p in kernel.metadata_group.values())
    x, y = torch.randn(1024), torch.zeros(1024)
    with standin.standin("cuda:90", launch="skip"):
        binaries.launch(kernel, [8, 1, 1], [x, y, 1024, 128])
    assert kernel.function is None  # the stand-in's handle: nothing ran
    assert torch.count_nonzero(y) == 0
    other = binaries.load_kernel(pr.refs[b.rec.id], b.rec.request, rebuild.Loader(tmp_path))
    with standin.standin("cuda:90"), pytest.raises(standin.StandinLaunchError):
        binaries.launch(other, [8, 1, 1], [x, y, 1024, 128])


def test_an_incomplete_group_is_refused(built, tmp_path):
    b, pr, _ = built
    moved = tmp_path / "g"
    shutil.copytree(pr.refs[b.rec.id].group_dir, moved)
    (moved / "zl_scale.cubin").unlink()
    with pytest.raises(ReplayError, match="missing zl_scale.cubin"):
        binaries.code_digest(moved)


def test_arguments_the_binary_was_not_specialised_for_are_refused(built):
    b, _, _ = built
    req = b.rec.request  # X, Y 16-byte aligned pointers, N % 16 == 0, BLOCK=128
    x, y = torch.randn(1040), torch.zeros(1024)
    binaries.check_args(req, [x, y, 1024, 128])
    # a constexpr slot is the binary's own (the launcher drops it): what a launcher
    # passed there is not compared (FlagGems passed PRE_LOAD_V=True to a False binary)
    binaries.check_args(req, [x, y, 1024, 64])
    with pytest.raises(ReplayError, match="argument N is not 16-byte divisible"):
        binaries.check_args(req, [x, y, 1000, 128])
    with pytest.raises(ReplayError, match="argument X is not 16-byte divisible"):
        binaries.check_args(req, [x[1:], y, 1024, 128])
    with pytest.raises(ReplayError, match="3 arguments for zl_scale's 4 parameters"):
        binaries.check_args(req, [x, y, 1024])


def test_a_build_that_cannot_run_is_every_kernels_error(built, tmp_path):
    b, _, _ = built
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'no such env' >&2\nexit 1\n")
    broken.chmod(0o755)
    got = binaries.build_side([b.rec], tmp_path / "w", tmp_path / "c", python=str(broken))
    assert got.refs == {}
    assert got.errors == {b.rec.id: "build failed (exit 1): no such env"}


def test_a_kernel_the_side_cannot_load_is_that_kernels_error(built, tmp_path):
    b, _, _ = built
    env = {**b.env(), "PYTHONPATH": str(b.root / "nowhere")}  # the kernel's module not found
    got = binaries.build_side([b.rec], tmp_path / "w", tmp_path / "c", env=env)
    assert got.refs == {}
    assert got.errors == {b.rec.id: "load failed: ModuleNotFoundError: No module named "
                                    "'zl_replay_kern'"}  # fmt: skip


def _row(op: str, pr: BinaryRef, base: BinaryRef, kid: str, block: int = 128):
    stats = TensorStats(min=-1.0, max=1.0, mean=0.0, std=0.5)
    x, y = (
        ArgSpec(name=n, kind="tensor", dtype="float32", shape=[1024], strides=[1],
                storage=1024, buffer=i, stats=stats)
        for i, n in enumerate("XY")
    )  # fmt: skip
    args = [x, y, ArgSpec(name="N", kind="int", value=1024),
            ArgSpec(name="BLOCK", kind="int", value=block)]  # fmt: skip
    launch = LaunchSpec(kernel_id=kid, kernel="zl_scale", grid=[8, 1, 1], args=args)
    key = RowKey(repo="main", run_name=op, op=op, dtype="float32", shape="[1024]")
    return PlannedRow(key=key, launches=[launch], binaries={kid: {"pr": pr, "base": base}})


def test_a_planned_row_replays_end_to_end_under_the_standin(built, monkeypatch, tmp_path):
    """The worker's real seams on this CPU: both sides' cubins checked and loaded, the
    arguments materialized and checked against the specialisation, the pair timed
    (host clock; the stand-in's launches do nothing, so the outputs match). A base
    binary that is not the screen's falls back; a constexpr slot whose captured value is
    not the binary's (a launcher's stale copy) replays the binary that ran."""
    b, pr, base = built
    monkeypatch.syspath_prepend(str(b.mod))
    kid = b.rec.id
    p, q = pr.refs[kid], base.refs[kid]
    wrong = BinaryRef(group_dir=q.group_dir, code_digest=p.code_digest)
    rows = [_row("same", p, q, kid), _row("wrong", p, wrong, kid),
            _row("block", p, q, kid, block=64)]  # fmt: skip
    plan = ReplayPlanFile(device="cpu", warmup=0, reps=1, rows=rows,
                          requests={kid: b.rec.request})  # fmt: skip
    with standin.standin("cuda:90", launch="skip"):
        assert worker.replay_plan(plan, tmp_path / "out", worker.real_seams()) == 0
    run, pairs = worker.read_outputs(tmp_path / "out")
    got = {r.key.op: r for r in run.rows}
    assert got["same"].instrument == "kernel-replay"
    assert got["same"].outputs == "match"
    assert got["same"].pairs >= 1
    assert got["wrong"].why == "replayed binary differs from the screen's"
    assert got["block"].instrument == "kernel-replay" and got["block"].outputs == "match"
    assert [r.key.op for r in pairs.rows] == ["same", "block"]  # in plan order


def test_the_launchers_are_built_once_a_key_before_any_row_is_timed(built, monkeypatch, tmp_path):
    """The worker's real seams build each distinct launcher of the plan's binaries (both
    sides of one request share one) before the first row is timed, through the active
    driver's launcher class; a failing build costs no row."""
    from triton.runtime import driver

    b, pr, base = built
    monkeypatch.syspath_prepend(str(b.mod))
    kid = b.rec.id
    p, q = pr.refs[kid], base.refs[kid]
    rows = [_row("one", p, q, kid), _row("two", p, q, kid)]
    plan = ReplayPlanFile(device="cpu", warmup=0, reps=1, rows=rows,
                          requests={kid: b.rec.request})  # fmt: skip
    seams, events = worker.real_seams(), []
    timed = seams.time_paired
    seams.time_paired = lambda *a, **k: events.append("timed") or timed(*a, **k)
    with standin.standin("cuda:90", launch="skip"):
        make = driver.active.launcher_cls

        def counted(src, metadata):
            events.append(("launcher", src.fn.__name__))
            if len(events) == 1:
                raise RuntimeError("cc failed")  # the first launch builds it again
            return make(src, metadata)

        monkeypatch.setattr(driver.active, "launcher_cls", counted)
        assert worker.replay_plan(plan, tmp_path / "out", seams) == 0
    # one key: one build ahead (it failed), then the rows; each side's kernel asks the
    # launcher class again at its first launch (triton's cache answers, after a build)
    assert events[:2] == [("launcher", "zl_scale"), "timed"]
    assert events.count("timed") == 2
    run, _ = worker.read_outputs(tmp_path / "out")
    assert [r.instrument for r in run.rows] == ["kernel-replay", "kernel-replay"]


def test_prebuild_launchers_builds_one_per_key_and_ignores_failures():
    from types import SimpleNamespace as NS

    def kern(sig, name):
        return NS(src=NS(signature=sig, constants={}, name=name), metadata=NS())

    ks = [kern({"x": "*fp16"}, "a"), kern({"x": "*fp16"}, "b"), kern({"x": "i32"}, "c")]
    built = []

    def build(src, metadata):
        built.append(src.name)
        if src.name == "c":
            raise OSError("gcc: not found")

    assert binaries.prebuild_launchers(ks, jobs=2, build=build) == 2
    assert sorted(built) == ["a", "c"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (sm_90)")
def test_both_sides_replay_on_the_gpu(built, monkeypatch, tmp_path):
    """GPU only (not run in the session that wrote it): the PR's and the base's (ptxas
    -O0) cubins of the same kernel launched through this runtime, timed with CUDA events
    and the L2 flush; their outputs match."""
    b, pr, base = built
    monkeypatch.syspath_prepend(str(b.mod))
    kid = b.rec.id
    plan = ReplayPlanFile(device="cuda", rows=[_row("gpu", pr.refs[kid], base.refs[kid], kid)],
                          requests={kid: b.rec.request})  # fmt: skip
    assert worker.replay_plan(plan, tmp_path / "out", worker.real_seams()) == 0
    run, pairs = worker.read_outputs(tmp_path / "out")
    assert (run.rows[0].instrument, run.rows[0].outputs) == ("kernel-replay", "match")
    samples = pairs.rows[0].samples
    assert {s.side for s in samples} == {"pr", "base"}


def test_the_probe_rebuilds_a_gates_gone_binaries_with_the_gates_digests(built, tmp_path):
    """benchmarks/replay_position.py: a gate's temp caches are gone when it ends; the
    probe rebuilds each side's kernels from the plan's request into its own caches and
    points the plan there, each built binary checked against the gate's digest (a side
    whose compiler builds another keeps its gone ref: its rows then fall back)."""
    import importlib.util

    from zlbench.runner.ab.env import CompilerEnv

    spec = importlib.util.spec_from_file_location(
        "replay_position", Path(__file__).parents[2] / "benchmarks" / "replay_position.py"
    )
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    b, pr, base = built
    kid = b.rec.id
    gone = {s: r.refs[kid].model_copy(update={"group_dir": str(tmp_path / "gone" / s)})
            for s, r in (("pr", pr), ("base", base))}  # fmt: skip
    plan = ReplayPlanFile(rows=[_row("m", gone["pr"], gone["base"], kid)],
                          requests={kid: b.rec.request})  # fmt: skip
    assert probe.gone_refs(plan, "pr") == {kid: pr.refs[kid].code_digest}
    with pytest.raises(SystemExit, match="1 base binaries of the plan are gone"):
        probe.rebuild_gone(plan.model_copy(deep=True), tmp_path / "a", {"base": None}, 1)
    envs = {
        "pr": CompilerEnv("pr", front=(str(b.mod), str(b.root))),
        # the PR's compiler for the base side: not the gate's base binary, refused
        "base": CompilerEnv("base", front=(str(b.mod), str(b.root))),
    }
    probe.rebuild_gone(plan, tmp_path / "out", envs, 1)
    refs = plan.rows[0].binaries[kid]
    assert Path(refs["pr"].group_dir).parent == tmp_path / "out" / "cache-pr"
    assert refs["pr"].code_digest == pr.refs[kid].code_digest
    assert refs["base"] == gone["base"] and probe.gone_refs(plan, "pr") == {}
