"""Test doubles for batch tests: an inventory writer and a scripted fake execute_plan.

The fake follows execute_plan's contract (zlbench.runner.execute.worker): it creates each
entry's run dir, writes run.log (and result.json when the op ran), calls
on_op_done per entry and returns one OpStatus per entry in plan order.
"""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from zlbench.models import (
    Environment,
    OpStatus,
    Row,
    RunResult,
    RunStatus,
    WorkerPlan,
    dump_json_model,
)
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.catalog.inventory import InventoryRow, inventory_path, write_inventory
from zlbench.runner.refresh import RefreshConfig, refresh

LAUNCH_LOG = (
    "E   SystemError: <built-in function launch> returned NULL\n\n"
    "/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py:328: SystemError\n"
    "During handling of the above exception, another exception occurred:\n"
    "benchmark/base.py:481: Failed\n"
)
UNSUPPORTED_LOG = (
    "ValueError: Given dtype(s) 'torch.bfloat16'can't be supported by this op 'argmax'\n"
)


def make_inventory(ops_dir: Path, repo: str, ops: list[str], skip: dict[str, str] | None = None):
    """inventory_<repo>.csv with one test per op; ``"op@file"`` puts op in that file too."""
    skip = skip or {}
    rows = []
    for spec in ops:
        op, _, file = spec.partition("@")
        file = file or f"test_{op}.py"
        rows.append(
            InventoryRow(
                repo=repo,
                op=op,
                op_name=op,
                bench_class="Benchmark",
                file=f"benchmark/{file}",
                function=f"test_{op}",
                nodeid=f"benchmark/{file}::test_{op}",
                skip=skip.get(op, ""),
                collected="",
            )
        )
    ops_dir.mkdir(parents=True, exist_ok=True)
    write_inventory(inventory_path(ops_dir, repo), rows)


def batch_config_factory(
    tmp_path: Path, ops: list[str], skip: dict[str, str] | None = None
) -> Callable[..., BatchConfig]:
    """``config(executor, **kw)``: a BatchConfig over an inventory of ``ops`` (all of them
    unless ``ops=`` is given), a silent progress stream and ``tmp_path/out``."""
    ops_dir = tmp_path / "ops"
    make_inventory(ops_dir, "main", ops, skip=skip)
    fg = tmp_path / "fg"
    fg.mkdir()

    def config(executor, **kw) -> BatchConfig:
        kw.setdefault("all_ops", not kw.get("ops"))
        kw.setdefault("progress", io.StringIO())
        kw.setdefault("out_dir", tmp_path / "out")
        return BatchConfig(flaggems_dirs={"main": fg}, ops_dir=ops_dir, executor=executor, **kw)

    return config


def dtypes_per_call(fake: FakeExecutor, run_name: str) -> list[tuple[str, ...]]:
    """The dtypes ``run_name`` was given in each executor call it was part of."""
    return [dt for call in fake.calls for (name, dt, *_) in call["entries"] if name == run_name]


def write_one_row_pass(run_dir: Path, op: str, mode: str, environment: Environment) -> None:
    """``run_dir/result.json``: ``op`` PASSed in ``mode`` with one float32 row (speedup 2)."""
    row = Row(
        op=op, dtype="float32", shape="[64]", latency_base_ms=2.0, latency_ms=1.0, speedup=2.0
    )
    res = RunResult(
        repo="main",
        run_name=op,
        op=op,
        status=RunStatus.PASS,
        mode=mode,
        timing="cudagraph",
        rows=[row],
        environment=environment,
    )
    dump_json_model(run_dir / "result.json", res)


def refresh_with_fake_batches(
    tmp_path: Path, batch_runner: Callable[[BatchConfig], BatchOutcome], **kw
) -> Path:
    """A baseline ``tmp_path/baselines/v9`` refreshed (2 repeats) from the batches that
    ``batch_runner`` writes; ``kw`` adds RefreshConfig fields (e.g. ``keep_work``)."""
    cfg = RefreshConfig(
        out=tmp_path / "baselines" / "v9",
        batch=BatchConfig(out_dir=tmp_path / "unused", flaggems_dirs={}, ops_dir=tmp_path),
        repeats=2,
        zlbench_commit="abc",
        batch_runner=batch_runner,
        **kw,
    )
    return refresh(cfg).out


class FakeExecutor:
    """Scripted outcomes per run_name, one per attempt (the last one repeats).

    Outcomes: ``PASS`` / ``PASS:<rows>``, ``SKIP``, ``FAIL``, ``CRASH:<rc>``,
    ``TIMEOUT``, ``UNSUPPORTED`` (FAIL whose log says the dtype is not supported),
    ``NOROWS`` (PASS without rows), ``PARTSKIP:<n>`` (PASS with 2 rows, n tests
    skipped), ``LAUNCH`` (FAIL whose log holds the traceback
    of a launcher error at triton/backends/nvidia/driver.py:328), ``BUG`` (the
    executor itself raises). ``delay_s``: sleep per op (for kill tests).
    """

    def __init__(self, script=None, *, delay_s=0.0, gpu_model="NVIDIA H200", default="PASS:2"):
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.delay_s = delay_s
        self.gpu_model = gpu_model
        self.default = default
        self.calls: list[dict] = []
        self.lock = threading.Lock()

    def _next(self, run_name: str) -> str:
        with self.lock:
            seq = self.script.get(run_name)
            if not seq:
                return self.default
            return seq.pop(0) if len(seq) > 1 else seq[0]

    def __call__(
        self,
        plan: WorkerPlan,
        *,
        flaggems_dir,
        per_process,
        op_timeout_s,
        env,
        sink,
        on_op_done,
        **more,
    ):
        gpu = (env or {}).get("CUDA_VISIBLE_DEVICES", "")
        with self.lock:
            self.calls.append(
                {
                    "gpu": gpu,
                    "entries": [
                        (e.run_name, tuple(e.dtypes), e.mode, e.replay_records)
                        for e in plan.entries
                    ],
                    "per_process": per_process,
                    "op_timeout_s": op_timeout_s,
                    "flaggems_dir": str(flaggems_dir),
                    "timing": plan.timing,
                    "more": more,
                    "env": dict(env or {}),
                }
            )
        out = []
        for entry in plan.entries:
            time.sleep(self.delay_s)
            outcome = self._next(entry.run_name)
            if outcome == "BUG":
                raise KeyError(f"runner bug at {entry.run_name}")
            status, result = self._run_one(entry, outcome, gpu)
            on_op_done(entry, status, result)
            out.append(status)
        return out

    def _run_one(self, entry, outcome: str, gpu: str):
        run_dir = Path(entry.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        kind, _, arg = outcome.partition(":")
        dtype = entry.dtypes[0] if entry.dtypes else "float16"
        log = f"ZLBENCH fake {entry.run_name} dtypes={entry.dtypes}\n"
        rc, status, rows, skipped = 0, RunStatus.PASS, [], 0
        if kind == "PARTSKIP":
            kind, arg, skipped = "PASS", "2", int(arg or 1)
        if kind == "PASS":
            rows = [
                Row(
                    op=entry.op,
                    dtype=dtype,
                    shape=f"[{i}]",
                    speedup=1.0 + i / 10,
                    latency_ms=1.0,
                    latency_base_ms=1.0 + i / 10,
                )
                for i in range(int(arg or 2))
            ]
        elif kind == "NOROWS":
            pass
        elif kind == "SKIP":
            status = RunStatus.SKIP
        elif kind in ("FAIL", "UNSUPPORTED", "LAUNCH"):
            rc, status = 1, RunStatus.FAIL
            texts = {"UNSUPPORTED": UNSUPPORTED_LOG, "LAUNCH": LAUNCH_LOG}
            log += texts.get(kind, "AssertionError: boom\n")
        elif kind == "CRASH":
            rc, status = int(arg or -11), RunStatus.CRASH
        elif kind == "TIMEOUT":
            rc, status = None, RunStatus.TIMEOUT
        else:
            raise ValueError(outcome)
        (run_dir / "run.log").write_text(log)
        result = None
        if status in (RunStatus.PASS, RunStatus.SKIP, RunStatus.FAIL):
            result = RunResult(
                repo=entry.repo,
                run_name=entry.run_name,
                op=entry.op,
                status=status,
                mode=entry.mode,
                timing="cudagraph",
                dtypes=list(entry.dtypes),
                rows=rows,
                environment=Environment(gpu_model=self.gpu_model, flaggems_commit="abc"),
                skipped_tests=skipped,
            )
            dump_json_model(run_dir / "result.json", result)
        st = OpStatus(
            repo=entry.repo,
            op=entry.op,
            run_name=entry.run_name,
            status=status,
            rc=rc,
            attempts=1,
            rows=len(rows),
            seconds=0.5,
            gpu=gpu,
            run_dir=str(run_dir),
            note="" if rc == 0 else f"fake {kind}",
        )
        return st, result


def batch_cli(
    tmp_path: Path, monkeypatch, capsys, ops: list[str], *, script=None, before=()
) -> Callable[..., tuple]:
    """``run(*argv) -> (rc, stdout, stderr, fakes)``: ``zlbench batch`` over an inventory of
    ``ops`` at ``tmp_path/ops``, out ``tmp_path/out``, every executor a
    :class:`FakeExecutor` of ``script`` (``fakes``: one per executor made), ``before``
    put before ``argv``; CUDA_VISIBLE_DEVICES unset."""
    from zlbench.cli import main
    from zlbench.runner.batch import workers

    ops_dir = tmp_path / "ops"
    make_inventory(ops_dir, "main", ops)
    (tmp_path / "fg" / "benchmark").mkdir(parents=True, exist_ok=True)  # a FlagGems checkout
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path / "fg"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fakes: list[FakeExecutor] = []

    def fake_executor() -> FakeExecutor:
        fakes.append(FakeExecutor(script))
        return fakes[-1]

    monkeypatch.setattr(workers, "default_executor", fake_executor)

    def run(*argv: str) -> tuple:
        out_dir = str(tmp_path / "out")
        rc = main(["batch", "--ops-dir", str(ops_dir), "--out", out_dir, *before, *argv])
        out, err = capsys.readouterr()
        return rc, out, err, fakes

    return run


def part_indices(rows: Sequence, part: tuple[int, int]) -> list[int]:
    """The indices of the ``rows`` (``Row``s or result.json dicts) that row part ``part``
    ``(k, n)`` measures: every n-th row of each (benchmark op, dtype), from row k-1.
    Counted here on its own, not with zlbench's ``keeps_row``, so tests check it."""
    k, n = part
    seen: Counter = Counter()
    out = []
    for i, r in enumerate(rows):
        group = (r["op"], r["dtype"]) if isinstance(r, dict) else (r.op, r.dtype)
        if seen[group] % n == k - 1:
            out.append(i)
        seen[group] += 1
    return out


def fake_sweep_children(tmp_path: Path, monkeypatch, child: str) -> None:
    """Every sweep child runs ``child`` (a Python script's source) instead of pytest:
    the sweep's argv builder gets a ``python`` that execs it; CUDA_VISIBLE_DEVICES unset."""
    import sys

    from zlbench.runner.sweep import run as sweep_run

    script = tmp_path / "child.py"
    script.write_text(child)
    exe = tmp_path / "fakepython"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    exe.chmod(0o755)
    real = sweep_run.build_pytest_argv

    def argv(plan_path, plan, *, python=None, **kw):
        return real(plan_path, plan, python=str(exe), **kw)

    monkeypatch.setattr(sweep_run, "build_pytest_argv", argv)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
