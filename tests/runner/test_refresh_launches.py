"""The kernel-replay capture (``codegen/launches.json``, issue 51) travels with a
baseline: a refresh copies the kept pass's capture when it names only kernels of the
kept index, the manifest hashes it, ``baseline verify`` checks it, ``baseline compact``
and ``zlbench pack`` keep it. Synthetic batches (no GPU, no compile)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tests.runner.test_refresh_codegen import RECORDED, _write_pass
from tests.support.batch_fakes import refresh_with_fake_batches
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import content_hashes, verify
from zlbench.gate.load import load_baseline
from zlbench.models import (
    BaselineManifest,
    load_codegen_index,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture, LaunchSpec, RowLaunches
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.compact import compact


def _capture(kernel_id: str) -> LaunchCapture:
    spec = LaunchSpec(kernel_id=kernel_id, kernel="k", grid=[4, 1, 1], count=2)
    row = RowLaunches(run_name="x", op="x", dtype="float32", shape="[8]", launches=[spec])
    return LaunchCapture(rows=[row])


def _fake_batch(cfg: BatchConfig) -> BatchOutcome:
    """The codegen test's passes, each recorded run with a capture naming its kernel;
    mm's (kept from its record pass) names a kernel that pass's index does not hold."""
    tag = "record" if cfg.replay_root is None else "replay"
    outcome = _write_pass(Path(cfg.out_dir), tag)
    for op, passes in RECORDED.items():
        run_dir = Path(cfg.out_dir) / "main" / op
        if tag in passes:
            (rec,) = load_codegen_index(run_dir).records
            kernel_id = rec.id if op == "add" else "feedfacefeedface"
            text = _capture(kernel_id).model_dump_json()
            (run_dir / "codegen" / LAUNCHES_JSON).write_text(text)
    return outcome


@pytest.fixture
def refreshed(tmp_path) -> tuple[Path, str]:
    progress = io.StringIO()
    base = refresh_with_fake_batches(tmp_path, _fake_batch, progress=progress)
    return base, progress.getvalue()


def _manifest(base: Path) -> BaselineManifest:
    return load_yaml_model(base / "manifest.yaml", BaselineManifest)


def test_refresh_keeps_a_sound_capture_under_the_manifest_hashes(refreshed):
    base, _ = refreshed
    path = base / "main" / "add" / "codegen" / LAUNCHES_JSON
    (rec,) = load_codegen_index(base / "main" / "add").records
    capture = load_json_model(path, LaunchCapture)
    assert capture.rows[0].launches[0].kernel_id == rec.id
    assert "main/add/codegen/launches.json" in _manifest(base).files
    rep = verify(base, _manifest(base))
    assert rep.ok, rep.problems


def test_refresh_leaves_out_a_capture_naming_a_kernel_the_index_lacks(refreshed):
    base, out = refreshed
    assert not (base / "main" / "mm" / "codegen" / LAUNCHES_JSON).exists()
    assert (base / "main" / "mm" / "codegen" / "index.json").is_file()
    assert "refresh: main/mm: launch capture left out:" in out
    assert "names kernel feedfacefeedface" in out


def test_a_touched_capture_refuses_the_baseline(refreshed, capsys):
    base, _ = refreshed
    path = base / "main" / "add" / "codegen" / LAUNCHES_JSON
    path.write_text(_capture("0" * 16).model_dump_json())
    assert main(["baseline", "verify", str(base)]) == 1
    assert "FAIL main/add/codegen/launches.json" in capsys.readouterr().out
    with pytest.raises(ZlbenchError, match="does not match its manifest: main/add/codegen/"):
        load_baseline(base)


@pytest.mark.parametrize("bad", ["unknown kernel", "unknown replay_timed", "not json"])
def test_verify_names_an_unsound_capture_even_when_hashes_were_rebuilt(refreshed, bad):
    base, _ = refreshed
    path = base / "main" / "add" / "codegen" / LAUNCHES_JSON
    if bad == "not json":
        path.write_text("{")
    elif bad == "unknown kernel":
        path.write_text(_capture("0" * 16).model_dump_json())
    else:  # a known launch, but a row's replay_timed names a kernel the index lacks
        cap = LaunchCapture.model_validate_json(path.read_text())
        row = cap.rows[0].model_copy(update={"replay_timed": ["0" * 16]})
        path.write_text(cap.model_copy(update={"rows": [row]}).model_dump_json())
    rep = verify(base, _manifest(base).model_copy(update={"files": content_hashes(base)}))
    assert len(rep.problems) == 1 and "main/add/codegen/launches.json" in rep.problems[0]


def test_compact_and_pack_keep_the_capture(refreshed, tmp_path, monkeypatch):
    from zlbench.models.packed import lock_path, pack_tree, resolve_tree

    base, _ = refreshed
    want = (base / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes()
    small = tmp_path / "baselines" / "v10"
    compact(base, small)
    assert (small / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes() == want
    assert "main/add/codegen/launches.json" in _manifest(small).files
    assert verify(small, _manifest(small)).ok
    lock, _, _ = pack_tree(small, tmp_path / "archive")
    lock_path(small).write_text(lock.render())
    shutil.rmtree(small)
    back = resolve_tree(small, cache=tmp_path / "cache", source=str(tmp_path / "archive"))
    assert (back / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes() == want
