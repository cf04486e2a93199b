"""The recorder's per-op write (zlbench.plugins.codegen.Recorder.write): its blobs and
index land, and a slow one says in the op's run.log where its time went (disassembly,
building the index, blobs, the index file): `cudnn_attention_forward` timed all 60 of its rows on
the H200 and then spent the rest of its 450 s in this write (2026-12-03)."""

from __future__ import annotations

import json

from tests.support.cgsynth import COMPILER, record, request, stage_texts
from zlbench.models import KernelUse
from zlbench.models.codegen import CODEGEN_BLOBS, CODEGEN_INDEX
from zlbench.plugins import codegen as recorder_plugin
from zlbench.plugins.compiler import capture


def _recorder(monkeypatch) -> recorder_plugin.Recorder:
    monkeypatch.setattr(capture, "compiler_identity", lambda: COMPILER)
    monkeypatch.setattr(recorder_plugin.Recorder, "disassemble_pending", lambda self: None)
    r = recorder_plugin.Recorder(store=capture.BlobStore())
    for name in ("add", "mul"):
        texts = stage_texts(name)
        rec = record(request(f"{name}_kernel"), texts)
        for data in texts.values():
            r.store.add(data.decode())
        r.by_id[rec.id] = rec
        use = KernelUse(run_name="addmv", op="addmv", dtype="float16", shape="[64]")
        r.uses.setdefault("addmv", {})[rec.id] = [use, use.model_copy(update={"timed": True})]
    return r


def _lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().out.splitlines() if ln]


def test_a_slow_write_says_what_it_wrote_and_where_the_time_went(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(recorder_plugin, "WRITE_NOTE_S", 0.0)
    r = _recorder(monkeypatch)
    r.pending = [object()] * 3  # kernels still to disassemble when the op ended
    r.write("addmv", tmp_path)
    index = json.loads((tmp_path / CODEGEN_INDEX).read_text())
    blobs = sorted((tmp_path / CODEGEN_BLOBS).iterdir())
    assert len(index["records"]) == 2 and len(blobs) == 2 * len(stage_texts("add"))
    (line,) = _lines(capsys)
    fields = dict(f.split("=", 1) for f in line.split()[1:])
    assert line.startswith("ZLBENCH_CODEGEN_WRITE ")
    assert fields["run_name"] == "addmv"
    assert (fields["records"], fields["uses"], fields["sass"]) == ("2", "4", "3")
    assert int(fields["blobs"]) == len(blobs)
    size = sum(p.stat().st_size for p in blobs) / 1e6
    assert float(fields["blob_mb"]) == round(size, 1)
    assert {"sass_s", "index_s", "blobs_s", "index_write_s"} <= fields.keys()
    # written again: the blobs are there already, none is written twice
    r.write("addmv", tmp_path)
    (line,) = _lines(capsys)
    assert " blobs=0 " in line


def test_a_quick_write_says_nothing(monkeypatch, tmp_path, capsys):
    r = _recorder(monkeypatch)
    r.write("addmv", tmp_path)
    assert (tmp_path / CODEGEN_INDEX).exists()
    assert _lines(capsys) == []
