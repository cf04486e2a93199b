"""`zlbench gate --precompile-jobs N --warmup-ms MS --replays N` reach every batch the
gate measures, as `zlbench batch`'s flags of the same names do (docs/screening.md);
by default the gate precompiles nothing and leaves the plugins' budgets alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.zlsynth import brow, write_baseline
from zlbench.cli import build_parser, main
from zlbench.cli.gate_cmd import job_from_args
from zlbench.cli.settings import Settings
from zlbench.gate.load import load_baseline
from zlbench.protocol.options import measuring_args
from zlbench.workflow.gate import MeasureRequest, measure_batch


def _configs(tmp_path: Path, seen: list, *flags: str) -> list:
    """The BatchConfig the gate's measure step hands the batch runner for ``flags``
    (``seen``: the ``batch_configs`` fixture)."""
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", "[8]", 1.0)]})
    argv = ["gate", "--baseline", str(bl), "--out", str(tmp_path / "out"), *flags]
    job = job_from_args(build_parser().parse_args(argv), Settings.from_env({}), tmp_path / "ops")
    req = MeasureRequest(load_baseline(bl), {"main/add"}, tmp_path / "out" / "r", None, job)
    measure_batch(req)
    return seen


def test_gate_passes_precompile_jobs_and_the_budgets_to_its_batch(tmp_path, batch_configs):
    flags = ["--precompile-jobs", "3", "--warmup-ms", "25", "--replays", "5"]
    (config,) = _configs(tmp_path, batch_configs, *flags)
    assert config.precompile_jobs == 3
    assert config.extra_pytest_args == ["--zl-warmup-ms", "25", "--zl-replays", "5"]


def test_gate_precompiles_nothing_and_keeps_the_plugin_budgets_by_default(tmp_path, batch_configs):
    (config,) = _configs(tmp_path, batch_configs)
    assert config.precompile_jobs == 0
    assert config.extra_pytest_args == []


def test_report_has_no_measuring_flags_and_its_job_measures_nothing_extra(tmp_path):
    from zlbench.cli import report_cmd

    args = build_parser().parse_args(["report", str(tmp_path), "--baseline", str(tmp_path)])
    job = report_cmd.job_from_args(args, Settings.from_env({}), tmp_path)
    assert (job.scheduling.precompile_jobs, measuring_args(job.measuring)) == (0, [])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--replays", "0"], "--replays 0: must be"),
        (["--warmup-ms", "-1"], "--warmup-ms -1: must be"),
    ],
)
def test_bad_gate_budgets_are_one_line_and_exit_2(tmp_path, capsys, flags, message):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", "[8]", 1.0)]})
    rc = main(["gate", "--baseline", str(bl), "--out", str(tmp_path / "out"), *flags])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_gate_phase_timings_reach_its_batch(tmp_path, batch_configs):
    (config,) = _configs(tmp_path, batch_configs, "--phase-timings", "--replays", "2")
    assert config.extra_pytest_args == ["-p", "zlbench.plugins.phases", "--zl-replays", "2"]
