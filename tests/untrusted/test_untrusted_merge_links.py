"""``zlbench merge`` and the readers of ab/ and codegen blobs never follow a path or a
link out of the artifact they read (issue 16): one error line, exit 2, nothing copied."""

from __future__ import annotations

import pytest

from tests.support.zlsynth import crow, one_error_line, run_result, write_results
from zlbench.cli import main
from zlbench.errors import ZlbenchError

S = "[1024]"


def good():
    return [run_result("add", [crow("add", S, 1.0)])]


def merge(*args) -> int:
    return main(["merge", *map(str, args)])


def test_merge_refuses_a_shard_whose_run_dir_holds_a_link_out(tmp_path, capsys):
    (tmp_path / "secret").write_text("token\n")
    shard = write_results(tmp_path / "s1", good(), log="ok\n")
    (shard / "main" / "add" / "loot").symlink_to(tmp_path / "secret")
    out = tmp_path / "merged"
    assert merge(shard, "--out", out) == 2
    line = one_error_line(capsys)
    assert "loot" in line and "outside" in line
    assert not out.exists()


def test_merge_refuses_a_gate_dir_whose_confirm_pass_links_out(tmp_path, capsys):
    write_results(tmp_path / "g" / "results", good())
    write_results(tmp_path / "elsewhere", good())
    (tmp_path / "g" / "confirm").mkdir()
    (tmp_path / "g" / "confirm" / "1").symlink_to(tmp_path / "elsewhere")
    out = tmp_path / "merged"
    assert merge(tmp_path / "g", "--out", out) == 2
    assert "confirm/1" in one_error_line(capsys)
    assert not out.exists()


def test_merge_refuses_a_gate_dir_whose_results_link_out(tmp_path, capsys):
    write_results(tmp_path / "elsewhere", good())
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "results").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "h" / "results").mkdir(parents=True)
    write_results(tmp_path / "h" / "results", good())
    out = tmp_path / "merged"
    # g is not a gate dir by is_gate_dir's test unless results/ is a dir: it is (a link)
    assert merge(tmp_path / "g", tmp_path / "h", "--out", out) == 2
    assert "outside" in one_error_line(capsys)
    assert not out.exists()


def test_ab_rounds_linked_out_of_the_gate_dir_are_refused(tmp_path):
    from zlbench.runner.ab.rounds import load_summary, round_dirs

    write_results(tmp_path / "elsewhere", good())
    ab = tmp_path / "g" / "ab" / "1"
    ab.mkdir(parents=True)
    (ab / "pr").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ZlbenchError, match="outside"):
        round_dirs(tmp_path / "g" / "ab")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "ab").symlink_to(tmp_path / "g" / "ab")
    with pytest.raises(ZlbenchError, match="outside"):
        load_summary(tmp_path / "h")


@pytest.mark.parametrize("blob", ["../secret.gz", "/etc/passwd", "blobs/up/secret.gz"])
def test_codegen_blob_paths_stay_inside_the_codegen_dir(tmp_path, blob):
    import gzip
    import hashlib

    from zlbench.models.codegen import StageDigest, read_blob

    data = b"secret"
    (tmp_path / "secret.gz").write_bytes(gzip.compress(data))
    cg = tmp_path / "cg"
    (cg / "blobs").mkdir(parents=True)
    (cg / "blobs" / "up").symlink_to(tmp_path)
    sha = hashlib.sha256(data).hexdigest()
    digest = StageDigest(sha256=sha, size=6, compressed_size=1, blob=blob)
    with pytest.raises(ZlbenchError, match=r"absolute|outside|'\.\.'"):
        read_blob(cg, digest)
