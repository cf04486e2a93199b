"""The codegen screen against the base compiler (docs/codegen.md, "PR against its base
compiler"), with the stand-in rebuild worker (tests/support/fakeworker.py: no triton)
on both sides: the base side's workers get their own plan, as a base build in its own
environment compiles its own code.

A kernel that differs from the baseline's recording compiler but is identical between
the PR and the base is identical (its op not timed), the difference kept as context; a
kernel that differs between the PR and the base is changed, its diff base against PR;
one the PR fails and the base builds is failed. Without a base the baseline's records
decide, as before. The base side is kept in a cache per (base build, baseline) and
reused; another baseline or another base build never finds it, and an entry stamped
for another one is refused in one line."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.cgsynth import record, request, stage_texts, use, write_run
from zlbench.codegen import worker_pool
from zlbench.codegen.base_cache import ENTRY_PREFIX, entry_dir
from zlbench.codegen.screen import BaseSide, ScreenOptions, run_screen
from zlbench.codegen.select import ops_to_time
from zlbench.codegen.shards import manifest_sha256
from zlbench.errors import ZlbenchError
from zlbench.models import BaselineResult
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen

pytestmark = pytest.mark.proc  # the rebuild workers are child processes

REPO = Path(__file__).resolve().parents[2]
ADD, MUL, SUM = request("add_kernel"), request("mul_kernel"), request("sum_kernel", block=128)
BASE_FP = "triton 3.5.0+base sha256:00000000000000aa"


def _texts(tag: str, **changed: str) -> dict[str, str]:
    return {k: v.decode() for k, v in stage_texts(tag, **changed).items()}


RECORDED = {
    n: {"texts": _texts(n.split("_")[0])} for n in ("add_kernel", "mul_kernel", "sum_kernel")
}
# the base build: add_kernel's TTGIR is not the baseline's recording compiler's
BASE = RECORDED | {"add_kernel": {"texts": _texts("add", ttgir="base ttgir\n")}}
# the PR: add_kernel as the base builds it; mul_kernel changed; sum_kernel fails
PR = BASE | {"mul_kernel": {"texts": _texts("mul", ttgir="pr ttgir\n")}, "sum_kernel": "fail"}


@pytest.fixture
def plans(monkeypatch, tmp_path):
    """The stand-in worker on both sides; ``plans(pr, base)`` sets what each compiles
    (the PR's through FAKE_CODEGEN_PLAN, the base's through its BaseSide env)."""
    monkeypatch.setattr(worker_pool, "WORKER_MODULE", "tests.support.fakeworker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pr_file, base_file = tmp_path / "pr_plan.json", tmp_path / "base_plan.json"
    monkeypatch.setenv("FAKE_CODEGEN_PLAN", str(pr_file))

    def set_plans(pr: dict, base: dict | None = None) -> Path:
        pr_file.write_text(json.dumps(pr))
        if base is not None:
            base_file.write_text(json.dumps(base))
        return base_file

    return set_plans


@pytest.fixture
def baseline(tmp_path) -> Path:
    """Three ops, one kernel each, recorded by the baseline's compiler; a manifest (its
    sha256 keys the base side's cache)."""
    root = tmp_path / "bl"
    for op, req in (("add", ADD), ("mul", MUL), ("sum", SUM)):
        tag = req.kernel.name.split("_")[0]
        write_run(root, op, [(record(req, stage_texts(tag), [use(op)]), stage_texts(tag))])
    (root / "manifest.yaml").write_text("recorded: by the baseline's compiler\n")
    return root


def base_side(plan: Path, cache: Path | None, fingerprint: str = BASE_FP) -> BaseSide:
    return BaseSide("base-env", fingerprint, cache=cache, env={"FAKE_CODEGEN_PLAN": str(plan)})


def screen(baseline: Path, out: Path, base: BaseSide | None, lines: list[str] | None = None):
    opts = ScreenOptions(baseline=baseline, out=out, jobs=2, base=base)
    return run_screen(opts, say=(lines if lines is not None else []).append)


def by_name(s: CodegenScreen) -> dict:
    return {k.name: k for k in s.kernels}


def timed_ops(s: CodegenScreen) -> set[str]:
    ops = {
        f"main/{op}": BaselineResult(repo="main", run_name=op, op=op, timing="cudagraph")
        for op in ("add", "mul", "sum")
    }
    return ops_to_time(s, ops).timed_ops()


def test_a_kernel_that_differs_only_from_the_baselines_compiler_is_not_timed(
    baseline, plans, tmp_path
):
    base_plan = plans(PR, BASE)
    s = screen(baseline, tmp_path / "out", base_side(base_plan, None))
    k = by_name(s)
    assert s.decided_by == "base" and s.base_compiler == BASE_FP
    add = k["add_kernel"]
    assert add.status is CodegenClass.IDENTICAL  # the PR builds it as the base does
    assert add.vs_baseline is CodegenClass.TTGIR  # the baseline's compiler did not
    assert any("also differs from the baseline's compiler" in n for n in add.notes)
    assert k["mul_kernel"].status is CodegenClass.TTGIR  # the PR's own change
    assert k["sum_kernel"].status is CodegenClass.FAILED  # the PR fails, the base builds it
    assert timed_ops(s) == {"main/mul", "main/sum"}  # add not timed
    diff = (tmp_path / "out" / k["mul_kernel"].diff_file).read_text()
    assert "--- base/" in diff and "+pr ttgir" in diff and "-#blocked = mul" in diff
    assert not (tmp_path / "out" / "diffs" / f"{add.kernel_id}.diff").exists()
    assert s.vs_baseline_counts["ttgir_changed"] == 2  # add and mul differ from the records
    md = (tmp_path / "out" / "codegen.md").read_text()
    assert f"Decided by: PR vs base compiler {BASE_FP}" in md
    assert "against the baseline's recording compiler 2 of 3 kernels differ" in md


def test_without_a_base_the_baselines_records_decide(baseline, plans, tmp_path):
    plans(PR)
    s = screen(baseline, tmp_path / "out", None)
    k = by_name(s)
    assert s.decided_by == "baseline" and not s.base_compiler
    assert k["add_kernel"].status is CodegenClass.TTGIR and k["add_kernel"].vs_baseline is None
    assert timed_ops(s) == {"main/add", "main/mul", "main/sum"}
    md = (tmp_path / "out" / "codegen.md").read_text()
    assert "Decided by: PR vs the baseline's recording compiler" in md


def test_a_kernel_both_fail_or_only_the_base_fails_says_so(baseline, plans, tmp_path):
    """The PR fails sum_kernel as the base does (still failed: the baseline's kernel does
    not build); the base fails mul_kernel, which the PR builds: the records decide it."""
    base_plan = plans(PR, BASE | {"sum_kernel": "fail", "mul_kernel": "fail"})
    k = by_name(screen(baseline, tmp_path / "out", base_side(base_plan, None)))
    assert k["sum_kernel"].status is CodegenClass.FAILED
    assert any("fails with the base compiler too" in n for n in k["sum_kernel"].notes)
    assert k["mul_kernel"].status is CodegenClass.TTGIR and k["mul_kernel"].vs_baseline is None
    assert any("not built by the base compiler" in n for n in k["mul_kernel"].notes)


def test_the_base_rebuild_shows_progress_then_the_prs(baseline, plans, tmp_path):
    base_plan = plans(PR, BASE)
    lines: list[str] = []
    screen(baseline, tmp_path / "out", base_side(base_plan, None), lines)
    base = [ln for ln in lines if ln.startswith("codegen: base chunk")]
    pr = [ln for ln in lines if ln.startswith("codegen: chunk")]
    assert base and pr and lines.index(base[-1]) < lines.index(pr[0])
    assert "3/3 kernels" in base[-1] and "ETA" in base[-1]
    assert "3/3 kernels, 1 changed, 1 failed" in pr[-1]  # counted against the base
    assert any(
        ln.startswith("codegen: rebuilding 3 kernel(s) with the base compiler") for ln in lines
    )


def test_each_sides_rebuild_puts_its_kernels_in_its_own_triton_cache_dir(baseline, plans, tmp_path):
    """The gate's replay builds each side's binaries in the dir the screen compiled that
    side into, so neither is compiled twice; the base's never go where the PR's measure
    step looks."""
    base_plan = plans(PR, BASE)
    pr_dir, base_dir = tmp_path / "pr-cache", tmp_path / "base-cache"
    opts = ScreenOptions(baseline=baseline, out=tmp_path / "out", jobs=2,
                         base=base_side(base_plan, None), cache_out=pr_dir,
                         base_cache_out=base_dir)  # fmt: skip
    run_screen(opts, say=lambda line: None)

    def groups(d: Path) -> dict[str, str]:
        return {g.name: g.read_text() for g in d.glob("*/__grp__*")}

    built_by_base = groups(base_dir)
    assert sorted(built_by_base) == ["__grp__add_kernel.json", "__grp__mul_kernel.json",
                                     "__grp__sum_kernel.json"]  # fmt: skip
    assert set(built_by_base.values()) == {str(base_plan)}
    assert set(groups(pr_dir)) == {"__grp__add_kernel.json", "__grp__mul_kernel.json"}
    # no base-built kernel in the PR's dir (which lacks sum_kernel: the PR fails it)
    assert str(base_plan) not in set(groups(pr_dir).values())


def test_the_base_side_is_cached_and_reused(baseline, plans, tmp_path):
    cache = tmp_path / "cache"
    base_plan = plans(PR, BASE)
    lines: list[str] = []
    first = screen(baseline, tmp_path / "one", base_side(base_plan, cache), lines)
    entries = [p.name for p in cache.iterdir()]
    assert len(entries) == 1 and entries[0].startswith(ENTRY_PREFIX)
    assert first.base_rebuild == "rebuilt" and any("kept in" in ln for ln in lines)
    base_plan.unlink()  # a base worker now dies at once: only the cache can serve
    lines.clear()
    again = screen(baseline, tmp_path / "two", base_side(base_plan, cache), lines)
    assert again.base_rebuild.startswith("cached ")
    assert not any(ln.startswith("codegen: base chunk") for ln in lines)
    assert [(k.kernel_id, k.status) for k in again.kernels] == [
        (k.kernel_id, k.status) for k in first.kernels
    ]
    md = (tmp_path / "two" / "codegen.md").read_text()
    assert "base side: cached" in md


@pytest.mark.parametrize("other", ["baseline", "base build"])
def test_a_cache_of_another_baseline_or_base_build_is_not_reused(baseline, plans, tmp_path, other):
    cache = tmp_path / "cache"
    base_plan = plans(PR, BASE)
    screen(baseline, tmp_path / "one", base_side(base_plan, cache))
    # the other base (or the base for the other baseline) builds mul_kernel as the PR does
    plans(PR, BASE | {"mul_kernel": PR["mul_kernel"]})
    fingerprint = BASE_FP
    if other == "baseline":
        (baseline / "manifest.yaml").write_text("recorded: again\n")
    else:
        fingerprint = "triton 3.5.0+base sha256:00000000000000bb"
    lines: list[str] = []
    s = screen(baseline, tmp_path / "two", base_side(base_plan, cache, fingerprint), lines)
    assert s.base_rebuild == "rebuilt" and any(ln.startswith("codegen: base chunk") for ln in lines)
    assert by_name(s)["mul_kernel"].status is CodegenClass.IDENTICAL  # not the stale entry's
    assert len(list(cache.iterdir())) == 2  # each (base build, baseline) its own entry


def test_an_entry_stamped_for_another_base_is_refused_in_one_line(baseline, plans, tmp_path):
    cache = tmp_path / "cache"
    base_plan = plans(PR, BASE)
    screen(baseline, tmp_path / "one", base_side(base_plan, cache))
    other = "triton 3.5.0+base sha256:00000000000000bb"
    (entry,) = cache.iterdir()
    shutil.copytree(entry, entry_dir(cache, other, manifest_sha256(baseline)))  # by hand
    out = tmp_path / "two"
    with pytest.raises(ZlbenchError) as e:
        screen(baseline, out, base_side(base_plan, cache, other))
    assert "stale" in str(e.value) and "\n" not in str(e.value)
    assert not (out / "codegen.json").exists() and not (out / "codegen.md").exists()


def test_a_base_rebuild_with_kernels_not_loaded_is_not_kept(baseline, plans, tmp_path):
    cache = tmp_path / "cache"
    base_plan = plans(PR, BASE | {"sum_kernel": "loadfail"})
    lines: list[str] = []
    screen(baseline, tmp_path / "out", base_side(base_plan, cache), lines)
    assert not cache.exists() or not list(cache.iterdir())
    assert any("not kept in the cache: 1 of 3 kernel(s)" in ln for ln in lines)


def test_a_base_that_loads_nothing_is_one_line(baseline, plans, tmp_path):
    base_plan = plans(PR, {k: "loadfail" for k in RECORDED})
    with pytest.raises(ZlbenchError) as e:
        screen(baseline, tmp_path / "out", base_side(base_plan, None))
    assert "the base compiler rebuilt none of the 3 kernel(s)" in str(e.value)
    assert not (tmp_path / "out" / "codegen.json").exists()


def test_a_screen_narrowed_to_ops_rebuilds_their_kernels_only_and_keeps_no_partial_entry(
    baseline, plans, tmp_path
):
    """A gate's --ops / --ops-file: only the kernels of the ops in scope are rebuilt (both
    sides) and classified. The narrowed base side is never kept as the baseline's cache
    entry (a later whole screen would find it short); a whole entry kept earlier serves a
    narrowed screen."""
    cache = tmp_path / "cache"
    base_plan = plans(PR, BASE)
    lines: list[str] = []
    opts = ScreenOptions(baseline=baseline, out=tmp_path / "one", jobs=2,
                         base=base_side(base_plan, cache), ops=frozenset({"main/mul"}))  # fmt: skip
    narrowed = run_screen(opts, say=lines.append)
    assert [k.name for k in narrowed.kernels] == ["mul_kernel"]
    assert narrowed.kernels[0].status is CodegenClass.TTGIR
    assert "codegen: screening 1 of the baseline's 3 kernel(s)" in lines[0]
    assert any("rebuilding 1 kernel(s) with the base compiler" in ln for ln in lines)
    assert not cache.exists() or not any(cache.iterdir())  # no partial entry
    assert any("base side not kept in the cache: 1 of the baseline's 3" in ln for ln in lines)
    whole = screen(baseline, tmp_path / "two", base_side(base_plan, cache))
    assert len(whole.kernels) == 3 and whole.base_rebuild == "rebuilt"
    base_plan.unlink()  # a base worker now dies at once: only the cache can serve
    again = run_screen(replace(opts, out=tmp_path / "three"), say=lambda line: None)
    assert again.base_rebuild.startswith("cached ")
    assert [(k.name, k.status) for k in again.kernels] == [("mul_kernel", CodegenClass.TTGIR)]
