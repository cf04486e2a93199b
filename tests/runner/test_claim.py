"""Output dirs are claimed atomically, so two runs never share one (docs/design.md §5.15)."""

from __future__ import annotations

import threading

import pytest

from zlbench.errors import ZlbenchError
from zlbench.runner.claim import claim_batch_dir, claim_new_dir


def test_claim_new_dir_sequential_and_racing(tmp_path):
    assert claim_new_dir(tmp_path / "a" / "run").name == "run"
    assert claim_new_dir(tmp_path / "a" / "run").name == "run-2"
    assert claim_new_dir(tmp_path / "a" / "run").name == "run-3"
    for i in range(20):
        barrier = threading.Barrier(2)
        got: list[str] = []

        def claim(i=i, barrier=barrier, got=got):
            barrier.wait()
            got.append(claim_new_dir(tmp_path / "race" / f"r{i}").name)

        threads = [threading.Thread(target=claim) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(got) == [f"r{i}", f"r{i}-2"]


def test_claim_new_dir_gives_up_after_999_names(tmp_path):
    for i in range(1, 1000):
        (tmp_path / ("run" if i == 1 else f"run-{i}")).mkdir()
    with pytest.raises(ZlbenchError, match="cannot claim an output dir"):
        claim_new_dir(tmp_path / "run")


def test_claim_batch_dir_reuses_empty_or_resumed_dir(tmp_path):
    path = tmp_path / "b"
    assert claim_batch_dir(path, resume=False) == path  # absent: created
    assert claim_batch_dir(path, resume=True) == path  # resumed: kept
    claimed = tmp_path / "c"
    assert claim_batch_dir(claimed, resume=False) == claimed
    assert claim_batch_dir(claimed, resume=False).name == "c-2"  # claimed, still empty: next
    (tmp_path / "e").mkdir()
    assert claim_batch_dir(tmp_path / "e", resume=False) == tmp_path / "e"  # empty: taken
    (path / "x").write_text("")
    assert claim_batch_dir(path, resume=True) == path  # resumed: kept
    assert claim_batch_dir(path, resume=False).name == "b-2"  # taken: next name
    (tmp_path / "f").write_text("")
    assert claim_batch_dir(tmp_path / "f", resume=True).name == "f-2"  # a file is no dir
