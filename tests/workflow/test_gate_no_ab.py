"""A gate given ``--base-compiler`` that A/B-measured nothing (every op to time failed
to compile) says so in its judged-by line, never "no base compiler" (issue 50 item 1
follow-up); its re-judge from the gate dir (gated.json) says the same."""

from __future__ import annotations

import pytest

import zlbench.workflow.ab as ab_mod
from tests.workflow.test_gate_codegen import (
    FakeScreen,
    NoMeasure,
    baseline,
    failed_kernel,
    gate,
    verdict,
)
from tests.workflow.test_gate_codegen import ops_dir as ops_dir  # the fixture
from zlbench.cli import main
from zlbench.models import AbCompiler
from zlbench.runner.ab.env import CompilerEnv
from zlbench.workflow.ab import AbOptions


@pytest.fixture
def two_compilers(monkeypatch):
    """--base-compiler /envs/base resolves and probes without a real environment."""
    monkeypatch.setattr(ab_mod, "resolve_env", lambda spec: CompilerEnv(spec))
    monkeypatch.setattr(
        ab_mod,
        "probe_compiler",
        lambda side, base=None: AbCompiler(env=side.spec, dist="triton", version="3.6.0"),
    )
    monkeypatch.setattr(ab_mod, "same_compiler_why", lambda pr, base, **kw: "")


def test_nothing_compiles_with_a_base_compiler_says_nothing_was_ab_measured(
    tmp_path, ops_dir, two_compilers, monkeypatch
):
    bl = baseline(tmp_path / "bl")
    screen = FakeScreen(*(failed_kernel(f"{op}_kernel", op) for op in ("add", "mm", "sum")))
    rc, out, err = gate(
        tmp_path, bl, ops_dir, screen, NoMeasure(), ab=AbOptions(base_compiler="/envs/base")
    )
    assert rc == 1, err
    v = verdict(out)
    assert v.ab is None and v.base_compiler == "/envs/base"
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    said = (
        "Nothing was measured on the A/B against the base compiler `/envs/base`: every op "
        "to time failed to compile, so nothing was timed"
    )
    assert said in md and said.replace("`", "") in html
    assert "no base compiler" not in md and "no base compiler" not in html
    # re-judged from the gate dir: its gated.json names the base compiler
    monkeypatch.chdir(tmp_path)
    assert main(["report", "out", "--baseline", str(bl), "--out", "rep"]) == 1
    again = verdict(tmp_path / "rep")
    assert again.base_compiler == "/envs/base" and said in (tmp_path / "rep/report.md").read_text()


def test_without_a_base_compiler_the_stored_baseline_alone_is_said(tmp_path, ops_dir):
    bl = baseline(tmp_path / "bl")
    screen = FakeScreen(*(failed_kernel(f"{op}_kernel", op) for op in ("add", "mm", "sum")))
    rc, out, _ = gate(tmp_path, bl, ops_dir, screen, NoMeasure())
    assert rc == 1 and verdict(out).base_compiler == ""
    assert "alone (no base compiler: " in (out / "report.md").read_text()
