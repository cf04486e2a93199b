"""Two rules that had no test (issue 30 item 6): upstream runs at ``--level core``
(docs/design.md §5.20), and ops_status.csv counts each op's markers
(``replay_fallbacks``, ``no_cudagraph``: the old scripts' columns, §5.23)."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

from benchpkg_batch import BENCHPKG, interpret_config

from tests.support.batch_fakes import FakeExecutor, batch_config_factory
from tests.support.trees import shipped
from zlbench.models import (
    Marker,
    MarkerKind,
    PlanEntry,
    RunResult,
    RunStatus,
    WorkerPlan,
    dump_json_model,
    load_json_model,
    read_ops_status,
)
from zlbench.parse.log import parse_log
from zlbench.runner.batch.run import run_batch
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory
from zlbench.runner.execute.worker import build_pytest_argv

ROOT = Path(__file__).resolve().parents[2]
# A real run.log of the H200 (tenth session): softmax_backward replayed, its capture
# failed, one BENCHMARK_DIRECT_NO_CUDAGRAPH marker; that batch's ops_status.csv says 1.
H200 = shipped("examples/h200-gate-v4-no-coalesce") / "results"
H200_LOG = H200 / "main" / "softmax_backward" / "run.log"


def _level_args(argv: list[str]) -> list[str]:
    i = argv.index("--level")
    return argv[i : i + 2]


def test_a_plan_runs_upstream_at_level_core_by_default(tmp_path):
    entry = PlanEntry(op="add", run_name="add", run_dir=str(tmp_path), nodeids=["t.py::t"])
    plan = WorkerPlan(entries=[entry])
    assert plan.level == "core"
    assert _level_args(build_pytest_argv(tmp_path / "plan.json", plan)) == ["--level", "core"]


class _PlanSpy(FakeExecutor):
    """A FakeExecutor that keeps the pytest argv each plan it was given would start."""

    def __init__(self):
        super().__init__()
        self.argvs: list[list[str]] = []

    def __call__(self, plan, **kw):
        self.argvs.append(build_pytest_argv("plan.json", plan))
        return super().__call__(plan, **kw)


def test_the_plans_of_a_batch_ask_upstream_for_level_core(tmp_path):
    spy = _PlanSpy()
    run_batch(batch_config_factory(tmp_path, ["abs", "add"])(spy, gpus=["0", "1"]))
    assert spy.argvs and all(_level_args(a) == ["--level", "core"] for a in spy.argvs)


def test_a_real_benchmark_process_runs_at_core_and_its_markers_reach_ops_status(tmp_path):
    """One real pytest process (tests/benchpkg, whose --level defaults to comprehensive
    as upstream's does): nonzero cannot be captured on the CPU, so each of its two rows
    falls back with a marker on both sides, 4 in all."""
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    config = interpret_config(tmp_path, fg, ["nonzero"], io.StringIO())
    out = run_batch(dataclasses.replace(config, timing="cudagraph"))
    (st,) = read_ops_status(out.out_dir / "ops_status.csv")
    log = (out.out_dir / "main" / "nonzero" / "run.log").read_text()
    assert st.status is RunStatus.PASS, (st.note, log)
    assert "mode=cudagraph,level=core)" in log
    res = load_json_model(out.out_dir / "main" / "nonzero" / "result.json", RunResult)
    assert res.environment.level == "core"
    parsed = parse_log(log)
    assert sum(parsed.marker_counts.values()) == 4
    assert (st.no_cudagraph, st.replay_fallbacks) == (4, 0)


class _LogReplayer(FakeExecutor):
    """Each op "measures" what a real log says: its run.log is ``text``, its result.json
    the rows and markers that zlbench's parser reads from it."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def _run_one(self, entry, outcome, gpu):
        st, _ = super()._run_one(entry, "PASS", gpu)
        parsed = parse_log(self.text)
        result = RunResult(
            repo=entry.repo,
            run_name=entry.run_name,
            op=entry.op,
            status=RunStatus.PASS,
            mode=entry.mode,
            timing="cudagraph",
            rows=parsed.rows,
            markers=parsed.markers,
            marker_counts=parsed.marker_counts,
        )
        (Path(entry.run_dir) / "run.log").write_text(self.text)
        dump_json_model(Path(entry.run_dir) / "result.json", result)
        return st.model_copy(update={"rows": len(parsed.rows)}), result


def test_marker_counts_of_a_real_h200_log_reach_ops_status(tmp_path):
    fallback = Marker(kind=MarkerKind.REPLAY_FALLBACK, reason="key_missing", kernel="k").line()
    text = H200_LOG.read_text(encoding="utf-8")
    (h200,) = [s for s in read_ops_status(H200 / "ops_status.csv") if s.op == "softmax_backward"]
    config = batch_config_factory(tmp_path, ["softmax_backward", "fallen_back"])
    out = run_batch(config(_LogReplayer(text), ops=["softmax_backward"]))
    (st,) = read_ops_status(out.out_dir / "ops_status.csv")
    assert st.status is RunStatus.PASS and st.rows == 1, st.note
    assert (st.no_cudagraph, st.replay_fallbacks) == (h200.no_cudagraph, 0) == (1, 0)
    doubled = text.replace("\nOperator:", f"\n{fallback}\n{fallback}\nOperator:", 1)
    out = run_batch(config(_LogReplayer(doubled), ops=["fallen_back"], out_dir=tmp_path / "o2"))
    (st,) = read_ops_status(out.out_dir / "ops_status.csv")
    assert (st.no_cudagraph, st.replay_fallbacks) == (1, 2)
