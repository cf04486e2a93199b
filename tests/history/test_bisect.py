"""zlbench bisect, phase 1: the search on a synthetic digest function, exit-125 skips,
resume, the commit range's linearity, bad input (issue 52 item 4). No compiler runs:
the probe's rebuild is a seam that returns synthetic records (tests.support.cgsynth)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from tests.support import cgsynth
from tests.support.cli import zlbench_cli
from zlbench.errors import ZlbenchError
from zlbench.history import bisect as logic
from zlbench.models import load_json_model
from zlbench.models.bisect import BISECT_JSON, BisectState, Probe
from zlbench.models.codegen import CompileRecord
from zlbench.workflow import bisect as wf

ROW = "main/softmax float16 " + cgsynth.SHAPE


def commits(n: int) -> list[str]:
    return [f"c{i:02d}" for i in range(n)]


def search(n: int, first: int | None, skip=frozenset()) -> tuple[logic.Found, list[int]]:
    """Run the search over n commits whose digest changes at ``first`` (None: never)."""
    cs, probes, built = commits(n), {}, []
    while True:
        step = logic.next_step(cs, probes)
        if isinstance(step, logic.Found):
            return step, built
        if step.index in skip:
            probes[step.commit] = Probe(commit=step.commit, status="skip", why="125")
            continue
        built.append(step.index)
        new = first is not None and step.index >= first
        probes[step.commit] = Probe(
            commit=step.commit, status="built", digests={"k": {"ttgir": "b" if new else "a"}}
        )


@pytest.mark.parametrize("n", [2, 3, 5, 16, 17, 40])
def test_the_search_finds_every_step_in_log2_n_plus_one_builds(n):
    for first in [*range(1, n), None]:
        found, built = search(n, first)
        assert len(built) <= math.ceil(math.log2(n)) + 1, (n, first, built)
        if first is None:
            assert found.hi is None and found.lo == f"c{n - 1:02d}"
        else:
            assert (found.lo, found.hi) == (f"c{first - 1:02d}", f"c{first:02d}")


def test_sixteen_commits_take_at_most_five_builds():
    assert max(len(search(16, f)[1]) for f in [*range(1, 16), None]) == 5


def test_a_skipped_commit_is_stepped_around_and_named_when_it_may_be_the_one():
    found, built = search(16, 11, skip={8})
    assert (found.lo, found.hi, found.skipped) == ("c10", "c11", [])
    assert 8 not in built
    found, _ = search(16, 11, skip={11})
    assert (found.lo, found.hi, found.skipped) == ("c10", "c12", ["c11"])


def test_good_that_cannot_be_built_is_one_line():
    with pytest.raises(ZlbenchError, match="GOOD c00 could not be built"):
        logic.next_step(commits(4), {"c00": Probe(commit="c00", status="skip", why="125")})


def test_linear_range_refuses_bad_ranges():
    order = commits(6)
    assert logic.linear_range(order, "c01", "c04") == ["c01", "c02", "c03", "c04"]
    with pytest.raises(ZlbenchError, match="same commit"):
        logic.linear_range(order, "c01", "c01")
    with pytest.raises(ZlbenchError, match="not linear: GOOD c04 is not an ancestor"):
        logic.linear_range(order, "c04", "c01")
    with pytest.raises(ZlbenchError, match="BAD c99 is not in the commit list"):
        logic.linear_range(order, "c01", "c99")
    with pytest.raises(ZlbenchError, match="listed twice"):
        logic.linear_range([*order, "c02"], "c01", "c04")


def test_store_digests_name_kernels():
    assert logic.digest_changes("a=1;b=2", "a=1;b=3") == ["b"]
    assert logic.digest_changes(
        "k1:identical:\nk2:identical:", "k1:identical:\nk2:ttgir:ttgir"
    ) == ["k2"]
    assert logic.digest_changes("0123abcd", "89ab0000") == ["(row digest)"]
    assert logic.digest_changes("", "89ab0000") == []


# --------------------------------------------------------------------------- the job


@pytest.fixture
def baseline(tmp_path) -> Path:
    """A baseline of softmax (two timed kernels) and add (one), synthetic records."""
    root = tmp_path / "baseline"
    soft = [
        cgsynth.record(
            cgsynth.request("softmax_kernel", b),
            cgsynth.stage_texts(f"s{b}"),
            uses=[cgsynth.use("softmax")],
        )  # fmt: skip
        for b in (128, 256)
    ]
    cgsynth.write_run(
        root, "softmax", [(r, cgsynth.stage_texts(r.request.kernel.name)) for r in soft]
    )
    add = cgsynth.record(
        cgsynth.request("add_kernel"), cgsynth.stage_texts("a"), uses=[cgsynth.use("add")]
    )
    cgsynth.write_run(root, "add", [(add, cgsynth.stage_texts("a"))])
    return root


class FakeCompilers:
    """Commit i's compiler changes softmax_kernel BLOCK=256's TTGIR from ``first`` on;
    ``unbuildable`` commits exit 125; counts rebuilds and build-command runs."""

    def __init__(self, first: int | None, unbuildable=frozenset()):
        self.first, self.unbuildable = first, unbuildable
        self.rebuilt: list[str] = []
        self.built: list[str] = []

    def build(self, cmd: str, commit: str, dest: Path) -> int:
        self.built.append(commit)
        if int(commit[1:]) in self.unbuildable:
            return 125
        (dest / "triton").mkdir(parents=True)
        return 0

    def rebuild(self, job, base, ids, env, tmp):
        commit = Path(env.spec).name
        self.rebuilt.append(commit)
        new = self.first is not None and int(commit[1:]) >= self.first
        records, dirs = {}, {}
        for i in ids:
            rec = base.records[i]
            texts = cgsynth.stage_texts(rec.request.kernel.name)
            block = rec.request.constexprs[0].value
            if new and block == 256:
                texts = cgsynth.stage_texts(rec.request.kernel.name, ttgir="#blocked = other\n")
            cg = tmp / "cg"
            cgsynth.write_blobs(cg, texts)
            records[i] = CompileRecord(id=i, request=rec.request, result=cgsynth.result(texts))
            dirs[i] = cg
        return records, dirs


def job(tmp_path, baseline, n=16, row=ROW, **kw) -> wf.BisectJob:
    cs = commits(n)
    return wf.BisectJob(
        good=cs[0], bad=cs[-1], row=row, baseline=baseline, out=tmp_path / "out",
        commits=cs, compilers=tmp_path / "compilers", build_cmd="build {commit} {out}", **kw,
    )  # fmt: skip


def run(j, fake) -> BisectState:
    seams = wf.BisectSeams(build=fake.build, rebuild=fake.rebuild)
    return wf.run_bisect(j, seams, say=lambda s: None)


def test_bisect_names_the_commit_the_kernel_and_its_ir_diff(tmp_path, baseline):
    fake = FakeCompilers(first=11)
    state = run(job(tmp_path, baseline), fake)
    a = state.answer
    assert (a.found, a.commit, a.parent) == (True, "c11", "c10")
    assert [(k.name, k.first_stage) for k in a.kernels] == [("softmax_kernel", "ttgir")]
    assert len(fake.rebuilt) <= 5 and state.builds == len(fake.rebuilt)
    assert "add_kernel" not in {k.name for k in a.kernels}  # not the row's kernel
    diff = (tmp_path / "out" / a.kernels[0].diff_file).read_text()
    assert "-#blocked = softmax_kernel" in diff and "+#blocked = other" in diff
    report = (tmp_path / "out" / "report.md").read_text()
    assert "`c11`" in report and "softmax_kernel" in report and "ttgir" in report


def test_no_change_in_the_range_is_said(tmp_path, baseline):
    state = run(job(tmp_path, baseline), FakeCompilers(first=None))
    assert not state.answer.found and "no timed kernel" in state.answer.message


def test_exit_125_skips_a_commit_as_git_bisect_does(tmp_path, baseline):
    fake = FakeCompilers(first=11, unbuildable={8, 11})
    state = run(job(tmp_path, baseline), fake)
    a = state.answer
    assert (a.commit, a.parent, a.skipped_between) == ("c12", "c10", ["c11"])
    assert state.probes["c08"].status == "skip" and "125" in state.probes["c08"].why
    assert not (tmp_path / "compilers" / "c08").exists()  # nothing half-built kept
    assert "c08" not in fake.rebuilt


def test_only_a_compiler_the_build_command_made_is_marked_built(tmp_path, baseline):
    (tmp_path / "compilers" / "c00" / "triton").mkdir(parents=True)  # there before
    fake = FakeCompilers(first=11)
    state = run(job(tmp_path, baseline), fake)
    assert "c00" not in fake.built and not state.probes["c00"].built_compiler
    made = [c for c, p in state.probes.items() if p.built_compiler]
    assert made and sorted(made) == sorted(fake.built)


def test_another_build_failure_stops_with_one_line(tmp_path, baseline):
    fake = FakeCompilers(first=11)
    seams = wf.BisectSeams(build=lambda c, commit, d: 3, rebuild=fake.rebuild)
    with pytest.raises(ZlbenchError, match="exited 3"):
        wf.run_bisect(job(tmp_path, baseline), seams, say=lambda s: None)


def test_a_killed_bisect_resumes_and_a_finished_one_rebuilds_nothing(tmp_path, baseline):
    fake = FakeCompilers(first=11)

    def dies_on_third(j, base, ids, env, tmp):
        if len(fake.rebuilt) == 2:
            raise KeyboardInterrupt
        return fake.rebuild(j, base, ids, env, tmp)

    with pytest.raises(KeyboardInterrupt):
        wf.run_bisect(job(tmp_path, baseline), wf.BisectSeams(fake.build, dies_on_third), say=print)
    kept = load_json_model(tmp_path / "out" / BISECT_JSON, BisectState)
    assert len(kept.probes) == 2 and kept.answer is None
    again = FakeCompilers(first=11)
    state = run(job(tmp_path, baseline), again)
    assert state.answer.commit == "c11"
    assert not set(again.rebuilt) & set(kept.probes)  # recorded probes not redone
    assert not {"c00", "c08", "c12"} & set(again.built)  # built before: in the cache
    third = FakeCompilers(first=11)
    assert run(job(tmp_path, baseline), third).answer.commit == "c11" and third.rebuilt == []


def test_an_out_dir_of_another_bisect_is_refused(tmp_path, baseline):
    run(job(tmp_path, baseline), FakeCompilers(first=3))
    with pytest.raises(ZlbenchError, match="another bisect"):
        run(job(tmp_path, baseline, n=8), FakeCompilers(first=3))


def test_an_unknown_row_is_one_line(tmp_path, baseline):
    with pytest.raises(ZlbenchError, match="no such row"):
        run(job(tmp_path, baseline, row="main/softmax float16 [1, 2]"), FakeCompilers(3))


def test_a_missing_compiler_without_build_command_is_one_line(tmp_path, baseline):
    j = job(tmp_path, baseline)
    j.build_cmd = None
    with pytest.raises(ZlbenchError, match="no compiler for commit c00"):
        run(j, FakeCompilers(first=3))


# --------------------------------------------------------------------------- git ranges


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "flagtree"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.email", "t@t")
    _git(r, "config", "user.name", "t")
    for i in range(4):
        (r / "f").write_text(str(i))
        _git(r, "add", "f")
        _git(r, "commit", "-qm", f"c{i}")
    return r


@pytest.mark.proc
def test_git_ranges_linear_and_not(repo):
    log = _git(repo, "rev-list", "--reverse", "HEAD").split()
    assert wf.git_commits(repo, log[0], log[-1]) == log
    with pytest.raises(ZlbenchError, match="not an ancestor"):
        wf.git_commits(repo, log[-1], log[0])
    _git(repo, "checkout", "-qb", "side", log[1])
    (repo / "g").write_text("x")
    _git(repo, "add", "g")
    _git(repo, "commit", "-qm", "side")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-edit", "side")
    with pytest.raises(ZlbenchError, match="merge commit"):
        wf.git_commits(repo, log[0], "HEAD")
    with pytest.raises(ZlbenchError, match="same commit"):
        wf.git_commits(repo, log[1], log[1])


@pytest.mark.proc
@pytest.mark.parametrize(
    "argv, said",
    [
        (["c01", "c01"], "same commit"),
        (["c03", "c01"], "not linear"),
        (["c01", "c03", "--row", "main/nope float16 [1]"], "no such row"),
    ],
)
def test_the_cli_refuses_bad_input_in_one_line(tmp_path, baseline, argv, said):
    (tmp_path / "commits.txt").write_text("\n".join(commits(4)) + "\n")
    args = [*argv, "--row", ROW] if "--row" not in argv else argv
    p = zlbench_cli(
        "bisect", *args, "--baseline", str(baseline), "--commits", str(tmp_path / "commits.txt"),
        "--compilers", str(tmp_path / "c"), "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert said in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_store_where_good_is_not_faster_is_one_line(tmp_path):
    from zlbench.history.store import open_store
    from zlbench.models.history import GateRun, RowPoint

    path = tmp_path / "h.sqlite"
    with open_store(path) as store:
        for i, us in enumerate((20.0, 19.0)):
            run = GateRun(run_key=f"r{i}", commit=f"c{i:02d}", position=i, verdict="PASS")
            store.add_run(run, [RowPoint(row=ROW, op="main/softmax", value_us=us, verdict="PASS")])
    with pytest.raises(ZlbenchError, match="GOOD is not faster than BAD"):
        wf.check_store(str(path), ROW, "c00", "c01")
    with pytest.raises(ZlbenchError, match="no measured point at BAD c09"):
        wf.check_store(str(path), ROW, "c00", "c09")
    wf.check_store(str(path), ROW, "c01", "c00")  # slower at "BAD": fine


def test_confirm_runs_the_ab_of_the_commit_against_its_parent(tmp_path, baseline):
    seen = {}

    def confirm(cmd, env, out):
        seen.update(cmd=cmd, env=env)
        out.mkdir(parents=True)
        (out / "report.md").write_text(ab_report(r"REGRESSION: +8.1 % \[+7.9, +8.4\]"))
        return 1  # the commit's side slower

    j = job(tmp_path, baseline, confirm=True, confirm_args=["--ab-max-pairs", "40"])
    fake = FakeCompilers(first=11)
    state = wf.run_bisect(j, wf.BisectSeams(fake.build, fake.rebuild, confirm), say=lambda s: None)
    cmd = seen["cmd"]
    assert cmd[1:4] == ["-m", "zlbench", "ab"] and cmd[-2:] == ["--ab-max-pairs", "40"]
    assert cmd[cmd.index("--base-compiler") + 1] == str(tmp_path / "compilers" / "c10")
    assert seen["env"]["PYTHONPATH"].startswith(str(tmp_path / "compilers" / "c11"))
    assert cmd[cmd.index("--ops") + 1] == "main:softmax" and "float16" in cmd
    assert (
        state.confirmation.confirmed and "Phase 2" in (tmp_path / "out" / "report.md").read_text()
    )


def ab_report(row_says: str, other_says: str = r"PASS: +0.1 % \[-0.2, +0.3\]") -> str:
    """The phase-2 A/B's report.md: the bisected row and another shape of its op."""
    other = ROW.replace(cgsynth.SHAPE, "[torch.Size([1073741824])]")
    return (
        "| row | verdict |\n| --- | --- |\n"
        f"| `{other}` | {other_says} (+290 µs) vs A, 5 pairs |\n"
        f"| `{ROW}` | {row_says} (+0.66 µs) vs A, 5 pairs |\n"
    )


@pytest.mark.parametrize(
    "row_says, other_says, confirmed",
    [
        # the row's own step, under the threshold: real (its interval above zero)
        (r"PASS: +1.9 % \[+1.6, +2.2\]", r"REGRESSION: +13.3 % \[+13.2, +13.4\]", True),
        # the op's other shape regressed, the row did not move: not this row's step
        (r"PASS: -0.3 % \[-2.0, +11.1\]", r"REGRESSION: +13.3 % \[+13.2, +13.4\]", False),
        (r"REGRESSION: +8.1 % \[+7.9, +8.4\]", r"PASS: +0.1 % \[-0.2, +0.3\]", True),
    ],
)
def test_the_confirmation_judges_the_bisected_row_itself(
    tmp_path, baseline, row_says, other_says, confirmed
):
    """The A/B times the row's whole op and dtype and exits 1 when any shape regressed
    (on the H100, 2026-12-05: `add`'s 1G-element rows +13 %, the bisected 4096x4096 row
    +1.9 % [+1.6, +2.2]); the step is the row's own line."""

    def confirm(cmd, env, out):
        out.mkdir(parents=True)
        (out / "report.md").write_text(ab_report(row_says, other_says))
        return 1

    j = job(tmp_path, baseline, confirm=True)
    fake = FakeCompilers(first=11)
    state = wf.run_bisect(j, wf.BisectSeams(fake.build, fake.rebuild, confirm), say=lambda s: None)
    c = state.confirmation
    assert c.confirmed is confirmed and c.exit_code == 1
    assert f"`{ROW}`" in c.row_verdict and c.change == float(row_says.split(": ")[1].split(" %")[0])
