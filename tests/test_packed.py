"""Packed trees (zlbench/models/packed.py, docs/baselines.md "Packed versions"): a tree
packed and unpacked is the same tree, a later version packs only its new blobs, and
every way a lock or an archive can be wrong is one line, with nothing half-written."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
import tarfile
import threading
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models.packed import (
    lock_path,
    pack_tree,
    packed_label,
    parse_lock,
    read_lock,
    resolve_tree,
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@pytest.fixture
def repo(tmp_path):
    """A repository with an archive/ dir and a baseline v1 packed in it."""
    r = tmp_path / "repo"
    (r / "archive").mkdir(parents=True)
    v1 = _tree(r / "baselines" / "v1", {"manifest.yaml": "a\n", "main/abs/result.json": "{}\n"})
    lock, name, _ = pack_tree(v1, r / "archive")
    lock_path(v1).write_text(lock.render())
    return r


def _pack(repo: Path, name: str, files: dict[str, str]) -> tuple[Path, str | None]:
    d = _tree(repo / "baselines" / name, files)
    lock, new, _ = pack_tree(d, repo / "archive")
    lock_path(d).write_text(lock.render())
    return d, new


def test_a_packed_tree_unpacks_to_the_same_files_read_only(repo, tmp_path):
    want = _digests(repo / "baselines" / "v1")
    shutil.rmtree(repo / "baselines" / "v1")
    got = resolve_tree(repo / "baselines" / "v1", cache=tmp_path / "cache")
    assert _digests(got) == want
    assert got != repo / "baselines" / "v1" and got.name == "v1"
    assert (got / "main" / "abs" / "result.json").stat().st_mode & 0o222 == 0
    assert got.stat().st_mode & 0o222 == 0
    assert packed_label(got) == "baselines/v1"  # how reports name it
    assert resolve_tree(repo / "baselines" / "v1", cache=tmp_path / "cache") == got  # cached


def test_a_checked_out_dir_or_an_unknown_path_is_returned_as_it_is(repo, tmp_path):
    assert resolve_tree(repo / "baselines" / "v1", cache=tmp_path / "c") == repo / "baselines/v1"
    assert resolve_tree(repo / "nothing", cache=tmp_path / "c") == repo / "nothing"
    assert not (tmp_path / "c").exists()


def test_a_later_version_packs_only_its_new_blobs(repo):
    files = {"manifest.yaml": "a\n", "main/abs/result.json": "{}\n", "main/cos/r.json": "1\n"}
    d, new = _pack(repo, "v2", files)
    lock = read_lock(lock_path(d))
    assert len(lock.archives) == 2 and new in lock.archives
    with tarfile.open(repo / "archive" / new) as tar:
        assert tar.getnames() == [hashlib.sha256(b"1\n").hexdigest()]
    _, again = _pack(repo, "v3", {"manifest.yaml": "a\n"})
    assert again is None  # every blob already held: no new archive


def test_archives_and_locks_are_deterministic(repo, tmp_path):
    d = repo / "baselines" / "v1"
    other = tmp_path / "other"
    other.mkdir()
    lock, name, _ = pack_tree(d, other)
    assert (other / name).read_bytes() == (repo / "archive" / name).read_bytes()
    assert lock.render() == lock_path(d).read_text()


def _packed_only(repo: Path) -> Path:
    shutil.rmtree(repo / "baselines" / "v1")
    return repo / "baselines" / "v1"


def _one_line(fn, *a, **k) -> str:
    with pytest.raises(ZlbenchError) as e:
        fn(*a, **k)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_a_corrupt_or_missing_archive_is_one_line_and_no_tree(repo, tmp_path):
    v1 = _packed_only(repo)
    (archive,) = (repo / "archive").iterdir()
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 1
    archive.write_bytes(bytes(data))
    assert "sha256 is not its name" in _one_line(resolve_tree, v1, cache=tmp_path / "c")
    archive.unlink()
    assert "archive missing" in _one_line(resolve_tree, v1, cache=tmp_path / "c")
    assert not list((tmp_path / "c" / "trees").rglob("v1"))


def _archive(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> tuple[str, bytes]:
    buf = io.BytesIO()
    with lzma.open(buf, "wb") as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest() + ".tar.xz", data


def _lock(tmp_path: Path, name: str, files: list, archive: str) -> Path:
    d = tmp_path / "r" / "baselines"
    (tmp_path / "r" / "archive").mkdir(parents=True, exist_ok=True)
    d.mkdir(parents=True, exist_ok=True)
    lock = {"format": "zlbench-packed-tree 1", "tree": name, "archives": [archive]}
    (d / f"{name}.lock").write_text(json.dumps({**lock, "files": files}))
    return d / name


@pytest.mark.parametrize(
    ("member", "says"),
    [
        ("link", "is not a blob"),
        ("misnamed", "mismatch"),
        ("path", "is not a blob"),
    ],
)
def test_an_archive_member_that_is_no_blob_is_refused(tmp_path, member, says):
    text = b"x\n"
    sha = hashlib.sha256(text).hexdigest()
    if member == "link":
        info = tarfile.TarInfo(sha)
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        name, data = _archive([info])
    elif member == "misnamed":
        name, data = _archive([(sha, b"y\n")])
    else:
        name, data = _archive([("../" + sha, text)])
    tree = _lock(tmp_path, "v1", [["a.txt", sha, 2]], name)
    (tmp_path / "r" / "archive" / name).write_bytes(data)
    assert says in _one_line(resolve_tree, tree, cache=tmp_path / "c")
    assert not (tmp_path / "c" / "objects" / sha).exists()


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ([["../x", "0" * 64, 1]], "leaves the tree"),
        ([["/etc/x", "0" * 64, 1]], "not a relative path"),
        ([["a/./b", "0" * 64, 1]], "leaves the tree"),
        ([["a", "0" * 64, 1], ["a/b", "0" * 64, 1]], "is a file and a dir"),
        ([["a", "0" * 64, 1], ["a", "0" * 64, 1]], "listed twice"),
        ([["a", "zz", 1]], "64 hex"),
        ([["a", "0" * 64, -1]], "out of range"),
        ([], "empty"),
    ],
)
def test_a_malformed_lock_is_one_line(files, says):
    lock = {"format": "zlbench-packed-tree 1", "tree": "v1", "archives": ["0" * 64 + ".tar.xz"]}
    assert says in _one_line(parse_lock, json.dumps({**lock, "files": files}), "v1.lock")


def test_a_lock_of_another_format_or_tree_name_is_refused(tmp_path):
    assert "is not 'zlbench-packed-tree 1'" in _one_line(
        parse_lock, json.dumps({"format": "zlbench-packed-tree 2"}), "x.lock"
    )
    assert "bad JSON" in _one_line(parse_lock, "{", "x.lock")
    good = {"format": "zlbench-packed-tree 1", "archives": ["0" * 64 + ".tar.xz"]}
    assert "is not a dir name" in _one_line(
        parse_lock, json.dumps({**good, "tree": "../v1", "files": [["a", "0" * 64, 1]]}), "x"
    )
    text = b"x\n"
    sha = hashlib.sha256(text).hexdigest()
    name, data = _archive([(sha, text)])
    tree = _lock(tmp_path, "v2", [["a.txt", sha, 2]], name)
    (tmp_path / "r" / "archive" / name).write_bytes(data)
    tree.with_name("v3.lock").write_text(tree.with_name("v2.lock").read_text())
    assert "is not 'v3'" in _one_line(resolve_tree, tree.with_name("v3"), cache=tmp_path / "c")


def test_a_blob_no_archive_holds_is_named(tmp_path):
    text = b"x\n"
    sha = hashlib.sha256(text).hexdigest()
    name, data = _archive([(sha, text)])
    tree = _lock(tmp_path, "v1", [["a.txt", sha, 2], ["b.txt", "f" * 64, 2]], name)
    (tmp_path / "r" / "archive" / name).write_bytes(data)
    assert "b.txt (blob ffffffffffff) is in none" in _one_line(
        resolve_tree, tree, cache=tmp_path / "c"
    )


def test_concurrent_readers_build_the_tree_once(repo, tmp_path):
    v1 = _packed_only(repo)
    got: list[Path] = []
    threads = [
        threading.Thread(target=lambda: got.append(resolve_tree(v1, cache=tmp_path / "c")))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and _digests(got[0])
    assert not list((tmp_path / "c" / "trees").rglob(".tmp-*"))


def test_the_cli_reads_a_packed_baseline_and_names_it_as_given(repo, tmp_path, monkeypatch, capsys):
    """`zlbench unpack` prints the copy; `baseline show` reads the packed tree (its
    manifest is no real manifest here, so the error names the copy's file)."""
    _packed_only(repo)
    monkeypatch.setenv("ZLBENCH_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.chdir(repo)
    assert main(["unpack", "baselines/v1"]) == 0
    out = capsys.readouterr().out.strip()
    assert Path(out).is_dir() and Path(out).is_relative_to(tmp_path / "c")
    assert main(["unpack", "baselines/v9"]) == 2
    assert "neither a dir nor a packed tree" in capsys.readouterr().err


def test_pack_writes_the_lock_after_the_round_trip(repo, tmp_path, monkeypatch, capsys):
    d = _tree(repo / "examples" / "gate", {"verdict.json": "{ }\n", "report.md": "# r\n"})
    monkeypatch.chdir(repo)
    assert main(["pack", "examples/gate"]) == 0
    assert "examples/gate.lock: 2 files in 1 archive(s); new archive" in capsys.readouterr().out
    assert {f[0] for f in read_lock(lock_path(d)).files} == {"verdict.json", "report.md"}
    (d / "link").symlink_to(d / "report.md")
    lock_before = lock_path(d).read_text()
    assert main(["pack", "examples/gate"]) == 2
    assert "not a plain file" in capsys.readouterr().err
    assert lock_path(d).read_text() == lock_before


def test_unpack_verify_finds_a_changed_copy(repo, tmp_path, monkeypatch, capsys):
    _packed_only(repo)
    monkeypatch.setenv("ZLBENCH_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.chdir(repo)
    assert main(["unpack", "--verify", "baselines/v1"]) == 0
    got = Path(capsys.readouterr().out.strip())
    f = got / "main" / "abs" / "result.json"
    os.chmod(f.parent, 0o755)
    f.unlink()
    f.write_text("{ }\n")
    (got / "main" / "extra").write_text("x")
    assert main(["unpack", "--verify", "baselines/v1"]) == 1
    out = capsys.readouterr()
    assert "FAIL main/abs/result.json: content changed" in out.out
    assert "FAIL main/extra: not in the lock" in out.out
    assert "differs from its lock in 2 file(s)" in out.err
