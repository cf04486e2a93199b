"""The judge re-derives, never believes (issue 49 item 1): the four ways to turn the
shipped FAIL ``examples/h200-gate-v5-no-coalesce`` into a PASS by editing the artifact
alone, without forging a timing number. Each edits a copy and re-judges it with
``zlbench report``: the FAIL stands (exit 1, 17 REGRESSION) or the artifact is refused
(exit 2, one line). docs/security.md "The judge re-derives"."""

from __future__ import annotations

import json
import shutil
import stat
from collections import Counter
from pathlib import Path

import pytest

from tests.support.trees import REPO, shipped
from tests.support.zlsynth import one_error_line
from zlbench.cli import main

EXAMPLE = "examples/h200-gate-v5-no-coalesce"
THROTTLED = 0x8  # HW slowdown (zlbench.protocol.pairs.THROTTLE_MASK)


def copy_example(tmp_path: Path) -> Path:
    g = tmp_path / "gate"
    shutil.copytree(shipped(EXAMPLE), g)
    for p in (g, *g.rglob("*")):
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return g


def report(g: Path, out: Path) -> int:
    args = ["report", str(g), "--baseline", str(REPO / "baselines" / "v5")]
    args += ["--ops-file", str(REPO / "ops" / "gate_core.txt"), "--out", str(out)]
    return main(args)


def verdicts(out: Path) -> Counter:
    v = json.loads((out / "verdict.json").read_text())
    return Counter(r["verdict"] for r in v["rows"])


@pytest.fixture(scope="module")
def regressed(tmp_path_factory) -> list[dict]:
    """The row keys the unchanged example judges REGRESSION (exactly 17)."""
    tmp = tmp_path_factory.mktemp("shipped")
    out = tmp / "out"
    assert report(shipped(EXAMPLE), out) == 1
    assert verdicts(out)["REGRESSION"] == 17
    rows = json.loads((out / "verdict.json").read_text())["rows"]
    return [r["key"] for r in rows if r["verdict"] == "REGRESSION"]


def still_fails(g: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert report(g, out) == 1
    assert verdicts(out)["REGRESSION"] == 17


def edit_pairs(g: Path, edit) -> None:
    f = g / "ab" / "pairs.json"
    data = json.loads(f.read_text())
    data["rows"] = edit(data["rows"])
    f.write_text(json.dumps(data))


def _same_key(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in ("repo", "run_name", "op", "dtype", "shape", "occurrence"))


def is_regressed(row: dict, regressed: list[dict]) -> bool:
    return any(_same_key(row["key"], k) for k in regressed)


def test_the_unchanged_example_fails_with_17_regressions(regressed):
    assert len(regressed) == 17


# --------------------------------------------------------------- 1: a sample's plain flag


def test_a_plain_flag_on_a_graph_timed_row_is_refused(tmp_path, capsys, regressed):
    """One sample flagged plain made the whole row plain (block medians, 25 %): the
    sides' own runs recorded these rows timed with a CUDA graph."""
    g = copy_example(tmp_path)

    def flag(rows):
        for r in rows:
            if is_regressed(r, regressed):
                r["samples"][0]["plain"] = True
        return rows

    edit_pairs(g, flag)
    capsys.readouterr()
    assert report(g, tmp_path / "out") == 2
    line = one_error_line(capsys)
    assert "plain" in line and "CUDA graph" in line
    assert not (tmp_path / "out" / "verdict.json").exists()


# --------------------------------------------------------------- 2: fewer pairs than min_pairs


def _four_pairs(samples: list[dict]) -> list[dict]:
    return samples[:8]


def _throttle_all_but_four(samples: list[dict]) -> list[dict]:
    for i in range(8, len(samples) - 1, 2):
        for s in samples[i : i + 2]:
            if s["side"] == "base":
                s["reasons"] = THROTTLED
    return samples


def _one_side_per_slot(samples: list[dict]) -> list[dict]:
    return sorted(samples, key=lambda s: s["side"])  # base, base, ..., pr, pr, ...


@pytest.mark.parametrize(
    "edit",
    [_four_pairs, _throttle_all_but_four, _one_side_per_slot],
    ids=["cut-to-4-pairs", "throttled-base-samples", "re-ordered-slots"],
)
def test_a_row_with_fewer_pairs_than_the_rule_is_judged_as_if_it_had_none(
    tmp_path, regressed, edit
):
    """1-4 complete pairs made the row INCONCLUSIVE (the gate passed); now it is judged
    against the stored baseline, as a row without pairs is: the FAIL stands."""
    g = copy_example(tmp_path)

    def cut(rows):
        for r in rows:
            if is_regressed(r, regressed):
                r["samples"] = edit(r["samples"])
        return rows

    edit_pairs(g, cut)
    still_fails(g, tmp_path)
    v = json.loads((tmp_path / "out" / "verdict.json").read_text())
    reasons = [r["reason"] for r in v["rows"] if r["verdict"] == "REGRESSION"]
    assert any("fewer than the rule's 5" in x for x in reasons), reasons


# --------------------------------------------------------------- 3: a row listed twice


def test_a_row_listed_twice_in_one_pairs_file_is_refused(tmp_path, capsys, regressed):
    """The later copy won: each regressed row listed again with a passing row's samples."""
    g = copy_example(tmp_path)

    def twice(rows):
        passing = next(r for r in rows if not is_regressed(r, regressed))
        again = [{**r, "samples": passing["samples"]} for r in rows if is_regressed(r, regressed)]
        return rows + again

    edit_pairs(g, twice)
    capsys.readouterr()
    assert report(g, tmp_path / "out") == 2
    line = one_error_line(capsys)
    assert "twice" in line and "pairs.json" in line


# --------------------------------------------------------------- 4: over_budget


@pytest.mark.parametrize("budget_s", [10.0, None], ids=["budget-10", "no-budget"])
def test_ops_listed_beyond_the_budget_are_re_planned(tmp_path, capsys, regressed, budget_s):
    """The regressed ops moved from ``timed`` to ``over_budget`` and their run dirs
    dropped: 'not timed, beyond the gate's GPU budget' made the gate pass."""
    g = copy_example(tmp_path)
    f = g / "codegen" / "timing.json"
    plan = json.loads(f.read_text())
    ops = sorted({f"{k['repo']}/{k['run_name']}" for k in regressed})
    assert len(ops) == 14
    for op in ops:
        why = plan["timed"].pop(op)
        plan["over_budget"][op] = f"changed, not timed: beyond the GPU budget: {why}"
        shutil.rmtree(g / "results" / op)
    plan["order"] = [k for k in plan["order"] if k not in ops]
    plan["budget_s"] = budget_s
    f.write_text(json.dumps(plan))
    capsys.readouterr()
    assert report(g, tmp_path / "out") == 2
    line = one_error_line(capsys)
    assert "timing.json" in line and "budget" in line
    assert not (tmp_path / "out" / "verdict.json").exists()
