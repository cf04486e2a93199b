"""README.md keeps exactly two set-up commands, and .ci/run runs the test one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    cmds = _setup_commands()
    assert len(cmds) == 2, cmds
    main_job, tests = cmds
    assert "zlbench gate --baseline baselines/v1 --results examples/h200-gate-v1" in main_job
    assert "pytest" in tests and ".[test]" in tests
    # the CPU builds from public indexes on any machine (PyPI's torch is the CUDA one)
    assert "--extra-index-url https://download.pytorch.org/whl/cpu " in tests


def test_ci_run_calls_the_readme_test_command():
    test_cmd = _setup_commands()[1]
    # the venv creation differs (.venv-ci); the install + test part must be identical
    install_and_test = test_cmd.split("&& ", 2)[2]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install_and_test in ci.splitlines(), (install_and_test, ci)


def test_main_job_inputs_are_shipped():
    assert (ROOT / "baselines" / "v1" / "manifest.yaml").is_file()
    assert (ROOT / "examples" / "h200-gate-v1" / "ops_status.csv").is_file()


def test_main_job_judges_the_shipped_h200_results(tmp_path, monkeypatch, capsys):
    """README's main job: the shipped real H200 results pass against the shipped v1."""
    from zlbench.cli import main
    from zlbench.models import GateVerdict, load_json_model

    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    rc = main(
        ["gate", "--baseline", "baselines/v1", "--results", "examples/h200-gate-v1"]
        + ["--out", str(tmp_path / "gate")]
    )
    assert rc == 0, capsys.readouterr()
    v = load_json_model(tmp_path / "gate" / "verdict.json", GateVerdict)
    assert v.verdict == "PASS" and v.counts == {"PASS": 49, "SKIPPED": 1}
    # index_add was measured in that run and dismissed afterwards (ops/dismiss.txt)
    (skipped,) = [r for r in v.rows if r.verdict.value == "SKIPPED"]
    assert skipped.key.op == "index_add" and "dismissed" in skipped.reason
    assert v.baseline_env.gpu_model == "NVIDIA H200" == v.current_env.gpu_model
    assert main(["baseline", "verify", "baselines/v1"]) == 0
