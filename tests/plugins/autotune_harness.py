"""Run the real zlbench plugins in a subprocess pytest against the fake FlagGems.

Used by test_autotune*.py / test_ttgir*.py: each run writes a plan for one op
into ``tmp``, starts ``python -m pytest -p zlbench.plugins.loader --zl-plan ...``
with ``TRITON_INTERPRET=1`` and the fake packages of ``tests/benchpkg/src`` on
``PYTHONPATH``, and returns what it printed plus the run dir.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCHPKG_SRC = Path(__file__).resolve().parents[1] / "benchpkg" / "src"


@dataclass
class Run:
    rc: int
    out: str
    run_dir: Path

    def lines(self, prefix: str) -> list[str]:
        """Lines holding ``prefix``, from it on (pytest's progress dots may precede it)."""
        return [ln[ln.index(prefix) :].strip() for ln in self.out.splitlines() if prefix in ln]

    def markers(self) -> list[str]:
        """Every replay-fallback marker line printed (one per line, progress dots cut off)."""
        return re.findall(r"AUTOTUNE_REPLAY_FALLBACK reason=\S+ kernel=\S+", self.out)

    def summary(self) -> dict[str, str]:
        """The op's ZLBENCH_AUTOTUNE line (of this run dir's entry, where several share
        the process)."""
        lines = self.lines("ZLBENCH_AUTOTUNE ")
        if len(lines) > 1:
            lines = [ln for ln in lines if f" run_name={self.run_dir.name} " in ln]
        (line,) = lines
        return dict(part.split("=", 1) for part in line.split()[1:])

    def records(self) -> dict:
        (path,) = (self.run_dir / "autotune_records").glob("*.json")  # <op>.json
        data = json.loads(path.read_text())
        assert data["schema_version"] == 1 and data["kind"] == "autotune_record_set"
        return data["kernels"]

    def printed_json(self, name: str) -> dict:
        (line,) = self.lines(name + "=")
        return json.loads(line.split("=", 1)[1])


def run_plugins(
    tmp: Path,
    test_file: str,
    name: str,
    mode: str = "record",
    replay_from: Path | None = None,
    db: Path | None = None,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
) -> Run:
    """Run every test of ``tmp/test_file`` as plan entry ``op`` into ``tmp/name``."""
    run_dir = tmp / name
    entry = _entry("op", run_dir, [test_file], mode, replay_from)
    proc = _run_plan(tmp, test_file, name, [entry], db, extra_env, extra_args)
    return Run(proc.returncode, proc.stdout + proc.stderr, run_dir)


def run_entries(
    tmp: Path,
    test_file: str,
    name: str,
    tests: dict[str, str],
    mode: str = "record",
    replay_from: dict[str, Path] | None = None,
) -> dict[str, Run]:
    """Several plan entries in ONE process: entry OP runs ``test_file::tests[OP]`` into
    ``tmp/name/OP``, in the order given. Each op's Run shares the process's output."""
    entries = [
        _entry(op, tmp / name / op, [f"{test_file}::{fn}"], mode, (replay_from or {}).get(op))
        for op, fn in tests.items()
    ]
    proc = _run_plan(tmp, test_file, name, entries)
    out = proc.stdout + proc.stderr
    return {op: Run(proc.returncode, out, tmp / name / op) for op in tests}


def _entry(op: str, run_dir: Path, nodeids: list[str], mode: str, replay_from: Path | None):
    return {
        "op": op,
        "run_name": op,
        "run_dir": str(run_dir),
        "nodeids": nodeids,
        "mode": mode,
        "replay_records": str(replay_from / "autotune_records") if replay_from else None,
    }


def _run_plan(
    tmp: Path,
    test_file: str,
    name: str,
    entries: list[dict],
    db: Path | None = None,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
) -> subprocess.CompletedProcess:
    plan = tmp / f"plan-{name}.json"
    plan.write_text(json.dumps({"timing": "kernel", "entries": entries}))
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(BENCHPKG_SRC), env.get("PYTHONPATH", "")]),
        TRITON_INTERPRET="1",
        FLAGGEMS_DB_URL=f"sqlite:///{db or tmp / 'tuning.db'}",
        **(extra_env or {}),
    )
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "zlbench.plugins.loader", "--zl-plan", str(plan), test_file]
    return subprocess.run(
        cmd + (extra_args or []),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
