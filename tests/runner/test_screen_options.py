"""`zlbench batch` / `baseline refresh` screening options reach the BatchConfig:
--warmup-ms, --replays, --phase-timings (pytest args), --precompile-jobs, --costs;
`zlbench gate --phase-timings` reaches the gate's measure args."""

from __future__ import annotations

import pytest

from zlbench.cli import build_parser, main
from zlbench.cli.batch_cmd import config_from_args
from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError


def _config(*argv: str):
    args = build_parser().parse_args(["batch", "--ops", "abs", *argv])
    return config_from_args(args, Settings.from_env())


def test_budgets_and_phase_timings_become_pytest_args():
    cfg = _config("--warmup-ms", "25", "--replays", "5", "--phase-timings")
    assert cfg.extra_pytest_args == [
        "-p", "zlbench.plugins.phases", "--zl-warmup-ms", "25", "--zl-replays", "5",
    ]  # fmt: skip
    assert _config().extra_pytest_args == []


def test_precompile_jobs_and_costs_reach_the_config(tmp_path):
    (tmp_path / "ops_status.csv").write_text(
        "repo,op,run_name,status,rc,attempts,dtype_used,rows,seconds,gpu,run_dir,note\n"
        "main,abs,abs,PASS,0,1,bfloat16,1,1.5,0,main/abs,\n"
    )
    cfg = _config("--precompile-jobs", "6", "--costs", str(tmp_path))
    assert cfg.precompile_jobs == 6 and cfg.durations == {"main/abs": 1.5}
    assert _config().precompile_jobs == 0 and _config().durations == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--replays", "0"], "--replays 0: must be at least 1"),
     (["--warmup-ms", "-1"], "--warmup-ms -1: must be at least 0")],
)  # fmt: skip
def test_bad_budgets_are_refused(argv, message):
    with pytest.raises(ZlbenchError, match=message):
        _config(*argv)


def test_bad_budget_is_one_line_exit_2(capsys):
    assert main(["batch", "--ops", "abs", "--replays", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "zlbench batch: error: --replays 0: must be at least 1"


def test_refresh_takes_the_same_measure_options():
    args = build_parser().parse_args(
        ["baseline", "refresh", "--out", "x", "--ops", "abs", "--replays", "3"]
    )
    assert args.replays == 3 and args.precompile_jobs == 0 and not args.phase_timings
    # ... and reach the refresh's BatchConfig through the same config_from_args
    refresh = ["baseline", "refresh", "--out", "x", "--ops", "abs", "--replays", "3"]
    args = build_parser().parse_args([*refresh, "--precompile-jobs", "2", "--phase-timings"])
    cfg = config_from_args(args, Settings.from_env())
    assert cfg.extra_pytest_args == ["-p", "zlbench.plugins.phases", "--zl-replays", "3"]
    assert cfg.precompile_jobs == 2
