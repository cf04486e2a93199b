"""``zlbench merge`` checks that every shard replayed the same baseline with the same
settings from each shard's batch.json (issue 26: 15): a shard without one no longer
skips the check. It is refused unless nothing can disagree with it (it holds no op,
or it is the only shard that holds any)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import main
from zlbench.models import BatchInfo, dump_json_model
from zlbench.runner.batch.status import write_ops_status

S = "[1024]"


def gate_shard(root: Path, op: str, *, replay_root: str = "baselines/v3") -> Path:
    results = write_results(root / "results", [run_result(op, [crow(op, S, 1.0)])])
    info = BatchInfo(created="2026-12-01T00:00:00Z", mode="replay", replay_root=replay_root)
    dump_json_model(results / "batch.json", info)
    return root


def merge(tmp_path: Path, *dirs: Path) -> int:
    return main(["merge", *map(str, dirs), "--out", str(tmp_path / "m")])


@pytest.mark.parametrize("bare", [1, 2])
def test_a_gate_shard_without_batch_json_is_refused(tmp_path, capsys, bare):
    s = {
        1: gate_shard(tmp_path / "s1", "add"),
        2: gate_shard(tmp_path / "s2", "mm", replay_root="other"),
    }
    (s[bare] / "results" / "batch.json").unlink()
    assert merge(tmp_path, s[1], s[2]) == 2
    line = one_error_line(capsys)
    assert "batch.json" in line and str(s[bare] / "results") in line and len(line) < 400
    assert not (tmp_path / "m").exists()


def test_a_batch_shard_without_batch_json_is_refused(tmp_path, capsys):
    a = write_results(tmp_path / "a", [run_result("add", [crow("add", S, 1.0)])])
    b = write_results(tmp_path / "b", [run_result("mm", [crow("mm", S, 1.0)])], info=False)
    assert merge(tmp_path, a, b) == 2
    assert f"cannot merge {b}: it has no batch.json" in one_error_line(capsys)


def test_shards_that_all_lack_batch_json_are_refused(tmp_path, capsys):
    a = write_results(tmp_path / "a", [run_result("add", [crow("add", S, 1.0)])], info=False)
    b = write_results(tmp_path / "b", [run_result("mm", [crow("mm", S, 1.0)])], info=False)
    assert merge(tmp_path, a, b) == 2
    assert "no batch.json" in one_error_line(capsys)


def test_what_cannot_disagree_still_merges(tmp_path):
    """An empty shard (``gate --shard`` with nothing to run writes only an empty
    ops_status.csv) and the only shard holding ops need no batch.json."""
    a = gate_shard(tmp_path / "a", "add")
    (a / "results" / "batch.json").unlink()
    empty = tmp_path / "empty"
    write_ops_status(empty / "results", [])
    assert merge(tmp_path, a, empty, a) == 0
    assert (tmp_path / "m" / "results" / "main" / "add" / "result.json").is_file()
