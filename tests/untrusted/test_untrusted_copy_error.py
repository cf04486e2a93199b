"""A failed copy (a full disk) in ``zlbench merge`` is one short line (issue 26: 20):
the first failing file, its reason and how many more failed, never shutil.Error's
repr of every file; nothing is left behind."""

from __future__ import annotations

import shutil

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import ERROR_LINE_MAX, main

S = "[1024]"


def full_disk(*args, **kwargs):
    raise shutil.Error(
        [
            (f"/shard/main/op/file{i}.json", f"/m/main/op/file{i}.json",
             f"[Errno 28] No space left on device: '/m/main/op/file{i}.json'")
            for i in range(60)
        ]
    )  # fmt: skip


def test_a_failed_copy_in_merge_is_one_short_line(tmp_path, capsys, monkeypatch):
    a = write_results(tmp_path / "a", [run_result("add", [crow("add", S, 1.0)])])
    b = write_results(tmp_path / "b", [run_result("mm", [crow("mm", S, 1.0)])])
    monkeypatch.setattr(shutil, "copytree", full_disk)
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 2
    line = one_error_line(capsys)
    assert len(line) <= ERROR_LINE_MAX + 40, len(line)
    assert "/shard/main/op/file0.json" in line and "No space left on device" in line
    assert "59 more" in line and "file1.json" not in line and "[Errno" not in line
    assert not (tmp_path / "m").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m")]
