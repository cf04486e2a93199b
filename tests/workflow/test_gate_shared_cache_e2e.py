"""The real codegen screen of a gate puts the benchpkg kernels (recorded for sm_90
under the stand-in driver, tests/support/codegen.py) into the gate's triton cache:
a benchmark process started the way the measure step starts it (its env from
``SHARED_TRITON_CACHE``, zlbench.runner.execute.worker.process_env) launches every
kernel as a cache hit, and the screen's verdict is the same as without the cache
(all identical). Without the shared cache the same launch compiles every kernel."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

from tests.support.codegen import (  # noqa: E402
    RECORD_SCRIPT,
    REPO,
    TARGET,
    digests,
    load_index,
    rebuild,
    record_benchpkg,
    subprocess_env,
)
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results  # noqa: E402
from zlbench.models import STEPS_JSON, CodegenScreen, GateSteps, Selection, load_json_model  # noqa: E402
from zlbench.runner.execute.worker import SHARED_TRITON_CACHE, process_env  # noqa: E402
from zlbench.workflow.gate import GateJob, GateSeams, run_gate  # noqa: E402

pytestmark = pytest.mark.slow
S = "[1024]"


@pytest.fixture(scope="module")
def bl(tmp_path_factory) -> Path:
    """A baseline whose op ``main/bench`` recorded the benchpkg kernels."""
    root = tmp_path_factory.mktemp("bl")
    cg = record_benchpkg(root / "rec")
    shutil.copytree(cg, root / "bl" / "main" / "bench" / "codegen")
    return write_baseline(root / "bl", {"bench": [brow("bench", S, 1.0)]})


class Launch:
    """The measure seam: relaunch the benchpkg kernels in a fresh process whose triton
    cache is the one a benchmark process of this request would get; note the hits."""

    def __init__(self, rec: Path, tmp: Path):
        self.rec, self.tmp, self.hits, self.sass = rec, tmp, [], []

    def __call__(self, req):
        where = self.tmp / f"launch{len(self.hits)}"
        base = {SHARED_TRITON_CACHE: str(req.shared_cache)} if req.shared_cache else {}
        cache = process_env(base, flaggems_dir=where, tmp_dir=where / "p")["TRITON_CACHE_DIR"]
        env = {**subprocess_env(where, self.rec / "helpers"), "TRITON_CACHE_DIR": cache}
        script = RECORD_SCRIPT.format(target=TARGET, sass=req.sass)  # as the gate asks
        args = [str(where / "codegen"), str(self.rec / "gencache")]
        proc = subprocess.run(
            [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        records = load_index(where / "codegen").records
        self.hits.append([r.result.cache_hit for r in records])
        self.sass.append(any("sass" in r.result.stages for r in records))
        write_results(req.out_dir, [run_result("bench", [crow("bench", S, 1.0)])])
        return req.out_dir, 0


def _gate(bl: Path, tmp: Path, launch: Launch) -> tuple[int, str]:
    (tmp / "ops").mkdir()
    job = GateJob(
        baseline=str(bl),
        out=tmp / "out",
        selection=Selection(ops_dir=tmp / "ops"),
        flaggems_dirs={"main": REPO / "tests" / "benchpkg"},
        codegen_jobs=2,
        confirm=0,
    )
    err = io.StringIO()
    rc = run_gate(job, GateSeams(measure=launch, stdout=err, stderr=err))
    return rc, err.getvalue()


def test_the_measure_step_launches_the_screens_kernels_as_cache_hits(bl, tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("GEMS_VENDOR", raising=False)
    rec = bl.parent / "rec"
    monkeypatch.setenv("PYTHONPATH", str(rec / "helpers"))  # the screen's workers
    launch = Launch(rec, tmp_path)
    rc, err = _gate(bl, tmp_path, launch)
    assert rc == 0, err
    screen = load_json_model(tmp_path / "out" / "codegen" / "codegen.json", CodegenScreen)
    counts = {k: n for k, n in screen.counts.items() if n}
    assert counts == {"identical": 12}  # the cache changes nothing the screen says
    line = "zlbench gate: measure step uses the screen's 12 compiled kernels (shared triton cache)"
    assert line in err
    (hits,) = launch.hits
    assert len(hits) == 12 and all(hits), hits
    assert launch.sass == [False]  # the screen has the SASS: the launch records none
    steps = load_json_model(tmp_path / "out" / STEPS_JSON, GateSteps)
    assert steps.shared_cache_kernels == 12 and steps.seconds["screen"] > 0


def test_without_the_shared_cache_the_same_launch_compiles_every_kernel(bl, tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    launch = Launch(bl.parent / "rec", tmp_path)

    class Req:  # what a v1 gate's request carries: no shared cache, SASS recorded
        shared_cache, sass = None, True
        out_dir = tmp_path / "results"

    launch(Req())
    (hits,) = launch.hits
    assert len(hits) == 12 and not any(hits)


def test_the_rebuild_worker_compiles_the_same_with_a_cache_dir_and_fills_it(bl, tmp_path):
    from zlbench.plugins.compiler.rebuild import export_cache

    index = bl.parent / "rec" / "codegen" / "index.json"
    plain = rebuild(index, tmp_path / "plain", tmp_path)
    filled = rebuild(index, tmp_path / "filled", tmp_path, None, str(tmp_path / "cache"))
    assert plain.returncode == 0 and filled.returncode == 0, filled.stderr
    a, b = load_index(tmp_path / "plain"), load_index(tmp_path / "filled")
    assert digests(a) == digests(b) and not any(r.result.cache_hit for r in b.records)
    assert len(list((tmp_path / "cache").glob("*/__grp__*"))) == 12
    assert export_cache(tmp_path / "cache", tmp_path / "cache") == 0  # already there: kept


BROKEN_EXPORT = """
import sys
from zlbench.plugins.compiler import rebuild

def export_cache(private, shared):  # as a triton fork whose cache manager differs would
    raise ImportError("cannot import name 'FileCacheManager' from 'triton.runtime.cache'")

rebuild.export_cache = export_cache
sys.exit(rebuild.main(sys.argv[1:]))
"""


def test_a_cache_dir_that_cannot_be_filled_leaves_the_rebuild_as_it_is(bl, tmp_path):
    rec = bl.parent / "rec"
    index, out, cache = rec / "codegen" / "index.json", tmp_path / "out", tmp_path / "cache"
    args = [
        sys.executable,
        "-c",
        BROKEN_EXPORT,
        "--exec-generated",
        str(index),
        str(out),
        str(cache),
    ]
    env = subprocess_env(tmp_path, rec / "helpers")
    proc = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "ZLBENCH_CODEGEN_REBUILD kernels=12 failed=0" in proc.stdout
    line = f"zlbench: cache dir {cache}: not filled: ImportError: cannot import name"
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("zlbench:")] == [
        f"{line} 'FileCacheManager' from 'triton.runtime.cache'"
    ]
    rebuilt = load_index(out)
    assert digests(rebuilt) == digests(load_index(rec / "codegen"))  # the screen's answer
    assert not any(r.error for r in rebuilt.records) and not cache.exists()
