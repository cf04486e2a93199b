"""The A/B cannot be talked into a PASS (issue 26): an artifact's ab.json renders no
markup in the reports, and an A/B whose two sides are one compiler is refused."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import AbCompiler, AbSummary, GateVerdict, load_json_model
from zlbench.runner.ab.rounds import AB_DIR, write_summary

S = "[8]"
HEADING = "\n## ✅ zlbench gate: PASS ![x](https://evil.example/i.png) @org/team"


def ab_shard(root: Path, op: str, *, pr_path="/pr/triton", base_path="/base/triton") -> Path:
    """A gate dir of one shard: its screen (results/) and its suspects' A/B (ab/)."""
    write_results(root / "results", [run_result(op, [crow(op, S, 1.0, lat=1.0)])])
    for side, lat in (("pr", 1.0), ("base", 0.9)):
        rows = [crow(op, S, 1.0 / lat, lat=lat, torch_lat=1.0)]
        write_results(root / AB_DIR / "1" / side, [run_result(op, rows)])
    s = AbSummary(mode="suspects", rounds=1, order=["pr", "base"], threshold=0.03)
    s.ops, s.seconds = [f"main/{op}"], {"pr": 10.0, "base": 12.0}
    s.pr = AbCompiler(env="pr", dist="flagtree", version="3.6.0", path=pr_path)
    s.base = AbCompiler(env="b", dist="flagtree", version="3.5.0", path=base_path)
    write_summary(root / AB_DIR, s)
    return root


def tamper(gate: Path, **fields) -> None:
    f = gate / AB_DIR / "ab.json"
    data = json.loads(f.read_text())
    data.update(fields)
    f.write_text(json.dumps(data))


def baseline(tmp_path: Path) -> Path:
    # stored: 0.5 ms, so the screen flags both ops and the A/B judges them
    return write_baseline(tmp_path / "bl", {op: [brow(op, S, 1.0, lat=0.5)] for op in "xy"})


def judge(tmp_path: Path, results: Path) -> int:
    return main(
        ["gate", "--baseline", str(baseline(tmp_path)), "--results", str(results)]
        + ["--out", str(tmp_path / "judge"), "--ops-dir", str(tmp_path / "ops")]
    )


# --------------------------------------------------------------------------- 1: injection


@pytest.mark.parametrize(
    "fields",
    [{"order": ["pr", HEADING]}, {"seconds": {"pr": 1.0, HEADING: 2.0}}],
    ids=["order", "seconds"],
)
def test_a_shards_ab_json_with_markup_in_its_sides_is_refused_by_merge(tmp_path, capsys, fields):
    """The workflow's merge-then-judge path: merge keeps the first shard's order."""
    s1, s2 = ab_shard(tmp_path / "s1", "x"), ab_shard(tmp_path / "s2", "y")
    tamper(s1, **fields)
    out = tmp_path / "m"
    assert main(["merge", str(s1), str(s2), "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert "ab.json" in line and "is not a side" in line and "\n" not in line


def test_a_results_dir_whose_ab_json_has_markup_in_its_order_is_refused(tmp_path, capsys):
    g = ab_shard(tmp_path / "g", "x")
    tamper(g, order=["pr", HEADING])
    assert judge(tmp_path, g) == 2
    assert "is not a side" in one_error_line(capsys)
    assert not (tmp_path / "judge" / "comment.md").exists()


def test_the_ab_section_escapes_the_sides_whatever_the_model_holds(tmp_path):
    """The renderer escapes even sides the model did not validate (model_construct)."""
    from zlbench.report.ab import render_ab_section

    g = ab_shard(tmp_path / "g", "x")
    assert judge(tmp_path, g) == 1
    v = load_json_model(tmp_path / "judge" / "verdict.json", GateVerdict)
    v.ab = AbSummary.model_construct(
        **{**dict(v.ab), "order": ["pr", HEADING], "seconds": {HEADING: 1.0}}
    )
    text = render_ab_section(v)
    assert "## ✅" not in text and "![x](" not in text and "@org" not in text
    assert "https://" not in text


# --------------------------------------------------------------------------- 2: A/A


def test_a_judge_of_an_ab_whose_sides_are_one_compiler_is_refused(tmp_path, capsys):
    """Both sides loaded triton from one path: the A/B says nothing about the PR."""
    g = ab_shard(tmp_path / "g", "x", pr_path="/venv/triton", base_path="/venv/triton")
    assert judge(tmp_path, g) == 2
    line = one_error_line(capsys)
    assert "/venv/triton" in line and "same" in line
    assert not (tmp_path / "judge" / "verdict.json").exists()


def _site_dir_without_triton(tmp_path: Path) -> Path:
    site = tmp_path / "base-site"
    (site / "somepkg").mkdir(parents=True)
    (site / "somepkg" / "__init__.py").write_text("")
    return site


def _fake_triton(root: Path) -> Path:
    """A site dir with an importable ``triton`` (plus pytest and zlbench from here)."""
    pkg = root / "triton"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '3.6.0'\n")
    return root


def test_a_base_site_dir_without_triton_is_refused(tmp_path, monkeypatch):
    """``import triton`` must not fall through to the PR's triton: the probe's path is
    outside the dir given, so the base is not that dir's compiler."""
    from zlbench.runner.ab.env import probe_compiler, resolve_env

    pr_site = _fake_triton(tmp_path / "pr-site")  # the PR's triton, on the inherited path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pr_site), *sys.path]))
    env = resolve_env(str(_site_dir_without_triton(tmp_path)))
    with pytest.raises(ZlbenchError, match="does not provide triton") as e:
        probe_compiler(env)
    assert "\n" not in str(e.value) and str(pr_site) in str(e.value)


def test_a_base_site_dir_with_its_own_triton_is_probed(tmp_path, monkeypatch):
    from zlbench.runner.ab.env import probe_compiler, resolve_env

    pr_site = _fake_triton(tmp_path / "pr-site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pr_site), *sys.path]))
    base = _fake_triton(tmp_path / "base-site")
    got = probe_compiler(resolve_env(str(base)))
    assert got.path is not None and Path(got.path).resolve() == (base / "triton").resolve()


def test_same_compiler_why_names_a_shared_path():
    from zlbench.runner.ab.env import same_compiler_why

    a = AbCompiler(env="pr", path="/v/lib/triton", dist="flagtree", version="3.6.0")
    b = AbCompiler(env="/v", path="/v/lib/triton", dist="flagtree", version="3.6.0")
    assert "/v/lib/triton" in same_compiler_why(a, b)
    assert same_compiler_why(a, b.model_copy(update={"path": "/w/lib/triton"})) == ""
    assert same_compiler_why(AbCompiler(), AbCompiler()) == ""  # nothing probed: no claim


def test_the_prs_own_venv_as_the_base_is_refused_before_measuring(tmp_path, capsys, monkeypatch):
    """``--base-compiler`` naming this very interpreter: one compiler on both sides."""
    pr_site = _fake_triton(tmp_path / "pr-site")
    monkeypatch.setenv("PYTHONPATH", str(pr_site))
    bl = baseline(tmp_path)
    rc = main(
        ["gate", "--baseline", str(bl), "--base-compiler", sys.executable]
        + ["--out", str(tmp_path / "out"), "--ops-dir", str(tmp_path / "ops")]
    )
    assert rc == 2
    line = one_error_line(capsys)
    assert "same triton" in line and str(pr_site) in line
    assert not (tmp_path / "out" / "results").exists()


@pytest.mark.parametrize(
    "line",
    ["not json", "[1, 2]", '{"path": [7]}', '{"error": 5}', "[" * 100_000],
    ids=["text", "list", "bad-type", "odd-error", "deep"],
)
def test_a_base_interpreter_printing_an_odd_probe_line_is_one_line(tmp_path, line):
    """A wrapper interpreter's probe line is the base's word only: never a traceback."""
    from zlbench.runner.ab.env import probe_compiler, resolve_env

    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\necho 'ZLBENCH_AB_PROBE {line}'\n")
    wrapper.chmod(0o755)
    with pytest.raises(ZlbenchError) as e:
        probe_compiler(resolve_env(str(wrapper)))
    assert "\n" not in str(e.value) and str(wrapper) in str(e.value)


def test_a_probe_line_naming_its_own_env_keeps_the_env_given(tmp_path):
    from zlbench.runner.ab.env import probe_compiler, resolve_env

    wrapper = tmp_path / "python"
    wrapper.write_text('#!/bin/sh\necho \'ZLBENCH_AB_PROBE {"env": "x", "path": "/t"}\'\n')
    wrapper.chmod(0o755)
    got = probe_compiler(resolve_env(str(wrapper)))
    assert got.env == str(wrapper) and got.path == "/t"
