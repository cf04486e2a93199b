"""Timed vs setup kernels end to end on this CPU: the benchpkg ``filled_add`` op (its
input generation launches ``fill_kernel``, its measurement ``add_kernel``) and the
sentinel ``add`` recorded through the zlbench plugins for sm_90 under the stand-in
driver; every use says whether it ran inside the row's timed region. The recorded
run dirs become a baseline, and the gate's real screen with a triton patched for one
kernel decides what ``--time changed`` times: a changed fill_kernel times nothing
but the sentinel and is listed apart; a changed add_kernel times filled_add and
explains its regression. Timing is the gate's measure seam (synthetic)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.codegen import REPO, patched_triton, ptxas_O0_for, subprocess_env
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.models import (
    BaselineResult,
    GateVerdict,
    PlanEntry,
    RunResult,
    Selection,
    WorkerPlan,
    load_codegen_index,
    load_json_model,
)
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

pytest.importorskip("triton")
pytestmark = pytest.mark.slow

BENCHPKG = REPO / "tests" / "benchpkg"
FAST = ["--level", "core", "--iter", "1", "--zl-replays", "2", "--zl-warmup-ms", "1",
        "--zl-timing-backend", "cpu", "--zl-codegen-standin", "cuda:90"]  # fmt: skip
OPS = {"filled_add": "benchmark/test_filled_add.py::test_filled_add",
       "add": "benchmark/test_add.py::test_add"}  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """``<root>/runs/main/<op>/`` of one benchpkg process that ran both ops."""
    root = tmp_path_factory.mktemp("timed") / "suite"
    shutil.copytree(BENCHPKG, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    entries = [
        PlanEntry(op=op, run_name=op, run_dir=str(root / "runs" / "main" / op),
                  nodeids=[nodeid], dtypes=["bfloat16"])
        for op, nodeid in OPS.items()
    ]  # fmt: skip
    plan = root / "plan.json"
    plan.write_text(WorkerPlan(entries=entries).model_dump_json(), encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "zlbench.plugins.loader",
           "--zl-plan", str(plan), *FAST, *OPS.values()]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=root, env=subprocess_env(root, src=root / "src"), capture_output=True,
        text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "runs" / "main"


def uses(run_dir: Path) -> dict[str, set[tuple[str | None, bool | None]]]:
    """kernel name -> {(shape, timed)} of its uses in the run's index."""
    out: dict[str, set] = {}
    for rec in load_codegen_index(run_dir).records:
        out.setdefault(rec.request.kernel.name, set()).update(
            (u.shape, u.timed) for u in rec.used_by
        )
    return out


def shapes(run_dir: Path) -> list[str]:
    return [r.shape for r in load_json_model(run_dir / "result.json", RunResult).rows]


def test_every_use_says_whether_it_ran_in_the_timed_region(recorded):
    got = uses(recorded / "filled_add")
    rows = shapes(recorded / "filled_add")
    assert set(got) == {"fill_kernel", "add_kernel"} and len(rows) == 2
    # fill_kernel builds the inputs: never timed (the first row's inputs are drawn
    # before any row is named, the next row's while the previous row is in flight)
    assert {timed for _, timed in got["fill_kernel"]} == {False}
    # add_kernel is what every row times
    assert {shape for shape, timed in got["add_kernel"] if timed} == set(rows)
    assert {timed for _, timed in got["add_kernel"]} == {True}
    assert {timed for _, timed in uses(recorded / "add")["add_kernel"]} == {True}


@pytest.fixture
def bl(recorded, tmp_path) -> Path:
    """A baseline of both ops: their recorded codegen dirs, their recorded rows."""
    root = tmp_path / "bl"
    rows = {}
    for op in OPS:
        shutil.copytree(recorded / op / "codegen", root / "main" / op / "codegen")
        rows[op] = [brow(op, s, 1.0) for s in shapes(recorded / op)]
    return write_baseline(root, rows)


class Measure:
    """The measure seam: every requested op's rows, ``slower`` ones 30 % slower."""

    def __init__(self, bl: Path, slower: set[str] = frozenset()):
        self.bl, self.slower, self.requests = bl, slower, []

    def __call__(self, req):
        self.requests.append(set(req.ops))
        res = []
        for op in OPS:
            if f"main/{op}" in req.ops:
                base = load_json_model(self.bl / "main" / op / "result.json", BaselineResult)
                speed = 0.7 if op in self.slower else 1.0
                res.append(run_result(op, [crow(op, r.shape, speed) for r in base.rows]))
        write_results(req.out_dir, res)
        return req.out_dir, 0


def gate(bl: Path, out: Path, measure: Measure, site: Path, monkeypatch) -> tuple[int, str]:
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    ops_dir = out.parent / "ops"
    ops_dir.mkdir(exist_ok=True)
    (ops_dir / "sentinels.txt").write_text("add\n")
    job = GateJob(baseline=str(bl), out=out, selection=Selection(ops_dir=ops_dir),
                  flaggems_dirs={"main": BENCHPKG}, time="changed", codegen_jobs=2,
                  confirm=0)  # fmt: skip
    err = io.StringIO()
    return run_gate(job, GateSeams(measure=measure, stdout=err, stderr=err)), err.getvalue()


def test_a_changed_setup_kernel_times_nothing_and_is_listed_apart(bl, tmp_path, monkeypatch):
    site = patched_triton(tmp_path / "site", ptxas_O0_for("fill_kernel"))
    measure = Measure(bl, slower={"filled_add"})  # it would fail the gate if timed
    out = tmp_path / "out"
    rc, err = gate(bl, out, measure, site, monkeypatch)
    assert rc == 0, err
    assert measure.requests == [{"main/add"}]  # the sentinel only
    v = load_json_model(out / "verdict.json", GateVerdict)
    assert v.codegen.changed == 1 and "main/filled_add" in v.codegen.not_timed
    assert "(1 changed outside the timed region)" in v.codegen.not_timed["main/filled_add"]
    assert v.codegen.note == ""  # the records say where every kernel ran
    assert "1 of them only outside the timed region" in err
    md = (out / "report.md").read_text()
    section = md.split("### Generated code", 1)[1]
    assert "Changed outside the timed region: setup kernels, no row changed (1):" in section
    assert section.count("fill\\_kernel") == 1 and "only SASS differs" in section


def test_a_changed_timed_kernel_times_the_op_and_explains_it(bl, tmp_path, monkeypatch):
    site = patched_triton(tmp_path / "site", ptxas_O0_for("add_kernel"))
    measure = Measure(bl, slower={"filled_add"})
    out = tmp_path / "out"
    rc, err = gate(bl, out, measure, site, monkeypatch)
    assert rc == 1, err
    assert measure.requests == [{"main/add", "main/filled_add"}]
    v = load_json_model(out / "verdict.json", GateVerdict)
    regressed = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    assert {r.key.run_name for r in regressed} == {"filled_add"} and len(regressed) == 2
    for r in regressed:  # explained by the timed kernel alone
        assert [n.name for n in r.codegen] == ["add_kernel"]
        assert "codegen: add_kernel" in r.reason and "fill_kernel" not in r.reason
    md = (out / "report.md").read_text()
    why = md.split("Why, from the code-generation screen", 1)[1].split("\n### ", 1)[0]
    head = "- `add_kernel`, the largest change of 2 rows below: "
    assert head in why and "only SASS differs" in why.split(head, 1)[1].splitlines()[0]
    assert why.count("differs") == 1  # explained once, for both rows
    assert why.count("`add_kernel` (above: the largest change of 2 rows)") == 2
    assert "outside the timed region" not in md
