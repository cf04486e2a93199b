"""The compact baseline layout (docs/baselines.md "Size"): ``zlbench baseline compact``
of the shipped baselines keeps every record, row and digest, stores each distinct TTIR
and TTGIR text once in content-addressed packs shared across rows, ops and (with
``--reuse``) versions, is verified like any baseline (a tampered pack fails), and is
screened exactly as the old layout is. No triton: the rebuild is faked from the
baseline's own records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.trees import shipped
from zlbench.codegen import screen as screen_mod
from zlbench.codegen import worker_pool
from zlbench.codegen.collect import collect
from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.models import BaselineManifest, load_yaml_model, read_blob
from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX, CodegenIndex, blob_digest
from zlbench.models.store import STORE_DIR, read_pack
from zlbench.runner.compact import KEPT_STAGES, compact

REPO = Path(__file__).resolve().parents[2]
V2, V3 = REPO / "baselines" / "v2", shipped("baselines/v3")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """v2 compacted, and v3 compacted reusing it (a second version sharing kernels)."""
    d = tmp_path_factory.mktemp("compact")
    compact(V2, d / "c2")
    compact(V3, d / "c3", reuse=d / "c2")
    return {"c2": d / "c2", "c3": d / "c3"}


def _zl(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zlbench", *argv], capture_output=True, text=True, cwd=REPO
    )


def _indexes(root: Path) -> dict[str, CodegenIndex]:
    return {
        p.parent.parent.relative_to(root).as_posix(): CodegenIndex.model_validate_json(
            p.read_text()
        )
        for p in sorted(root.glob(f"*/*/{CODEGEN_DIR}/{CODEGEN_INDEX}"))
    }


def test_same_records_rows_and_digests_no_per_op_blobs(made):
    c2 = made["c2"]
    assert not list(c2.glob("*/*/codegen/blobs")) and not list(c2.glob("*/*/ttgir"))
    for rel in ("ops_status.csv", "shapes.yaml"):
        assert (c2 / rel).read_bytes() == (V2 / rel).read_bytes()
    for p in V2.glob("*/*/result.json"):
        assert (c2 / p.relative_to(V2)).read_bytes() == p.read_bytes()
    old, new = _indexes(V2), _indexes(c2)
    assert old.keys() == new.keys()
    for key in old:
        a, b = old[key].records, new[key].records
        assert [r.model_dump(exclude={"result"}) for r in a] == [
            r.model_dump(exclude={"result"}) for r in b
        ]
        for ra, rb in zip(a, b, strict=True):
            sa = {s: d.sha256 for s, d in ra.result.stages.items()}
            assert sa == {s: d.sha256 for s, d in rb.result.stages.items()}
            for s, d in rb.result.stages.items():
                if s in KEPT_STAGES:  # the text is kept, and reads back equal
                    assert read_blob(c2 / key / CODEGEN_DIR, d) == read_blob(
                        V2 / key / CODEGEN_DIR, ra.result.stages[s]
                    )
                else:
                    assert d.blob == ""
    m = load_yaml_model(c2 / "manifest.yaml", BaselineManifest)
    assert m.derived_from == "v2" and m.summary["compact"]["layout"] == "store"


def test_each_distinct_text_is_stored_once_across_rows_and_ops(made):
    c2 = made["c2"]
    refs = [
        d.sha256
        for index in _indexes(c2).values()
        for r in index.records
        for s, d in r.result.stages.items()
        if s in KEPT_STAGES
    ]
    packs = [read_pack(p) for p in (c2 / STORE_DIR).glob("*.xz")]
    stored = [sha for p in packs for sha in p]
    assert len(stored) == len(set(stored)) == len(set(refs))
    assert len(refs) > len(set(refs))  # records of several ops share texts: stored once


def test_a_second_version_reuses_the_first_versions_packs(made):
    c2, c3 = made["c2"], made["c3"]
    (pack2,) = (c2 / STORE_DIR).glob("*.xz")
    assert (c3 / STORE_DIR / pack2.name).read_bytes() == pack2.read_bytes()  # one git object
    held = set(read_pack(pack2))
    for p in (c3 / STORE_DIR).glob("*.xz"):
        if p.name != pack2.name:
            assert not set(read_pack(p)) & held  # new packs hold only new texts
    m = load_yaml_model(c3 / "manifest.yaml", BaselineManifest)
    assert m.summary["compact"]["packs_reused"] == 1


def test_compact_and_old_layouts_verify(made):
    for root in (V2, V3, shipped("baselines/v4"), made["c2"], made["c3"]):
        proc = _zl("baseline", "verify", str(root))
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_tampered_pack_fails_verify_and_the_gate_in_one_line(made, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(made["c2"], bad)
    (pack,) = (bad / STORE_DIR).glob("*.xz")
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.write_bytes(bytes(data))
    proc = _zl("baseline", "verify", str(bad))
    assert proc.returncode == 1
    assert f"{STORE_DIR}/{pack.name}: content changed" in proc.stdout + proc.stderr
    m = load_yaml_model(bad / "manifest.yaml", BaselineManifest)
    with pytest.raises(ZlbenchError) as e:
        baselines.check_intact(bad, m)
    assert "\n" not in str(e.value) and pack.name in str(e.value)
    key = next(iter(_indexes(bad)))
    rec = _indexes(bad)[key].records[0]
    with pytest.raises(ZlbenchError, match="corrupt"):
        read_blob(bad / key / CODEGEN_DIR, rec.result.stages["ttgir"])


def test_an_index_naming_a_text_its_pack_lacks_fails_verify(made, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(made["c2"], bad)
    key, index = next(iter(_indexes(bad).items()))
    d = index.records[0].result.stages["ttir"]
    d.sha256 = blob_digest(b"another text")[0]
    path = bad / key / CODEGEN_DIR / CODEGEN_INDEX
    path.write_text(index.model_dump_json(indent=2))
    m = load_yaml_model(bad / "manifest.yaml", BaselineManifest)
    m.files = baselines.content_hashes(bad)  # even with the manifest rewritten to match
    problems = baselines.verify(bad, m).problems
    assert any("not in ../../../store/" in p for p in problems), problems


def test_the_compact_copy_screens_like_the_old_layout(made, tmp_path, monkeypatch):
    def rebuild(base, chunks, opts, work, on_chunk):
        return _rebuild_from(collect(V2), base, work, on_chunk)

    monkeypatch.setattr(worker_pool, "rebuild_all", rebuild)
    got = {}
    for name, root in (("v2", V2), ("c2", made["c2"])):
        out = tmp_path / name
        screen_mod.run_screen(screen_mod.ScreenOptions(baseline=root, out=out))
        data = json.loads((out / "codegen.json").read_text())
        got[name] = (
            {k["kernel_id"]: (k["status"], k["first_stage"]) for k in data["kernels"]},
            {p.name: p.read_text() for p in (out / "diffs").glob("*.diff")},
        )
    (cls_old, diffs_old), (cls_new, diffs_new) = got["v2"], got["c2"]
    assert cls_old == cls_new
    assert sorted(s for s, _ in cls_old.values()).count("identical") == len(cls_old) - 2
    assert diffs_old.keys() == diffs_new.keys() and len(diffs_old) == 2
    for name, text in diffs_new.items():
        kid = name.removesuffix(".diff")
        if cls_new[kid][1] == "ttgir":  # the text is kept: the same diff
            assert text == diffs_old[name]
        else:
            assert "llir: text not stored in the baseline (digest differs)" in text


def _rebuild_from(old, base, work, on_chunk):
    """Every kernel rebuilt as its v2 record (blobs from v2, the old layout, which has
    every text), except the first (by id) with another TTGIR and the second with
    another LLIR, a stage whose text a compact baseline does not keep."""
    ids = sorted(base.records)
    rebuilt, dirs = {}, {}
    cg = work / "cg"
    (cg / "blobs").mkdir(parents=True, exist_ok=True)
    for n, kid in enumerate(ids):
        rec = old.records[kid].model_copy(deep=True)
        stage = {0: "ttgir", 1: "llir"}.get(n)
        if stage:
            text = read_blob(old.blob_dirs[kid], rec.result.stages[stage]) + b"// patched\n"
            sha, gz = blob_digest(text)
            (cg / "blobs" / f"{sha}.gz").write_bytes(gz)
            rec.result.stages[stage] = rec.result.stages[stage].model_copy(
                update={"sha256": sha, "size": len(text), "blob": f"blobs/{sha}.gz"}
            )
        else:  # v2's own blobs: the same names
            for d in rec.result.stages.values():
                src = old.blob_dirs[kid] / d.blob
                (cg / d.blob).write_bytes(src.read_bytes())
        rebuilt[kid], dirs[kid] = rec, cg
    on_chunk(1, ids, rebuilt)
    return rebuilt, dirs


def test_cli_writes_a_new_version_and_refuses_an_existing_one(made, tmp_path):
    out = tmp_path / "v9"
    proc = _zl("baseline", "compact", str(V2), "--out", str(out), "--reuse", str(made["c2"]))
    assert proc.returncode == 0, proc.stderr
    assert "(1 reused)" in proc.stdout and not list(tmp_path.glob(".v9.tmp-*"))
    again = _zl("baseline", "compact", str(V2), "--out", str(out))
    assert again.returncode == 2 and again.stderr.count("\n") == 1  # one line, refused
