"""``zlbench merge`` takes only shards of one gate run (issue 49: 2): every ab.json field
that changes a verdict (the plain rows' threshold, the method, the A/A claim, ...) is
part of a shard's identity, and the shards that measured ops either all carry an A/B or
none does. Shards that are not one run are refused in one line (exit 2) whatever their
order, so the verdict never depends on which shard comes first; the shipped FAIL split
into two shards still merges and judges as the unsharded gate did."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.support.trees import REPO, shipped
from tests.support.zlsynth import one_error_line
from zlbench.cli import main
from zlbench.models import GateVerdict, Verdict, load_json_model, read_ops_status
from zlbench.runner.batch.status import write_ops_status

V5 = "examples/h200-gate-v5-no-coalesce"


def writable(root: Path) -> None:
    """``chmod -R u+w root`` (the shipped tree's cache is read-only)."""
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            os.chmod(p, p.stat().st_mode | stat.S_IWUSR)


def _keep_ops(batch: Path, keep: set[str]) -> None:
    """``batch`` (a batch dir) cut down to the ops ``keep`` names (``main/<run name>``)."""
    statuses = read_ops_status(batch / "ops_status.csv")
    for st in statuses:
        if f"{st.repo}/{st.run_name}" not in keep and st.run_dir:
            shutil.rmtree(batch / st.run_dir)
    write_ops_status(batch, [s for s in statuses if f"{s.repo}/{s.run_name}" in keep])
    info = json.loads((batch / "batch.json").read_text())
    info["ops"] = [k for k in info["ops"] if k in keep]
    (batch / "batch.json").write_text(json.dumps(info))


def split_v5(tmp_path: Path) -> tuple[Path, Path]:
    """The shipped FAIL gate dir as the two shards of ``gate --shard K/2``: each its
    half of the ops in results/, ab/1/base/, pairs.json and ab.json, the same codegen
    screen."""
    src = shipped(V5)
    ops = json.loads((src / "ab" / "ab.json").read_text())["ops"]
    halves = (set(ops[::2]), set(ops[1::2]))
    shards = []
    for k, keep in enumerate(halves, start=1):
        d = tmp_path / f"s{k}"
        shutil.copytree(src, d)
        writable(d)
        for batch in (d / "results", d / "ab" / "1" / "base"):
            _keep_ops(batch, keep)
        pairs = json.loads((d / "ab" / "pairs.json").read_text())
        pairs["rows"] = [
            r for r in pairs["rows"] if f"{r['key']['repo']}/{r['key']['run_name']}" in keep
        ]
        (d / "ab" / "pairs.json").write_text(json.dumps(pairs))
        tamper(d, ops=sorted(keep))
        shards.append(d)
    return shards[0], shards[1]


def tamper(gate: Path, **fields) -> None:
    f = gate / "ab" / "ab.json"
    data = json.loads(f.read_text())
    data.update(fields)
    f.write_text(json.dumps(data))


def merge(out: Path, *dirs: Path) -> int:
    return main(["merge", *map(str, dirs), "--out", str(out)])


@pytest.fixture
def shards(tmp_path) -> tuple[Path, Path]:
    return split_v5(tmp_path)


def test_the_shards_of_one_real_gate_merge_and_judge_as_the_gate(tmp_path, shards):
    """The control: the shipped FAIL (17 REGRESSION) split in two and merged back."""
    assert merge(tmp_path / "m", *shards) == 0
    out = tmp_path / "judge"
    rc = main(
        ["report", str(tmp_path / "m"), "--baseline", str(REPO / "baselines" / "v5")]
        + ["--ops-file", str(REPO / "ops" / "gate_core.txt"), "--out", str(out)]
    )
    v = load_json_model(out / "verdict.json", GateVerdict)
    assert rc == 1 and v.verdict == "FAIL"
    assert sum(r.verdict is Verdict.REGRESSION for r in v.rows) == 17


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"threshold_plain": 0.5}, "plain threshold"),
        ({"method": "rounds"}, "method"),
        ({"aa": True}, "A/A"),
        ({"caliber": "own-best"}, "caliber"),
        ({"pr_is_screen": False}, "PR side"),
    ],
    ids=["threshold_plain", "method", "aa", "caliber", "pr_is_screen"],
)
@pytest.mark.parametrize("first", [1, 2])
def test_shards_of_different_ab_rules_are_refused_in_either_order(
    tmp_path, capsys, shards, fields, named, first
):
    s1, s2 = shards
    tamper(s2, **fields)
    order = (s1, s2) if first == 1 else (s2, s1)
    assert merge(tmp_path / "m", *order) == 2
    line = one_error_line(capsys)
    assert named in line and "merge shards of one gate run only" in line and len(line) < 400
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("first", [1, 2])
def test_a_shard_without_an_ab_beside_one_with_it_is_refused(tmp_path, capsys, shards, first):
    s1, s2 = shards
    shutil.rmtree(s2 / "ab")
    order = (s1, s2) if first == 1 else (s2, s1)
    assert merge(tmp_path / "m", *order) == 2
    line = one_error_line(capsys)
    assert f"{s2} has no A/B" in line and "one gate run only" in line
    assert not (tmp_path / "m").exists()


def test_an_empty_shard_without_an_ab_still_merges(tmp_path, shards):
    """``gate --shard 3/3`` with no op to run writes its codegen screen and an empty
    results/ only: it cannot disagree with the shards that measured."""
    empty = tmp_path / "s3"
    write_ops_status(empty / "results", [])
    shutil.copytree(shards[0] / "codegen", empty / "codegen")
    assert merge(tmp_path / "m", *shards, empty) == 0
    assert (tmp_path / "m" / "ab" / "ab.json").is_file()


@pytest.mark.parametrize("paths", [(None, None), ("same", "same")], ids=["null", "one-compiler"])
def test_a_shard_whose_sides_are_not_two_known_compilers_is_refused(
    tmp_path, capsys, shards, paths
):
    """Each shard's own sides are checked, not only the first shard's (the merged
    ab.json keeps those): a second shard that paired the PR with itself, or whose
    paths were left out, does not slip through."""
    s1, s2 = shards
    data = json.loads((s2 / "ab" / "ab.json").read_text())
    tamper(
        s2,
        pr={**data["pr"], "path": paths[0] and "/t/triton"},
        base={**data["base"], "path": paths[1] and "/t/triton"},
    )
    assert merge(tmp_path / "m", s1, s2) == 2
    line = one_error_line(capsys)
    assert str(s2 / "ab" / "ab.json") in line
    assert ("records no triton path" if paths[0] is None else "same triton") in line
    assert not (tmp_path / "m").exists()
