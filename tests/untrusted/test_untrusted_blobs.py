"""Codegen blobs and IR diffs from an artifact are read in bounded streams (issue 26):
garbled deflate data is one error line, a gzip bomb stops at the index's recorded
size, and a huge diff file is read only up to the report's cut."""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
import tracemalloc
import zlib

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models.codegen import StageDigest, read_blob

MiB = 1 << 20


def blob(cg, name: str, raw: bytes, data: bytes, size: int | None = None) -> StageDigest:
    (cg / "blobs").mkdir(parents=True, exist_ok=True)
    (cg / "blobs" / name).write_bytes(raw)
    sha = hashlib.sha256(data).hexdigest()
    n = len(data) if size is None else size
    return StageDigest(sha256=sha, size=n, compressed_size=len(raw), blob=f"blobs/{name}")


def test_a_blob_with_a_gzip_header_and_garbled_deflate_data_is_one_line(tmp_path):
    data = b"ttgir text " * 1000
    good = gzip.compress(data)
    garbled = good[:10] + bytes(b ^ 0x5A for b in good[10:-8]) + good[-8:]
    with pytest.raises(zlib.error):  # what read_blob used to let through
        gzip.decompress(garbled)
    d = blob(tmp_path, "x.gz", garbled, data)
    with pytest.raises(ZlbenchError, match="corrupt") as e:
        read_blob(tmp_path, d)
    assert "\n" not in str(e.value)


def test_a_gzip_bomb_stops_at_the_recorded_size(tmp_path):
    """64 MiB of zeros in a blob whose index says 11 bytes: refused after a chunk."""
    zeros = gzip.compress(bytes(64 * MiB), compresslevel=9)
    d = blob(tmp_path, "bomb.gz", zeros, b"ttgir text ")
    tracemalloc.start()
    try:
        with pytest.raises(ZlbenchError, match="larger than its recorded 11 bytes"):
            read_blob(tmp_path, d)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB, peak


def test_a_recorded_size_past_the_limit_is_refused_before_reading(tmp_path):
    from zlbench.models.codegen import MAX_BLOB_BYTES

    d = blob(tmp_path, "big.gz", gzip.compress(b"x"), b"x", size=MAX_BLOB_BYTES + 1)
    with pytest.raises(ZlbenchError, match="more than"):
        read_blob(tmp_path, d)


def test_a_good_blob_still_reads(tmp_path):
    data = os.urandom(3 * MiB)  # more than one chunk
    assert read_blob(tmp_path, blob(tmp_path, "g.gz", gzip.compress(data), data)) == data


def _step_with_diff(tmp_path, diff: str):
    from zlbench.models import CodegenSummary
    from zlbench.models.codegen_screen import KernelNote
    from zlbench.workflow.codegen import CodegenStep

    (tmp_path / "diffs").mkdir()
    step = CodegenStep(summary=CodegenSummary(screened=True), dir=tmp_path, diff_prefix="cg/")
    note = KernelNote(kernel_id="k", name="k", status="ttgir_changed", diff_file=f"cg/diffs/{diff}")
    return step, note


def test_a_huge_diff_file_is_read_only_up_to_the_reports_cut(tmp_path):
    from zlbench.workflow.codegen_verdict import IR_DIFF_LIMIT, _diffs

    step, note = _step_with_diff(tmp_path, "k.diff")
    (tmp_path / "diffs" / "k.diff").write_text("+ a changed line\n" * (3 * MiB))  # 48 MiB
    tracemalloc.start()
    try:
        text = _diffs(step, [note, note])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text.startswith("+ a changed line") and "cut" in text
    assert len(text) < IR_DIFF_LIMIT + 200
    assert peak < 8 * MiB, peak


def test_a_fifo_as_a_diff_file_does_not_hang_the_report(tmp_path):
    from zlbench.workflow.codegen_verdict import _diffs

    step, note = _step_with_diff(tmp_path, "k.diff")
    os.mkfifo(tmp_path / "diffs" / "k.diff")
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(_diffs(step, [note])), daemon=True)
    t.start()
    t.join(10)
    assert got == [""], "reading the FIFO hung"


def test_a_fifo_or_a_huge_file_as_a_run_log_neither_hangs_nor_is_read_whole(tmp_path):
    from zlbench.gate.load import LOG_TAIL_BYTES, log_tail

    fifo = tmp_path / "run.log"
    os.mkfifo(fifo)
    got: list[list[str]] = []
    t = threading.Thread(target=lambda: got.append(log_tail(fifo)), daemon=True)
    t.start()
    t.join(10)
    assert got == [[]], "reading the FIFO hung"
    big = tmp_path / "big.log"
    with big.open("w", encoding="utf-8") as f:
        f.write("x" * (50 * MiB) + "\nthe last line\n")
    tracemalloc.start()
    try:
        tail = log_tail(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tail[-1] == "the last line" and peak < 4 * LOG_TAIL_BYTES
