"""`zlbench gate` with the real codegen screen on this CPU: the benchpkg Triton
kernels (plus one generated kernel) recorded for sm_90 under the stand-in driver
become a baseline's codegen records (each op's index names its row), then the
gate screens them with the same triton (nothing changed: only the sentinel op is
timed with ``--time changed``), with a patched triton (a TTGIR pass removed: only
``mm`` and the sentinel are timed, and mm's REGRESSION row names mm_kernel, stage
ttgir, its deltas and its diff in report.md, junit.xml and verdict.json) and with
a triton whose TTGIR stage raises on ``tt.dot`` (exit 1). Timing is the gate's
measure seam (synthetic results): the screen and the judge are real."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.support.codegen import (
    NO_DOT,
    REPO,
    patched_triton,
    record_benchpkg,
    write_op_codegen,
)
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.models import (
    CodegenScreen,
    GateVerdict,
    Selection,
    load_json_model,
)
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

pytestmark = pytest.mark.slow

S = "[1024]"
OPS = {  # baseline op -> the benchpkg kernel it launches
    "add": "add_kernel",
    "softmax": "softmax_kernel",
    "sum": "sum_kernel",
    "mm": "mm_kernel",
    "twice": "gen_twice_kernel",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cgrec")
    record_benchpkg(root)
    return root


@pytest.fixture
def bl(recorded, tmp_path) -> Path:
    """A baseline whose ops each hold the records of their kernel, used by their row."""
    root = tmp_path / "bl"
    write_op_codegen(recorded, root, OPS, S)
    return write_baseline(root, {op: [brow(op, S, 1.0)] for op in OPS})


@pytest.fixture
def use_triton(monkeypatch, recorded):
    """The rebuild workers' path: the patched triton (if any), the recorded helpers."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)

    def use(site: Path | None) -> None:
        paths = [str(site)] * bool(site) + [str(recorded / "helpers")]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))

    return use


class Measure:
    def __init__(self, slower: set[str] = frozenset()):
        self.slower, self.requests = slower, []

    def __call__(self, req):
        self.requests.append(req)
        res = [
            run_result(op, [crow(op, S, 0.7 if op in self.slower else 1.0)])
            for op in OPS
            if f"main/{op}" in req.ops
        ]
        write_results(req.out_dir, res)
        return req.out_dir, 0


def gate(bl: Path, out: Path, measure: Measure, jobs: int = 2) -> tuple[int, str]:
    ops_dir = out.parent / "ops"
    ops_dir.mkdir(exist_ok=True)
    (ops_dir / "sentinels.txt").write_text("add\n")
    job = GateJob(
        baseline=str(bl),
        out=out,
        selection=Selection(ops_dir=ops_dir),
        flaggems_dirs={"main": REPO / "tests" / "benchpkg"},
        time="changed",
        codegen_jobs=jobs,
        confirm=0,
    )
    err = io.StringIO()
    rc = run_gate(job, GateSeams(measure=measure, stdout=err, stderr=err))
    return rc, err.getvalue()


def test_same_compiler_changes_nothing_and_times_only_the_sentinel(bl, use_triton, tmp_path):
    use_triton(None)
    measure = Measure()
    rc, err = gate(bl, tmp_path / "out", measure)
    assert rc == 0, err
    v = load_json_model(tmp_path / "out" / "verdict.json", GateVerdict)
    assert v.codegen.screened and v.codegen.changed == 0 and v.codegen.kernels >= 8
    assert [r.ops for r in measure.requests] == [{"main/add"}]
    assert set(v.codegen.not_timed) == {f"main/{op}" for op in OPS} - {"main/add"}
    assert v.verdict == "PASS" and v.counts == {"PASS": 1}


def test_patched_compiler_times_mm_and_explains_its_regression(bl, use_triton, tmp_path):
    use_triton(patched_triton(tmp_path / "site", "no_accelerate_matmul"))
    measure = Measure(slower={"mm"})
    out = tmp_path / "out"
    rc, err = gate(bl, out, measure)
    assert rc == 1, err
    assert [r.ops for r in measure.requests] == [{"main/add", "main/mm"}]
    v = load_json_model(out / "verdict.json", GateVerdict)
    screen = load_json_model(out / "codegen" / "codegen.json", CodegenScreen)
    assert {k.name for k in screen.changed()} == {"mm_kernel"}
    assert v.codegen.changed == len(screen.changed())
    (reg,) = [r for r in v.rows if r.verdict.value == "REGRESSION"]
    assert reg.key.op == "mm" and reg.codegen
    changed = [n for n in reg.codegen if n.status.value == "ttgir_changed"]
    assert changed and all(n.name == "mm_kernel" and n.first_stage == "ttgir" for n in changed)
    note = changed[0]
    assert note.deltas and note.config and note.diff_file.startswith("codegen/diffs/")
    diff = (out / note.diff_file).read_text()
    assert f"--- baseline/{note.kernel_id}.ttgir" in diff
    md = (out / "report.md").read_text()
    why = md.split("### Regressed rows", 1)[1].split("\n### ", 1)[0]
    junit = (out / "junit.xml").read_text().split('type="REGRESSION"', 1)[1]
    for text in (why.replace("\\", ""), junit.split("</failure>", 1)[0]):
        assert "mm_kernel: TTGIR differs" in text.replace("`", "")
        assert note.diff_file in text  # the config: in the diff file's head and report.html
    assert (out / "report.html").read_text().count(f"baseline/{note.kernel_id}.ttgir") >= 1


def test_kernel_that_stops_compiling_fails_the_gate(bl, use_triton, tmp_path):
    use_triton(patched_triton(tmp_path / "site", NO_DOT))
    rc, err = gate(bl, tmp_path / "out", Measure(), jobs=1)
    assert rc == 1, err
    v = load_json_model(tmp_path / "out" / "verdict.json", GateVerdict)
    assert v.verdict == "FAIL" and v.codegen.failed
    assert all(
        line.startswith("mm_kernel") and "zl patch: no dot" in line for line in v.codegen.failed
    )
    assert "FAILED mm_kernel" in err
