"""The codegen screen on a CPU job (docs/codegen.md, "The screen on a CPU job"):
``gate --screen-only`` writes the screen and the ops to time in priority order,
stamped with the baseline and the compiler under test, and measures nothing; ``gate
--screen DIR`` on the GPU job checks that stamp, does not re-run the screen and times
exactly the listed ops; a screen of another baseline, compiler or op set, or a broken
one, is one line, exit 2, with nothing written. Seams faked as in test_gate_codegen."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from test_gate_codegen import (
    ADD_SAME,
    MM_CHANGED,
    MM_FAILED,
    FakeBatch,
    FakeScreen,
    baseline,
    good,
)

from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import GateVerdict, Selection, TimingPlanFile, load_json_model
from zlbench.workflow import codegen
from zlbench.workflow.gate import GateJob, GateSeams
from zlbench.workflow.screen_job import run_gate_job

FINGERPRINT = "flagtree 3.6.0+pr sha256:00112233aabbccdd"


@pytest.fixture(autouse=True)
def compiler(monkeypatch):
    """The compiler under test, as both jobs see it (one wheel on two machines)."""
    monkeypatch.setattr(codegen, "compiler_fingerprint", lambda: FINGERPRINT)


class NoScreen:
    """A screen seam that must not run: the GPU job takes the CPU job's screen."""

    calls = 0

    def __call__(self, opts, say):
        self.calls += 1
        raise AssertionError("the screen ran again")


def run(
    tmp_path, bl, ops_dir, out, *, screen=None, measure=None, seam=None, time=None, ops=(), **kw
):
    err = io.StringIO()
    job = GateJob(
        baseline=str(bl),
        out=out,
        selection=Selection(ops=tuple(ops), ops_dir=ops_dir),
        time=time or "changed",
        **kw,
    )
    seams = GateSeams(measure=measure or FakeBatch(good()), screen=seam or NoScreen())
    seams.stdout = seams.stderr = err
    only = screen is None
    rc = run_gate_job(job, seams, screen_only=only, screen=screen, time_given=time)
    return rc, err.getvalue()


def screen_job(tmp_path, bl, ops_dir, **kw) -> Path:
    out, batch = tmp_path / "screen", FakeBatch(good())
    rc, err = run(tmp_path, bl, ops_dir, out, measure=batch,
                  seam=FakeScreen(ADD_SAME, MM_CHANGED), **kw)  # fmt: skip
    assert rc == 0, err
    assert batch.requests == []  # a CPU job: nothing measured
    return out


def plan_of(out: Path) -> TimingPlanFile:
    return load_json_model(out / "codegen" / "timing.json", TimingPlanFile)


def test_screen_only_writes_the_screen_and_the_ops_to_time_in_priority_order(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    out = screen_job(tmp_path, bl, ops_dir)
    plan = plan_of(out)
    assert plan.screen_only and plan.time == "changed"
    assert plan.order == ["main/sum", "main/mm"]  # the sentinel first, then the change
    assert set(plan.skipped) == {"main/add"} and "identical" in plan.skipped["main/add"]
    assert plan.compiler == FINGERPRINT
    assert plan.baseline_sha256 == hashlib.sha256((bl / "manifest.yaml").read_bytes()).hexdigest()
    assert plan.scope == ["main/add", "main/mm", "main/sum"]
    assert (out / "codegen" / "codegen.json").is_file()
    assert (out / "codegen" / "diffs" / "idmm_kernel.diff").is_file()
    assert not (out / "verdict.json").exists() and not (out / "results").exists()


def test_screen_only_lists_the_ops_beyond_the_budget(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    plan = plan_of(screen_job(tmp_path, bl, ops_dir, time_budget_s=1.0))
    assert plan.order == ["main/sum"]  # the sentinel always; mm (30 s) beyond 1 s
    assert set(plan.over_budget) == {"main/mm"} and plan.budget_s == 1.0


def test_the_gpu_gate_times_exactly_the_listed_ops_without_re_screening(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir, time_budget_s=1.0)
    batch, seam, out = FakeBatch(good()), NoScreen(), tmp_path / "gpu"
    rc, err = run(tmp_path, bl, ops_dir, out, screen=screen, measure=batch, seam=seam)
    assert rc == 0, err
    assert seam.calls == 0
    assert [r.ops for r in batch.requests] == [{"main/sum"}]  # the listed ops, nothing else
    v = load_json_model(out / "verdict.json", GateVerdict)
    assert "from a CPU job" in v.codegen.note and FINGERPRINT in v.codegen.note
    assert set(v.codegen.over_budget) == {"main/mm"} and set(v.codegen.not_timed) == {"main/add"}
    assert "from a CPU job" in (out / "report.md").read_text()
    assert (out / "codegen" / "diffs" / "idmm_kernel.diff").is_file()  # the report's diffs
    assert plan_of(out).screen_only  # kept: `zlbench report` says where the screen came from
    again = tmp_path / "again"
    rc = main(["report", "--baseline", str(bl), str(out), "--out", str(again)])
    assert rc == 0
    assert "from a CPU job" in load_json_model(again / "verdict.json", GateVerdict).codegen.note


def test_the_gpu_gate_times_the_changed_ops_listed_without_a_budget(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    batch = FakeBatch(good())
    rc, _ = run(tmp_path, bl, ops_dir, tmp_path / "gpu", screen=screen, measure=batch)
    assert rc == 0 and [r.ops for r in batch.requests] == [{"main/sum", "main/mm"}]


def refused(tmp_path, bl, ops_dir, screen, **kw) -> str:
    out = tmp_path / "gpu"
    with pytest.raises(ZlbenchError) as e:
        run(tmp_path, bl, ops_dir, out, screen=screen, **kw)
    assert not out.exists()  # refused before anything is written
    assert "\n" not in str(e.value)
    return str(e.value)


def test_a_screen_of_another_baseline_is_refused(tmp_path, ops_dir):
    screen = screen_job(tmp_path, baseline(tmp_path / "bl"), ops_dir)
    # the same ops, another recording: a result of it recorded again
    result = json.loads((tmp_path / "bl" / "main" / "mm" / "result.json").read_text())
    result["environment"]["hostname"] = "another-runner"
    again = {"main/mm/result.json": json.dumps(result)}
    other = derived(tmp_path / "bl", tmp_path / "other", again, capture=False)
    assert "another baseline" in refused(tmp_path, other, ops_dir, screen)


def derived(bl: Path, to: Path, rewrite: dict[str, str] | None = None, capture=True) -> Path:
    """``bl`` as another version of it: with ``capture``, as ``zlbench baseline capture``
    derives one (mm's launch capture added, the manifest's own fields new); each file
    of ``rewrite`` (relpath -> text) given new content, the manifest hashing it."""
    import shutil

    from zlbench.models import BaselineManifest, dump_yaml_model, load_yaml_model

    shutil.copytree(bl, to)
    m = load_yaml_model(to / "manifest.yaml", BaselineManifest)
    files, rewrite = dict(m.files), dict(rewrite or {})
    if capture:
        rewrite["main/mm/codegen/launches.json"] = "{}"
    for rel, text in rewrite.items():
        (to / rel).write_text(text)
        files[rel] = hashlib.sha256(text.encode()).hexdigest()
    update = dict(files=files)
    if capture:
        update |= dict(name="vcap", created="2026-12-07T00:00:00Z", derived_from=m.name)
        update |= dict(summary={"captures": {"ops": ["main/mm"]}})
    dump_yaml_model(to / "manifest.yaml", m.model_copy(update=update))
    return to


def test_a_capture_version_of_the_screened_baseline_takes_its_screen(tmp_path, ops_dir):
    """A capture version (its launch captures apart, the same records, rows and
    seconds) takes the screen of the baseline it derives from, re-derived from its own
    manifest: a screen made on CPU before the captures came serves the gate of them."""
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir, time_budget_s=1.0)
    cap = derived(bl, tmp_path / "cap")
    assert (cap / "manifest.yaml").read_bytes() != (bl / "manifest.yaml").read_bytes()
    batch, out = FakeBatch(good()), tmp_path / "gpu"
    rc, err = run(tmp_path, cap, ops_dir, out, screen=screen, measure=batch)
    assert rc == 0, err
    assert [r.ops for r in batch.requests] == [{"main/sum"}]  # the screen's plan
    again = tmp_path / "again"
    assert main(["report", "--baseline", str(cap), str(out), "--out", str(again)]) == 0


@pytest.mark.parametrize(
    "rewrite",
    [
        {"ops_status.csv": "op,seconds\nmain/mm,3.0\n"},  # the recorded seconds replaced
        {"main/mm/codegen/index.json": '{"again": 1}'},  # another record
    ],
)
def test_a_version_with_other_records_or_seconds_does_not_take_the_screen(
    tmp_path, ops_dir, rewrite
):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    other = derived(bl, tmp_path / "other", rewrite)
    assert "nor is it a capture version" in refused(tmp_path, other, ops_dir, screen)


def test_a_screen_stamped_before_the_records_digest_serves_its_baseline_only(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    path = screen / "codegen" / "timing.json"
    data = json.loads(path.read_text())
    data.pop("baseline_records_sha256")
    path.write_text(json.dumps(data))
    cap = derived(bl, tmp_path / "cap")
    assert "nor is it a capture version" in refused(tmp_path, cap, ops_dir, screen)
    rc, err = run(tmp_path, bl, ops_dir, tmp_path / "gpu", screen=screen)
    assert rc == 0, err


def test_a_screen_of_another_compiler_is_refused(tmp_path, ops_dir, monkeypatch):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    monkeypatch.setattr(codegen, "compiler_fingerprint", lambda: "flagtree 3.6.0 sha256:ff")
    why = refused(tmp_path, bl, ops_dir, screen)
    assert "another compiler" in why and FINGERPRINT in why


def test_a_screen_of_another_op_set_or_time_mode_is_refused(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    assert "another op set" in refused(tmp_path, bl, ops_dir, screen, ops=["add", "mm"])
    assert "--time all" in refused(tmp_path, bl, ops_dir, screen, time="all")
    assert "screen job" in refused(tmp_path, bl, ops_dir, screen, time_budget_s=5.0)


def test_a_plan_that_skips_an_op_its_screen_does_not_prove_is_refused(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    path = screen / "codegen" / "timing.json"
    data = json.loads(path.read_text())
    data["skipped"]["main/mm"] = data["timed"].pop("main/mm")  # mm's kernel changed
    data["order"].remove("main/mm")
    path.write_text(json.dumps(data))
    assert "does not prove it unchanged" in refused(tmp_path, bl, ops_dir, screen)


def test_a_measuring_gates_dir_is_no_screen(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    measured = tmp_path / "measured"
    rc, _ = run(tmp_path, bl, ops_dir, tmp_path / "x", seam=FakeScreen(ADD_SAME, MM_CHANGED))
    assert rc == 0
    (tmp_path / "x").rename(measured)
    plan = plan_of(measured).model_copy(update={"screen_only": False})
    (measured / "codegen" / "timing.json").write_text(plan.model_dump_json())
    assert "not a screen-only gate's plan" in refused(tmp_path, bl, ops_dir, measured)


@pytest.mark.parametrize("name", ["timing.json", "codegen.json"])
def test_a_truncated_screen_is_one_line_exit_2_and_nothing_written(
    tmp_path, ops_dir, monkeypatch, capsys, name
):
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    path = screen / "codegen" / name
    path.write_text(path.read_text()[:40])  # an upload cut short
    batch = FakeBatch(good())
    seams = lambda: GateSeams(measure=batch, screen=NoScreen())  # noqa: E731
    monkeypatch.setattr("zlbench.workflow.gate_job.GateSeams", seams)  # gate_cmd's, at run time
    out = tmp_path / "gpu"
    argv = ["gate", "--baseline", str(bl), "--ops-dir", str(ops_dir), "--screen", str(screen)]
    rc = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and batch.requests == []
    assert len(err.splitlines()) == 1 and name in err
    assert not out.exists()


def test_screen_only_refuses_what_measures(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    with pytest.raises(ZlbenchError, match="--shard"):
        run(tmp_path, bl, ops_dir, tmp_path / "s", shard=(1, 2))
    assert not (tmp_path / "s").exists()


def test_a_v1_baseline_screen_times_every_op(tmp_path, ops_dir):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", "[1024]", 1.0)]})
    out = tmp_path / "screen"
    rc, _ = run(tmp_path, bl, ops_dir, out)  # no records: the screen seam is never called
    assert rc == 0 and plan_of(out).order == ["main/add"]
    batch = FakeBatch(good())
    rc, _ = run(tmp_path, bl, ops_dir, tmp_path / "gpu", screen=out, measure=batch)
    assert rc == 0 and [r.ops for r in batch.requests] == [{"main/add"}]


def test_the_compiler_fingerprint_names_the_installed_distribution(monkeypatch):
    monkeypatch.undo()  # the real one
    pytest.importorskip("importlib.metadata")
    real = codegen.compiler_fingerprint()
    if not real:
        pytest.skip("no triton installed here")
    assert real == codegen.compiler_fingerprint()  # stable
    name, version, digest = real.rsplit(" ", 2)[0], real.split()[1], real.split()[-1]
    assert name and version[0].isdigit() and digest.startswith("sha256:")


def test_a_kernel_that_stops_compiling_fails_the_gpu_gate_without_gpu_time_for_it(
    tmp_path, ops_dir
):
    bl = baseline(tmp_path / "bl")
    out = tmp_path / "screen"
    rc, _ = run(tmp_path, bl, ops_dir, out, seam=FakeScreen(ADD_SAME, MM_FAILED))
    assert rc == 1  # the screen job's exit: a kernel no longer compiles
    batch, gpu = FakeBatch(good()), tmp_path / "gpu"
    rc, _ = run(tmp_path, bl, ops_dir, gpu, screen=out, measure=batch)
    assert rc == 1 and [r.ops for r in batch.requests] == [{"main/sum"}]  # mm held back
    v = load_json_model(gpu / "verdict.json", GateVerdict)
    assert v.verdict == "FAIL" and "fail to compile" in v.summary


def _install(site: Path, venv_bin: str, kernel: str = "pass\n") -> None:
    """A wheel of ``triton`` as pip installs it into ``site``: the package's files and
    a console script (its shebang names the venv) with their hashes in RECORD."""
    import base64

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    files = {"triton/__init__.py": "", "triton/compiler.py": kernel}
    script = f"#!{venv_bin}/python\nfrom triton import main\n"
    (site / "triton").mkdir(parents=True)
    for rel, text in files.items():
        (site / rel).write_text(text)
    info = site / "flagtree-3.6.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flagtree\nVersion: 3.6.0\n")
    (info / "top_level.txt").write_text("triton\n")
    (info / "INSTALLER").write_text("pip\n")
    rows = [f"{rel},{digest(text)},{len(text)}" for rel, text in files.items()]
    rows += [f"../../../bin/proton,{digest(script)},{len(script)}"]
    rows += [f"{info.name}/INSTALLER,{digest('pip')},4", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def test_one_wheel_in_two_venvs_has_one_fingerprint_and_another_build_another(
    tmp_path, monkeypatch
):
    import importlib.metadata as md

    monkeypatch.undo()  # the real fingerprint, over these fake installs

    def fingerprint(site: Path) -> str:
        monkeypatch.setattr(md, "packages_distributions", lambda: {"triton": ["flagtree"]})
        monkeypatch.setattr(md, "distribution", lambda name: md.PathDistribution(
            next(site.glob("*.dist-info"))))  # fmt: skip
        return codegen.compiler_fingerprint()

    for name, venv, kernel in [("a", "/runner-1/venv/bin", "pass\n"),
                               ("b", "/opt/other/venv/bin", "pass\n"),
                               ("c", "/runner-1/venv/bin", "x = 1\n")]:  # fmt: skip
        _install(tmp_path / name, venv, kernel)
    a, b, c = (fingerprint(tmp_path / n) for n in "abc")
    assert a.startswith("flagtree 3.6.0 sha256:")
    assert a == b  # the same wheel, other venvs and machines
    assert a != c  # a file of the package differs: another compiler


def test_screen_only_hands_the_shard_jobs_rebuild_to_the_screen(tmp_path, ops_dir):
    # --rebuilt: the screen classifies what `zlbench codegen --shard K/N` jobs rebuilt,
    # checked against this baseline's manifest and this compiler (codegen.shards)
    bl = baseline(tmp_path / "bl")
    seam = FakeScreen(ADD_SAME, MM_CHANGED)
    shards = (tmp_path / "s1", tmp_path / "s2")
    rc, err = run(tmp_path, bl, ops_dir, tmp_path / "screen", seam=seam, codegen_rebuilt=shards)
    assert rc == 0, err
    (opts,) = seam.calls
    sha = hashlib.sha256((bl / "manifest.yaml").read_bytes()).hexdigest()
    assert opts.rebuilt == codegen.RebuiltInput(shards, sha, FINGERPRINT)
    # the GPU job takes a finished screen: --rebuilt there is refused
    with pytest.raises(ZlbenchError, match="--rebuilt feeds the screen"):
        run(tmp_path, bl, ops_dir, tmp_path / "gpu", screen=tmp_path / "screen",
            codegen_rebuilt=shards)  # fmt: skip


def test_a_screen_left_interrupted_is_refused(tmp_path, ops_dir):
    """A screen job stopped after an earlier whole screen in the same dir: its
    INTERRUPTED marker stands, so the GPU job does not time the stale plan."""
    bl = baseline(tmp_path / "bl")
    screen = screen_job(tmp_path, bl, ops_dir)
    (screen / "codegen" / "INTERRUPTED").write_text("codegen screen interrupted\n")
    why = refused(tmp_path, bl, ops_dir, screen)
    assert "interrupted" in why and "codegen.partial.md" in why


class CompilingScreen(FakeScreen):
    """The fake screen, leaving a triton cache group per kernel in its cache_out."""

    def __call__(self, opts, say):
        if opts.cache_out is not None:
            for k in self.kernels:
                (opts.cache_out / f"key-{k.kernel_id}").mkdir(parents=True)
                (opts.cache_out / f"key-{k.kernel_id}" / f"__grp__{k.name}.json").write_text("{}")
        return super().__call__(opts, say)


def test_a_kernel_cache_carries_the_screen_jobs_kernels_to_the_gpu_job(tmp_path, ops_dir):
    """``--kernel-cache DIR`` on both jobs of one machine (a gate over device calls): the
    screen job compiles into DIR's dir for this compiler and notes what it built; the
    GPU job's measure step loads them from there. Without it the screen job keeps
    nothing (a CPU job's kernels are not the GPU's to load)."""
    from zlbench.protocol.cache import built_ids, cached_kernels, kernel_cache_dir

    bl, kept = baseline(tmp_path / "bl"), tmp_path / "kc"
    built = MM_CHANGED.model_copy(update={"binary_digest": "b" * 16})
    out = tmp_path / "screen"
    rc, err = run(tmp_path, bl, ops_dir, out, seam=CompilingScreen(ADD_SAME, built),
                  kernel_cache=kept)  # fmt: skip
    assert rc == 0, err
    mine = kernel_cache_dir(kept, FINGERPRINT)
    assert cached_kernels(mine) == 2 and built_ids(mine) == {built.kernel_id}
    batch = FakeBatch(good())
    rc, err = run(tmp_path, bl, ops_dir, tmp_path / "gpu", screen=out, measure=batch,
                  kernel_cache=kept)  # fmt: skip
    assert rc == 0, err
    assert {r.shared_cache for r in batch.requests} == {mine}
    rc, err = run(tmp_path, bl, ops_dir, tmp_path / "plain", seam=CompilingScreen(ADD_SAME))
    assert rc == 0, err  # no --kernel-cache: the screen job compiles into no kept dir
    assert cached_kernels(mine) == 2
