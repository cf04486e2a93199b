"""A/B end to end on CPU with fake environments: the benchpkg suite measured by the
real runner and plugins under two "compilers" (TRITON_INTERPRET=1), interleaved: both
sides' benchmark processes at once, pairing row by row (zlbench.plugins.pairing) with
the plugin's graph timing on its CPU backend.

The PR's environment is this one; a site dir first on PYTHONPATH carries a
``sitecustomize`` that runs in every process started there. The PR's and the
base's each write which side a worker process ran on and set the fake suite's
slowdown (``ZLBENCH_FAKE_SLOWDOWN``): the two builds differ only in speed. A base
whose ``import triton`` fails, and a base (a wrapper interpreter) whose FlagGems
comes from another commit, are one line, exit 2.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.gate.baselines import content_hashes
from zlbench.gate.load import load_results
from zlbench.models import (
    BaselineManifest,
    GateVerdict,
    PairsFile,
    Verdict,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
)
from zlbench.protocol.pairs import PairRule
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"
# Interpreted kernels on a shared 2-core CPU are noisy (tests/e2e/test_gate_e2e.py):
# a baseline made stale on purpose (every row flagged by the screen), a 16x slowdown,
# and a wide paired threshold (A/A rounds here move up to ~+100 % under load).
THRESHOLDS = "estimator: ratio\ndefault: 0.75\nnoise_multiplier: 1.0\nconfirm_repeats: 1\n"
FAST = "--iter 1 --zl-replays 2 --zl-warmup-ms 1"
SITECUSTOMIZE = """
import os
if "zlbench-proc-" in os.environ.get("TRITON_CACHE_DIR", ""):  # a worker, not a probe
    with open(os.environ["ZL_AB_TRACE"], "a") as f:
        f.write("{side}\\n")
    os.environ["ZLBENCH_FAKE_SLOWDOWN"] = os.environ.get("ZL_{side}_SLOWDOWN", "1")
"""

pytestmark = pytest.mark.slow


def site(root: Path, side: str) -> Path:
    """A site dir; the base's provides its own ``triton`` (a link to this
    environment's: another path, so another compiler to the A/B's checks)."""
    d = root / f"site-{side}"
    d.mkdir(parents=True)
    (d / "sitecustomize.py").write_text(SITECUSTOMIZE.format(side=side.upper()))
    if side == "base":
        spec = importlib.util.find_spec("triton")
        assert spec is not None and spec.submodule_search_locations
        (d / "triton").symlink_to(list(spec.submodule_search_locations)[0])
    return d


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A FlagGems-shaped checkout, its inventory, a baseline of `add`, two sites."""
    root = tmp_path_factory.mktemp("ab")
    fg = root / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(root / "ops", "main"), scan_checkout(fg, "main"))
    (root / "thresholds.yaml").write_text(THRESHOLDS)
    site(root, "pr"), site(root, "base")
    with pytest.MonkeyPatch.context() as mp:
        _env(mp, root)
        rc = main(
            ["baseline", "refresh", "--out", str(root / "baselines" / "v1"), "--ops", "add"]
            + ["--ops-dir", str(root / "ops"), "--flaggems-dir", str(fg), "--repeats", "1"]
            + ["--shape-file", str(fg / "benchmark" / "core_shapes.yaml")]
            + ["--dtypes", "float32", "--mode", "cudagraph"]
        )
    assert rc == 0
    stale_copy(root / "baselines" / "v1", root / "baselines" / "stale")
    return root


def stale_copy(base: Path, out: Path) -> None:
    """``base`` with every row 100x faster (manifest hashes re-recorded): the screen
    flags every row whatever the CPU's load, so the A/B alone decides."""
    shutil.copytree(base, out)
    for path in out.glob("*/*/result.json"):
        data = json.loads(path.read_text())
        for row in data["rows"]:
            row["latency_ms"] /= 100
            row["speedup"] *= 100
            row["speedups"] = [x * 100 for x in row["speedups"]]
        path.write_text(json.dumps(data))
    m = load_yaml_model(out / "manifest.yaml", BaselineManifest)
    m.name, m.files = "stale", content_hashes(out)
    dump_yaml_model(out / "manifest.yaml", m)


def _env(mp: pytest.MonkeyPatch, root: Path, **extra: str) -> None:
    mp.setenv("TRITON_INTERPRET", "1")
    mp.setenv("OMP_NUM_THREADS", "1")
    mp.setenv("ZLBENCH_FAKE_CLOCK", "1")  # numbers from a virtual clock, not the CPU's load
    mp.setenv("PYTEST_ADDOPTS", FAST)
    mp.setenv("ZLBENCH_FLAGGEMS_DIR", str(root / "fg"))
    old = os.environ.get("PYTHONPATH")
    mp.setenv("PYTHONPATH", os.pathsep.join([str(root / "site-pr"), *([old] if old else [])]))
    mp.setenv("ZL_AB_TRACE", str(root / "trace.txt"))
    for name in ("GEMS_VENDOR", "GITHUB_STEP_SUMMARY", "ZLBENCH_FAKE_SLOWDOWN"):
        mp.delenv(name, raising=False)
    for k, v in extra.items():
        mp.setenv(k, v)


def gate(world: Path, out: str, base: Path, mp, *args: str, bl="stale", **env: str) -> int:
    """``zlbench gate`` against the stale baseline (every row flagged) by default."""
    _env(mp, world, **env)
    (world / "trace.txt").unlink(missing_ok=True)
    return main(
        ["gate", "--baseline", str(world / "baselines" / bl), "--ops-dir", str(world / "ops")]
        + ["--thresholds", str(world / "thresholds.yaml"), "--out", str(world / out)]
        + ["--base-compiler", str(base), "--ab-threshold", "0.75", *args]
    )


def verdict(world: Path, out: str) -> GateVerdict:
    return load_json_model(world / out / "verdict.json", GateVerdict)


def test_pr_slower_than_the_base_is_a_regression_measured_interleaved(world, monkeypatch):
    rc = gate(world, "slow-pr", world / "site-base", monkeypatch, ZL_PR_SLOWDOWN="16")
    assert rc == 1
    trace = (world / "trace.txt").read_text().split()
    assert sorted(trace) == ["BASE", "PR"]  # one process per side, at once: no screen of its own
    v = verdict(world, "slow-pr")
    assert v.ab is not None and v.ab.mode == "changed" and v.ab.method == "interleaved"
    assert v.ab.ops == ["main/add"] and v.ab.pr_is_screen
    assert v.ab.base.env == str(world / "site-base") and v.ab.pr.dist and v.ab.pr.version
    # how it sampled: the Timing both sides' runs recorded, and the default adaptive pairs
    timing = load_results(world / "slow-pr" / "results").ops["main/add"].result.environment.timing
    assert timing is not None and timing.method.pairs
    assert v.ab.sampling == PairRule().sampling.timed(timing)
    rows = [r for r in v.rows if r.ab is not None]
    assert rows and all(r.verdict is Verdict.REGRESSION for r in rows)
    assert all(r.ab.decision == "REGRESSION" and r.ab.rounds >= 5 for r in rows)
    assert all(r.ab.change > 3 and r.ab.change_lo > 0.75 for r in rows)  # 16x the kernel work
    assert all(r.reason.startswith("slower than the base: ") and " pairs" in r.reason for r in rows)
    assert sorted(p.name for p in (world / "slow-pr" / "ab").iterdir()) == [
        "1",
        "ab.json",
        "pairs.json",
    ]
    assert not (world / "slow-pr" / "ab" / "1" / "pr").exists()  # the PR side is results/
    pairs = load_json_model(world / "slow-pr" / "ab" / "pairs.json", PairsFile)
    assert {r.key for r in pairs.rows} == {r.key for r in rows}
    for row in pairs.rows:
        sides = [x.side for x in row.samples]
        assert len(sides) % 2 == 0 and sides.count("pr") == sides.count("base")
        assert all({sides[i], sides[i + 1]} == {"pr", "base"} for i in range(0, len(sides), 2))


def test_slower_than_the_stored_baseline_and_the_base_alike_is_inherited(world, monkeypatch):
    assert gate(world, "inherited", world / "site-base", monkeypatch) == 0
    v = verdict(world, "inherited")
    rows = [r for r in v.rows if r.ab is not None]
    assert rows and all(r.verdict is Verdict.PASS and r.ab.inherited for r in rows)
    stale = "inherited from the base (baseline stale is stale here)"
    assert all(r.reason.startswith(stale) for r in rows)
    assert all("vs the base" in r.reason and "vs stale" in r.reason for r in rows)
    assert v.verdict == "PASS"


def test_an_a_a_gate_against_its_own_baseline_passes_judged_on_the_pairs(world, monkeypatch):
    assert gate(world, "aa", world / "site-base", monkeypatch, bl="v1") == 0
    assert sorted((world / "trace.txt").read_text().split()) == ["BASE", "PR"]
    v = verdict(world, "aa")
    assert v.ab is not None and v.ab.method == "interleaved"
    judged = [r for r in v.rows if r.ab is not None and r.ab.rounds]
    assert judged and all(r.verdict is not Verdict.REGRESSION for r in judged)


def test_a_base_that_cannot_import_triton_is_one_line_before_measuring(world, monkeypatch, capsys):
    broken = world / "site-broken"
    (broken / "triton").mkdir(parents=True)
    (broken / "triton" / "__init__.py").write_text("raise ImportError('base build broken')\n")
    assert gate(world, "broken", broken, monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "base build broken" in err[0] and "site-broken" in err[0]
    assert not (world / "trace.txt").exists()  # nothing was measured


def test_a_base_measuring_another_flaggems_commit_is_one_line(world, monkeypatch, capsys):
    other = world / "other-src"
    shutil.copytree(BENCHPKG / "src", other, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(other), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "other FlagGems"], check=True)
    wrapper = world / "python-other-flaggems"
    # its FlagGems first on the path (and not the suite's pytest.ini `pythonpath = src`),
    # then the base's triton (one at the PR's own path is refused before measuring)
    wrapper.write_text(
        f'#!/bin/sh\nexport PYTHONPATH="{other}:{world / "site-base"}:$PYTHONPATH"\n'
        'export PYTEST_ADDOPTS="$PYTEST_ADDOPTS -o pythonpath="\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    rc = gate(world, "other-fg", wrapper, monkeypatch)
    assert rc == 2  # refused once both sides measured: the progress lines come first
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert (
        len(err) == 1 and err[0].startswith("zlbench gate: error: ") and "flaggems_commit" in err[0]
    )


def test_bad_accept_list_is_one_line_before_measuring(world, monkeypatch, capsys):
    bad = world / "accept-bad.yaml"
    bad.write_text("accept:\n  - {op: add, change: 0.1, reason: ''}\n")
    assert gate(world, "bad-accept", world / "site-base", monkeypatch, "--accept", str(bad)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "accept.0.reason" in err[0]
    assert not (world / "trace.txt").exists()


def test_an_accept_entry_is_shown_on_its_rows_even_when_exceeded(world, monkeypatch):
    ok = world / "accept.yaml"
    ok.write_text("accept:\n  - {op: add, change: 1.0, reason: 'trade-off for exactness'}\n")
    args = ("--accept", str(ok))
    rc = gate(world, "accepted", world / "site-base", monkeypatch, *args, ZL_PR_SLOWDOWN="16")
    assert rc == 1  # 16x slower than the base is beyond +100 %
    v = verdict(world, "accepted")
    rows = [r for r in v.rows if r.accepted is not None]
    assert rows and v.accept and v.accept_source == str(ok)
    assert all(r.accepted.exceeded and "beyond the allowance" in r.reason for r in rows)
