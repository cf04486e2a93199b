"""The gate's codegen screen against the base compiler (docs/codegen.md, "PR against
its base compiler"), with the screen seam faked as in test_gate_screen_job: ``gate
--screen-only --base-compiler ENV`` hands the screen the base side (its fingerprint, its
environment, the cache dir) and stamps its plan with that base; a measuring gate given
the plan with ``--screen`` takes it only with the same base (another base, or none,
is one line, exit 2, nothing written); a plan screened without a base is taken by a gate
with one (it times a superset). A base that is the PR's own build is one line, exit 2.
The real screen on both sides: tests/codegen/test_codegen_base_screen.py."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from test_gate_codegen import ADD_SAME, MM_CHANGED, FakeBatch, FakeScreen, baseline, good

from zlbench.cli import build_parser
from zlbench.cli.gate_cmd import job_from_args
from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.models import AbCompiler, CodegenScreen, Selection, TimingPlanFile, load_json_model
from zlbench.models.base import dump_json_model
from zlbench.workflow import ab, codegen, screen_job
from zlbench.workflow.ab import AbOptions
from zlbench.workflow.gate import GateJob, GateSeams
from zlbench.workflow.screen_job import run_gate_job

PR_FP = "flagtree 3.6.0+pr sha256:00112233aabbccdd"
BASE_FP = {"base-a": "flagtree 3.6.0+a sha256:aaaaaaaaaaaaaaaa",
           "base-b": "flagtree 3.6.0+b sha256:bbbbbbbbbbbbbbbb"}  # fmt: skip


@pytest.fixture(autouse=True)
def compilers(monkeypatch):
    """The PR's build and two base builds (site dirs named base-a, base-b), as the
    fingerprint and the A/B's probe see them; nothing is started."""
    monkeypatch.setattr(codegen, "compiler_fingerprint", lambda: PR_FP)
    monkeypatch.setattr(codegen, "base_fingerprint", lambda env: BASE_FP[Path(env.spec).name])

    def probe(side, base=None):
        return AbCompiler(env=side.spec, dist="flagtree", path=f"/site/{side.spec}/triton")

    monkeypatch.setattr(ab, "probe_compiler", probe)


@pytest.fixture
def sites(tmp_path) -> dict[str, str]:
    out = {}
    for name in BASE_FP:
        (tmp_path / name).mkdir()
        out[name] = str(tmp_path / name)
    return out


class BaseScreen(FakeScreen):
    """The screen seam, saying what decided as the real one does."""

    def __call__(self, opts, say) -> CodegenScreen:
        s = super().__call__(opts, say)
        s.decided_by = "base" if opts.base is not None else "baseline"
        s.base_compiler = opts.base.fingerprint if opts.base is not None else ""
        dump_json_model(opts.out / "codegen.json", s)
        return s


def job(bl, ops_dir, out, base: str | None, tmp_path) -> GateJob:
    return GateJob(
        baseline=str(bl),
        out=out,
        selection=Selection(ops_dir=ops_dir),
        time="changed",
        ab=AbOptions(base_compiler=base),
        base_screen_cache=tmp_path / "cache",
    )


def run(j: GateJob, seam=None, **kw) -> tuple[int, str]:
    err = io.StringIO()
    seams = GateSeams(measure=FakeBatch(good()), screen=seam or BaseScreen(ADD_SAME, MM_CHANGED))
    seams.stdout = seams.stderr = err
    return run_gate_job(j, seams, **kw), err.getvalue()


def screen_only(tmp_path, bl, ops_dir, base: str | None) -> tuple[Path, BaseScreen]:
    out, seam = tmp_path / f"screen-{Path(base or 'none').name}", BaseScreen(ADD_SAME, MM_CHANGED)
    rc, err = run(job(bl, ops_dir, out, base, tmp_path), seam, screen_only=True)
    assert rc == 0, err
    return out, seam


def plan_of(out: Path) -> TimingPlanFile:
    return load_json_model(out / "codegen" / "timing.json", TimingPlanFile)


@pytest.fixture
def taken(monkeypatch) -> list:
    """The measuring gate's run after the plan was checked: (job, its screen seam)."""
    seen: list = []

    def fake_run_gate(j, seams):
        seen.append((j, seams.screen))
        return 0

    monkeypatch.setattr(screen_job, "run_gate", fake_run_gate)
    return seen


def test_screen_only_takes_the_base_and_stamps_its_plan_with_it(tmp_path, ops_dir, sites):
    bl = baseline(tmp_path / "bl")
    out, seam = screen_only(tmp_path, bl, ops_dir, sites["base-a"])
    (opts,) = seam.calls
    assert opts.base is not None and opts.base.fingerprint == BASE_FP["base-a"]
    assert opts.base.front == (sites["base-a"],) and opts.base.cache == tmp_path / "cache"
    plan = plan_of(out)
    assert plan.decided_by == "base" and plan.base_compiler == BASE_FP["base-a"]
    assert plan.compiler == PR_FP and plan.screen_only


def test_without_a_base_the_screen_has_none_and_the_plan_says_the_baseline_decided(
    tmp_path, ops_dir
):
    bl = baseline(tmp_path / "bl")
    out, seam = screen_only(tmp_path, bl, ops_dir, None)
    assert seam.calls[0].base is None
    assert plan_of(out).decided_by == "baseline" and not plan_of(out).base_compiler


def test_the_gpu_job_takes_the_plan_with_the_same_base(tmp_path, ops_dir, sites, taken):
    bl = baseline(tmp_path / "bl")
    screen, _ = screen_only(tmp_path, bl, ops_dir, sites["base-a"])
    rc, err = run(job(bl, ops_dir, tmp_path / "gpu", sites["base-a"], tmp_path), screen=screen)
    assert rc == 0, err
    ((j, artifact),) = taken
    assert artifact.plan.base_compiler == BASE_FP["base-a"] and j.time == "changed"
    # the base goes with the job, so that a --kernel-cache keeps its builds in its own dir
    assert j.codegen_base is not None and j.codegen_base.fingerprint == BASE_FP["base-a"]
    from zlbench.protocol.cache import kernel_cache_dir
    from zlbench.workflow.gate import kernel_caches

    kept = tmp_path / "kc"
    pr, base = kernel_caches(replace(j, kernel_cache=kept))
    assert (pr, base) == (kernel_cache_dir(kept, PR_FP), kernel_cache_dir(kept, BASE_FP["base-a"]))
    assert pr.is_dir() and base.is_dir() and pr != base
    assert kernel_caches(j) is None  # without --kernel-cache: the gate's own caches


def test_a_plan_screened_without_a_base_is_taken_by_a_gate_with_one(
    tmp_path, ops_dir, sites, taken
):
    bl = baseline(tmp_path / "bl")
    screen, _ = screen_only(tmp_path, bl, ops_dir, None)
    rc, _ = run(job(bl, ops_dir, tmp_path / "gpu", sites["base-a"], tmp_path), screen=screen)
    assert rc == 0 and len(taken) == 1


@pytest.mark.parametrize(("gpu_base", "why"), [
    ("base-b", "screened against another base compiler"),
    (None, "this gate has no --base-compiler"),
])  # fmt: skip
def test_the_gpu_job_refuses_a_plan_of_another_base_or_none(
    tmp_path, ops_dir, sites, taken, gpu_base, why
):
    bl = baseline(tmp_path / "bl")
    screen, _ = screen_only(tmp_path, bl, ops_dir, sites["base-a"])
    out = tmp_path / "gpu"
    with pytest.raises(ZlbenchError) as e:
        run(job(bl, ops_dir, out, sites[gpu_base] if gpu_base else None, tmp_path), screen=screen)
    assert why in str(e.value) and "\n" not in str(e.value)
    assert not out.exists() and taken == []


def test_a_plan_whose_screen_says_another_comparison_is_refused(tmp_path, ops_dir, sites, taken):
    bl = baseline(tmp_path / "bl")
    screen, _ = screen_only(tmp_path, bl, ops_dir, sites["base-a"])
    path = screen / "codegen" / "timing.json"
    plan = plan_of(screen).model_copy(update={"decided_by": "baseline", "base_compiler": ""})
    path.write_text(plan.model_dump_json())  # edited to pass a gate without a base
    with pytest.raises(ZlbenchError) as e:
        run(job(bl, ops_dir, tmp_path / "gpu", None, tmp_path), screen=screen)
    assert "say different comparisons decided" in str(e.value) and taken == []


def test_a_base_that_is_the_prs_own_build_is_one_line_and_writes_nothing(
    tmp_path, ops_dir, sites, monkeypatch
):
    bl = baseline(tmp_path / "bl")
    monkeypatch.setattr(codegen, "base_fingerprint", lambda env: PR_FP)
    monkeypatch.setattr(codegen, "base_triton_dir", lambda env: codegen.triton_dir())
    out = tmp_path / "screen"
    with pytest.raises(ZlbenchError) as e:
        run(job(bl, ops_dir, out, sites["base-a"], tmp_path), screen_only=True)
    assert "is the PR's own install" in str(e.value) and "\n" not in str(e.value)
    assert not out.exists()


def test_another_install_of_the_prs_build_is_an_aa_decided_by_the_baseline(
    tmp_path, ops_dir, sites, monkeypatch, capsys
):
    """The same build installed apart (an A/A): no kernel can differ between PR and base,
    so the baseline's records decide what is timed, and a line says so."""
    bl = baseline(tmp_path / "bl")
    monkeypatch.setattr(codegen, "base_fingerprint", lambda env: PR_FP)
    monkeypatch.setattr(codegen, "base_triton_dir", lambda env: str(tmp_path / "other"))
    j = job(bl, ops_dir, tmp_path / "screen", sites["base-a"], tmp_path)
    assert codegen.base_side(j.ab.base_compiler, None, print) is None
    assert "is the same build as the PR's" in capsys.readouterr().out


def test_the_base_screen_cache_defaults_under_the_cache_dir(tmp_path):
    argv = ["gate", "--baseline", "bl", "--base-compiler", "env"]
    settings = Settings.from_env({"ZLBENCH_CACHE_DIR": str(tmp_path / "c")})
    j = job_from_args(build_parser().parse_args(argv), settings, tmp_path / "ops")
    assert j.base_screen_cache == tmp_path / "c" / "base-screen"
    given = build_parser().parse_args([*argv, "--base-screen-cache", str(tmp_path / "x")])
    assert job_from_args(given, settings, tmp_path / "ops").base_screen_cache == tmp_path / "x"


def test_the_reports_say_which_comparison_decided():
    from zlbench.workflow.codegen import summarize

    s = CodegenScreen(baseline_dir="bl", decided_by="base", base_compiler=BASE_FP["base-a"])
    assert f"PR vs base compiler {BASE_FP['base-a']}" in summarize(s, "changed", "x").note
    assert summarize(s.model_copy(update={"decided_by": "baseline"}), "changed", "x").note == ""


@pytest.mark.proc
def test_this_venv_given_as_its_own_base_is_the_prs_own_install(monkeypatch):
    """The real fingerprint, read in the base's environment (a child process): this
    interpreter's venv as --base-compiler is the PR's own build."""
    import sys

    from zlbench.runner.ab.env import resolve_env
    from zlbench.workflow.codegen_artifact import compiler_fingerprint

    monkeypatch.undo()  # the real fingerprints, not the fixture's
    venv = Path(sys.prefix)
    if not (venv / "bin" / "python").exists():
        pytest.skip("not a venv")
    assert codegen.base_fingerprint(resolve_env(str(venv))) == compiler_fingerprint()
    with pytest.raises(ZlbenchError, match="is the PR.s own install"):
        codegen.base_side(str(venv), None)
