"""Bounded work on hostile input (issue 49, item 3): a "billion laughs" YAML, a FIFO
where a file should be, a pack header counting 10^30 entries, a row of thousands of
pairs and a truncated records pack are each one line (exit 2) or a bounded statistic,
never a hang, an exhausted memory or a traceback.

A case whose regression would hang (an alias graph expanded, a FIFO read) runs in a
child process under a timeout, or is built to fail fast: a counter that stops an
expansion, a writer that ends a FIFO's read with EOF. No test is timed."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.trees import shipped
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
from zlbench.models import base as models_base
from zlbench.models import load_yaml_model, parse_yaml, read_text
from zlbench.models.accept import AcceptList
from zlbench.models.packed import _fetch
from zlbench.models.store import MAGIC, PACK_SUFFIX, clear_cache, encode_pack, read_pack
from zlbench.protocol.pairs import median_ci, pair_stats

REPO = Path(__file__).resolve().parents[2]
S = "[1024]"
GUARD_S = 120  # a child that hangs fails the test instead of hanging it


def _zl(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zlbench", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=GUARD_S,
    )


def _one_line(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return err[0]


# --------------------------------------------------------------------------- billion laughs


def bomb(levels: int = 9, fan: int = 9, key: str = "lol") -> str:
    """YAML anchors ``a0``..``a<levels>``, each a list of ``fan`` aliases of the one
    before: ``a9`` expands to 9**9 (~4 * 10**8) strings."""
    lines = [f"{key}0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"{key}{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


class _Expanded(Exception):
    pass


@pytest.fixture
def counted(monkeypatch):
    """Stops any walk that visits far more strings than the graph holds: an expansion
    fails fast instead of running for minutes."""
    calls = [0]
    real = models_base.clean_surrogates

    def counting(text: str) -> str:
        calls[0] += 1
        if calls[0] > 10_000:
            raise _Expanded(calls[0])
        return real(text)

    monkeypatch.setattr(models_base, "clean_surrogates", counting)
    return calls


def test_a_zlbench_yaml_file_refuses_an_alias_in_one_line(tmp_path, counted):
    f = tmp_path / "accept.yaml"
    f.write_text("accept: []\n" + bomb())
    with pytest.raises(ZlbenchError, match=r"YAML alias \*a0 \(line 3\)") as e:
        load_yaml_model(f, AcceptList)
    assert "\n" not in str(e.value) and str(f) in str(e.value)
    with pytest.raises(ZlbenchError, match="alias"):
        parse_yaml("x: &a [1]\ny: *a\n", f, unique_keys=True)


def test_a_yaml_alias_graph_is_cleaned_once_per_shared_value(counted):
    """Upstream shape files use anchors (read without ``unique_keys``): the scrub cleans
    a shared list once, not once per alias (9**9 times here)."""
    data = parse_yaml(bomb(), "shapes.yaml")
    assert counted[0] < 100
    assert data["lol9"][0][0][0][0][0][0][0][0][0] == ["lol"]


def test_clean_never_revisits_a_shared_object(counted):
    x: object = ["\ud800"]
    for _ in range(40):  # 2**40 leaves if expanded
        x = [x, x]
    out = models_base._clean({"k": x}, Path("p.json"))
    leaf = out["k"]
    while len(leaf) == 2:
        leaf = leaf[0]
    assert leaf == ["\ufffd"]
    assert counted[0] < 100


def test_clean_keeps_the_depth_rule_on_a_shared_object(counted):
    deep: object = ["s"]
    for _ in range(40):
        deep = [deep]
    # the same object at depth 1 (fine) and at depth 30 (past MAX_DEPTH with its 41 levels)
    holder: object = deep
    for _ in range(30):
        holder = [holder]
    with pytest.raises(ZlbenchError, match="nested deeper than 64"):
        models_base._clean([deep, holder], Path("p.json"))


def test_a_recursive_yaml_alias_is_refused_not_followed():
    with pytest.raises(ZlbenchError, match="nested"):
        parse_yaml("a: &x [*x]\n", "shapes.yaml")


@pytest.mark.proc
def test_a_billion_laughs_accept_file_is_refused_by_the_gate(tmp_path):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    res = write_results(tmp_path / "res", [run_result("add", [crow("add", S, 1.0)])])
    f = tmp_path / "accept.yaml"
    f.write_text(bomb(levels=8, key="x") + "accept: *a8\n")
    out = tmp_path / "out"
    proc = _zl("gate", "--baseline", str(bl), "--results", str(res), "--out", str(out))
    assert proc.returncode == 0, proc.stderr  # the dirs judge
    shutil.rmtree(out)
    proc = _zl(
        "gate", "--baseline", str(bl), "--results", str(res), "--out", str(out), "--accept", str(f)
    )
    assert proc.returncode == 2
    assert "YAML alias" in _one_line(proc)
    assert not out.exists()


@pytest.mark.proc
def test_a_billion_laughs_manifest_is_refused_by_verify(tmp_path):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    m = bl / "manifest.yaml"
    m.write_text(m.read_text() + bomb(levels=8, key="zz"))
    proc = _zl("baseline", "verify", str(bl))
    assert proc.returncode == 2
    assert "YAML alias" in _one_line(proc)


# --------------------------------------------------------------------------- FIFOs


@contextmanager
def fifo(path: Path):
    """A FIFO at ``path`` with a writer waiting in a thread: a reader that opens it
    reads EOF at once (so a regressed read fails the test, never hangs it); a reader
    that refuses it unopened leaves the writer to be released here."""
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield path
    finally:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(fd)


def test_read_text_refuses_a_fifo(tmp_path):
    with fifo(tmp_path / "manifest.yaml") as f:
        with pytest.raises(ZlbenchError, match="not a regular file") as e:
            read_text(f)
    assert "\n" not in str(e.value)


def test_a_yaml_model_refuses_a_fifo(tmp_path):
    with fifo(tmp_path / "accept.yaml") as f:
        with pytest.raises(ZlbenchError, match="not a regular file"):
            load_yaml_model(f, AcceptList)


def test_a_store_pack_that_is_a_fifo_is_refused(tmp_path):
    clear_cache()
    name, _ = encode_pack({})
    with fifo(tmp_path / name) as f:
        with pytest.raises(ZlbenchError, match="unreadable: .*not a regular file"):
            read_pack(f)


def test_a_packed_tree_archive_that_is_a_fifo_is_refused(tmp_path):
    name = "0" * 64 + ".tar.xz"
    with fifo(tmp_path / name):
        with pytest.raises(ZlbenchError, match="archive unreadable: .*not a regular file"):
            _fetch(name, tmp_path, tmp_path / "cache")


def test_a_regular_file_still_reads_with_its_newlines(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"a\r\nb\rc\n")
    assert read_text(f) == f.read_text()


@pytest.fixture(scope="module")
def compact_v2(tmp_path_factory) -> Path:
    from zlbench.runner.compact import compact

    d = tmp_path_factory.mktemp("bounded") / "c2"
    compact(REPO / "baselines" / "v2", d)
    return d


@pytest.mark.proc
@pytest.mark.data
def test_verify_refuses_a_fifo_where_a_pack_should_be(compact_v2, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(compact_v2, bad)
    (pack,) = (bad / "store").glob(f"*{PACK_SUFFIX}")
    pack.unlink()
    os.mkfifo(pack)
    proc = _zl("baseline", "verify", str(bad))
    assert proc.returncode == 1
    assert f"{pack.name}: codegen store pack unreadable" in proc.stdout + proc.stderr
    assert "not a regular file" in proc.stdout + proc.stderr


@pytest.mark.proc
@pytest.mark.data
def test_verify_refuses_a_fifo_where_the_manifest_should_be(compact_v2, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(compact_v2, bad)
    (bad / "manifest.yaml").unlink()
    os.mkfifo(bad / "manifest.yaml")
    proc = _zl("baseline", "verify", str(bad))
    assert proc.returncode == 2
    assert "manifest.yaml: cannot read: not a regular file" in _one_line(proc)


@pytest.mark.proc
def test_the_gate_refuses_a_fifo_as_its_accept_file(tmp_path):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    res = write_results(tmp_path / "res", [run_result("add", [crow("add", S, 1.0)])])
    os.mkfifo(tmp_path / "accept.yaml")
    out = tmp_path / "out"
    proc = _zl(
        "gate", "--baseline", str(bl), "--results", str(res), "--out", str(out),
        "--accept", str(tmp_path / "accept.yaml"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "not a regular file" in _one_line(proc)


# --------------------------------------------------------------------------- pack header


def _pack_with_header(tmp_path: Path, count: bytes, entries: bytes = b"") -> Path:
    raw = MAGIC + b" " + count + b"\n" + entries
    data = lzma.compress(raw)
    path = tmp_path / (hashlib.sha256(data).hexdigest() + PACK_SUFFIX)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "count", [b"1" + b"0" * 30, b"-1", b"99999999999999999999999999999999999999999999", b"2"]
)
def test_a_pack_header_count_beyond_its_data_is_a_bad_header(tmp_path, count):
    clear_cache()
    sha = hashlib.sha256(b"text").hexdigest().encode()
    path = _pack_with_header(tmp_path, count, sha + b" 4\ntext")
    with pytest.raises(ZlbenchError, match="codegen store pack corrupt: bad header") as e:
        read_pack(path)
    assert "\n" not in str(e.value)


def test_a_pack_with_the_right_count_still_reads(tmp_path):
    clear_cache()
    sha = hashlib.sha256(b"text").hexdigest().encode()
    path = _pack_with_header(tmp_path, b"1", sha + b" 4\ntext")
    assert read_pack(path) == {sha.decode(): b"text"}
    name, data = encode_pack({})
    (tmp_path / name).write_bytes(data)
    assert read_pack(tmp_path / name) == {}


# --------------------------------------------------------------------------- median_ci

# median_ci before issue 49 (math.comb(n, k) / 2.0**n), over n = 1..200: the first n at
# which the interval is [x_(k), x_(n-k+1)], k = 1, 2, ... (k grows with n).
MEDIAN_CI_FIRST_N = {
    0.5: "2 5 7 10 12 14 16 18 21 23 25 27",
    0.8: "4 7 9 12 14 17 19 21 24 26 28 31",
    0.9: "5 8 11 13 16 18 21 23 26 28 30 33",
    0.95: "6 9 12 15 17 20 23 25 28 30 33 35",
    0.99: "8 12 15 18 21 24 26 29 32 34 37 39",
}
# sha256 of json.dumps([k(n) for n in 1..200]) (k 0: None) of the same function
MEDIAN_CI_DIGEST = {
    0.1: "a303c55950aa448d",
    0.5: "648001fdf91a2e31",
    0.8: "e15c7d3ea1e54e88",
    0.9: "dd41807f0ac11cda",
    0.95: "80ec791d7f32227a",
    0.99: "e17dbb3ee30b6b41",
    0.999: "5273561535077810",
    0.3141: "0a3c9a68f85ebdf1",
}


def _ks(confidence: float, top: int = 200) -> list[int]:
    ks = []
    for n in range(1, top + 1):
        ci = median_ci([float(i) for i in range(n)], confidence)
        k = 0 if ci is None else int(ci[0]) + 1
        assert ci is None or ci[1] == n - k  # symmetric order statistics
        ks.append(k)
    return ks


@pytest.mark.parametrize("confidence", sorted(MEDIAN_CI_DIGEST))
def test_median_ci_is_unchanged_for_small_n(confidence):
    ks = _ks(confidence)
    digest = hashlib.sha256(json.dumps(ks).encode()).hexdigest()[:16]
    assert digest == MEDIAN_CI_DIGEST[confidence]
    if confidence in MEDIAN_CI_FIRST_N:
        want = [int(n) for n in MEDIAN_CI_FIRST_N[confidence].split()]
        assert [ks.index(k) + 1 for k in range(1, len(want) + 1)] == want


def test_median_ci_at_the_default_confidence():
    assert median_ci([], 0.9) is None
    assert median_ci([1.0, 2.0, 3.0, 4.0], 0.9) is None  # too few for 90 %
    assert median_ci([5.0, 1.0, 4.0, 2.0, 3.0], 0.9) == (1.0, 5.0)


@pytest.mark.parametrize("n", [1024, 4200, 5000, 100_000])
def test_median_ci_never_overflows_at_a_large_n(n):
    values = [float(i) for i in range(n)]
    lo, hi = median_ci(values, 0.9)
    # about the normal approximation's n/2 -+ 1.645 sqrt(n) / 2
    half = 1.645 * n**0.5 / 2
    assert abs((n - 1) / 2 - half - lo) < 3 and abs((n - 1) / 2 + half - hi) < 3
    assert lo + hi == n - 1


def test_a_row_of_4200_pairs_has_its_statistic():
    pr = [1.0 + (i % 7) / 100 for i in range(4200)]
    base = [1.0] * 4200
    s = pair_stats(pr, base, 0.9)
    assert s.pairs == 4200 and s.change_lo is not None and s.change_lo <= s.change <= s.change_hi


@pytest.mark.data
def test_a_pairs_json_row_of_4200_pairs_is_refused_in_one_line(tmp_path, capsys):
    g = tmp_path / "g"
    shutil.copytree(shipped("examples/h200-gate-v5-no-coalesce"), g)
    for p in [g, *g.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    f = g / "ab" / "pairs.json"
    d = json.loads(f.read_text())
    row = d["rows"][0]
    row["samples"] = [dict(x) for _ in range(2100) for x in row["samples"][:4]]
    f.write_text(json.dumps(d))
    out = tmp_path / "out"
    bl, ops = REPO / "baselines" / "v5", REPO / "ops" / "gate_core.txt"
    rc = main(["report", str(g), "--baseline", str(bl), "--ops-file", str(ops), "--out", str(out)])
    assert rc == 2
    line = one_error_line(capsys)
    assert "8400 samples, more than a row's budget of pairs allows" in line
    assert not (out / "verdict.json").exists()


# --------------------------------------------------------------------------- full_records


@pytest.fixture(scope="module")
def fr():
    spec = importlib.util.spec_from_file_location(
        "full_records", REPO / "benchmarks" / "full_records.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _truncated_pack(tmp_path: Path, fr) -> Path:
    src = tmp_path / "src" / "main" / "add" / "codegen"
    (src / "blobs").mkdir(parents=True)
    (src / "index.json").write_text('{"records": []}')
    for i in range(20):
        text = hashlib.sha512(b"%d" % i).digest() * 40
        (src / "blobs" / (hashlib.sha256(text).hexdigest() + ".gz")).write_bytes(
            gzip.compress(text)
        )
    packs = tmp_path / "packs"
    packs.mkdir()
    pack = packs / "a.tar.xz"
    fr.pack(tmp_path / "src", pack)
    with tarfile.open(pack, "r:xz") as tar:
        assert len(tar.getmembers()) == 21
    data = pack.read_bytes()
    pack.write_bytes(data[: len(data) // 2])
    return pack


@pytest.mark.parametrize("cmd", ["gaps", "unpack", "unrecorded", "status"])
def test_full_records_on_a_truncated_pack_is_one_line(tmp_path, fr, capsys, cmd):
    pack = _truncated_pack(tmp_path, fr)
    dest = tmp_path / "dest"
    argv = {
        "gaps": ["gaps", str(pack.parent)],
        "unpack": ["unpack", str(pack), str(dest)],
        "unrecorded": ["unrecorded", str(tmp_path / "src"), str(pack.parent)],
        "status": ["status", str(pack)],
    }[cmd]
    assert fr.main(argv) == 2
    line = one_error_line(capsys)
    assert f"{pack}: not a readable archive (truncated or corrupt?)" in line
    assert not dest.exists()


def test_full_records_merge_checks_every_archive_before_writing(tmp_path, fr, capsys):
    good = tmp_path / "good.tgz"
    with tarfile.open(good, "w:gz") as tar:
        for i in range(20):
            info = tarfile.TarInfo(f"main/op{i}/autotune_records/r.json")
            body = hashlib.sha512(b"%d" % i).digest() * 40
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    dest = tmp_path / "dest"
    assert fr.main(["merge", str(dest), str(good), str(bad)]) == 2
    assert "bad.tgz: not a readable archive" in one_error_line(capsys)
    assert not dest.exists()  # not even the good archive's ops
