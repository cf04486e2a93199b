"""The sides of an A/B: what --base-compiler ENV names, the probe of each side's
compiler, the batch config that measures in it, and the A B A B order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.runner.ab.env import PR_ENV, CompilerEnv, probe_compiler, resolve_env, side_config
from zlbench.runner.ab.rounds import run_rounds
from zlbench.runner.batch.config import BatchConfig


def test_env_forms(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert resolve_env(str(venv)).python == str(venv / "bin" / "python")
    wrapper = tmp_path / "py"
    wrapper.write_text("#!/bin/sh\n")
    wrapper.chmod(0o755)
    assert resolve_env(str(wrapper)) == CompilerEnv(str(wrapper), python=str(wrapper))
    site = tmp_path / "site"
    site.mkdir()
    assert resolve_env(str(site)) == CompilerEnv(str(site), front=(str(site),))


@pytest.mark.parametrize("what", ["missing", "not-executable"])
def test_an_env_that_names_nothing_usable_is_one_line(tmp_path, what):
    path = tmp_path / "x"
    if what == "not-executable":
        path.write_text("")
    with pytest.raises(ZlbenchError) as e:
        resolve_env(str(path))
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_a_site_dir_comes_first_on_the_workers_pythonpath():
    env = CompilerEnv("s", front=("/s",)).environ({"PYTHONPATH": "/a", "X": "1"})
    assert env == {"PYTHONPATH": "/s:/a", "X": "1"}
    assert PR_ENV.environ({"X": "1"}) == {"X": "1"}


def test_side_config_runs_the_workers_with_the_sides_interpreter(tmp_path):
    calls = []

    def executor(plan, **kw):
        calls.append(kw)
        return []

    config = BatchConfig(out_dir=tmp_path, flaggems_dirs={}, ops_dir=tmp_path, executor=executor)
    assert side_config(config, PR_ENV) is config
    side = side_config(config, CompilerEnv("v", python="/v/bin/python", front=("/s",)))
    side.executor(None, env={})
    assert calls == [{"python": "/v/bin/python", "env": {}}]
    assert side.env["PYTHONPATH"].split(":")[0] == "/s"


def test_probe_names_this_environments_triton():
    got = probe_compiler(PR_ENV)
    import triton

    assert got.version and got.dist and Path(got.path) == Path(triton.__file__).parent
    assert got.python == sys.executable


def test_a_base_that_cannot_import_triton_is_one_line(tmp_path):
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("raise ImportError('half-built wheel')\n")
    with pytest.raises(ZlbenchError) as e:
        probe_compiler(resolve_env(str(tmp_path)))
    msg = str(e.value)
    assert "\n" not in msg and "half-built wheel" in msg and str(tmp_path) in msg


def test_an_interpreter_that_does_not_start_is_one_line(tmp_path):
    bad = tmp_path / "py"
    bad.write_text("#!/bin/sh\necho 'no such python' >&2\nexit 127\n")
    bad.chmod(0o755)
    with pytest.raises(ZlbenchError, match="probe exited 127: no such python"):
        probe_compiler(resolve_env(str(bad)))


def test_rounds_alternate_pr_then_base_and_time_each_side(tmp_path):
    seen = []
    ticks = iter(range(100))

    def measure(side, ops, out):
        seen.append((side, out.relative_to(tmp_path).as_posix(), tuple(ops)))
        return out

    run = run_rounds(["main/x"], 3, tmp_path, measure, clock=lambda: next(ticks))
    assert [s for s, _, _ in seen] == ["pr", "base"] * 3 == run.order
    assert [d for _, d, _ in seen[:2]] == ["1/pr", "1/base"]
    assert run.dirs[2] == (tmp_path / "3" / "pr", tmp_path / "3" / "base")
    assert run.seconds == {"pr": 3, "base": 3}
    with pytest.raises(ZlbenchError, match="--ab-rounds must be >= 1"):
        run_rounds(["main/x"], 0, tmp_path, measure)


def test_a_first_pr_dir_is_round_1s_pr_side_and_is_not_measured_again(tmp_path):
    screen = tmp_path / "results"
    (screen / "main" / "x").mkdir(parents=True)
    (screen / "main" / "x" / "result.json").write_text("{}")
    seen = []

    def measure(side, ops, out):
        seen.append((side, out.relative_to(tmp_path / "ab").as_posix()))
        return out

    run = run_rounds(["main/x"], 2, tmp_path / "ab", measure, first_pr=screen)
    assert seen == [("base", "1/base"), ("pr", "2/pr"), ("base", "2/base")]
    assert run.order == ["pr", "base", "pr", "base"]  # the screen ran first
    assert (tmp_path / "ab" / "1" / "pr" / "main" / "x" / "result.json").is_file()
    assert run.dirs[0][0] == tmp_path / "ab" / "1" / "pr"
