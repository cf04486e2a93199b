"""The gate judges only a baseline that matches its manifest (issue 16): every file it
reads is hashed, shapes.yaml included; a row's noise must be a sane number; the
gate's --out may not point into the baseline; a string schema_version is refused
with a message that does not contradict itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.zlsynth import one_error_line
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import content_hashes, sha256_file
from zlbench.gate.load import load_baseline
from zlbench.models import BaselineManifest, BaselineRow, load_json_model, load_yaml_model

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "baselines" / "v1"
EXAMPLE = ROOT / "examples" / "h200-gate-v1"  # the same ops measured on an H200


@pytest.fixture
def v1(tmp_path) -> Path:
    dst = tmp_path / "v1"
    shutil.copytree(SHIPPED, dst)
    return dst


def gate(tmp_path, baseline, *extra):
    out = tmp_path / "out"
    argv = ["gate", "--baseline", str(baseline), "--results", str(EXAMPLE), "--out", str(out)]
    return main([*argv, *extra]), out


def edit_result(root: Path, run_name: str, **row0) -> Path:
    """Set fields of the first row of a baseline op (raw JSON: inf stays inf)."""
    path = root / "main" / run_name / "result.json"
    data = json.loads(path.read_text())
    data["rows"][0].update(row0)
    path.write_text(json.dumps(data))
    return path


def rehash(root: Path) -> None:
    """What a careful forger does: record the new hashes in the manifest."""
    path = root / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    data["files"] = content_hashes(root)
    if data.get("shape_file"):
        data["shape_file_sha256"] = sha256_file(root / data["shape_file"])
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_shipped_baseline_is_judged(tmp_path, v1):
    assert gate(tmp_path, v1)[0] == 0


@pytest.mark.parametrize("noise", [10.0, 0.5])
def test_gate_refuses_a_baseline_row_edited_after_recording(tmp_path, v1, capsys, noise):
    # a noisier baseline row would let a slower op pass (issue 16)
    edit_result(v1, "softmax", noise=noise)
    rc, out = gate(tmp_path, v1)
    assert rc == 2
    line = one_error_line(capsys)
    assert "main/softmax/result.json" in line and "content changed" in line
    assert "baseline verify" in line
    assert not (out / "verdict.json").exists()


@pytest.mark.parametrize("noise", [10.0, 0.5, -0.1, float("inf"), float("nan")])
def test_gate_refuses_an_insane_noise_even_with_hashes_recorded(tmp_path, v1, capsys, noise):
    edit_result(v1, "softmax", noise=noise)
    rehash(v1)
    rc, out = gate(tmp_path, v1)
    assert rc == 2
    line = one_error_line(capsys)
    assert "main/softmax/result.json" in line and "noise" in line
    assert not (out / "verdict.json").exists()


def test_gate_refuses_a_changed_shape_file(tmp_path, v1, capsys):
    with (v1 / "shapes.yaml").open("a") as f:
        f.write("\n# edited\n")
    rc, _ = gate(tmp_path, v1)
    assert rc == 2
    line = one_error_line(capsys)
    assert "shapes.yaml" in line and "content changed" in line


def test_verify_checks_the_shape_file(v1, capsys):
    with (v1 / "shapes.yaml").open("a") as f:
        f.write("\n# edited\n")
    assert main(["baseline", "verify", str(v1)]) == 1
    assert "FAIL shapes.yaml: content changed" in capsys.readouterr().out


def test_verify_reports_a_missing_shape_file(v1, capsys):
    (v1 / "shapes.yaml").unlink()
    assert main(["baseline", "verify", str(v1)]) == 1
    assert "FAIL shapes.yaml: missing" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("no_files", "records no content hashes"),
        ("extra_record", "not listed in manifest.yaml"),
        ("deleted_record", "missing"),
        ("no_shape_sha", "shape_file_sha256"),
    ],
)
def test_gate_refuses_a_baseline_it_cannot_verify(tmp_path, v1, capsys, edit, expected):
    m = load_yaml_model(v1 / "manifest.yaml", BaselineManifest)
    records = v1 / "main" / "softmax" / "autotune_records"
    if edit == "no_files":
        m.files = {}
    elif edit == "extra_record":
        (records / "extra.json").write_text("{}")
    elif edit == "deleted_record":
        next(records.glob("*.json")).unlink()
    elif edit == "no_shape_sha":
        m.shape_file_sha256 = None
    (v1 / "manifest.yaml").write_text(yaml.safe_dump(m.model_dump(mode="json"), sort_keys=False))
    rc, _ = gate(tmp_path, v1)
    assert rc == 2
    assert expected in one_error_line(capsys)


def test_a_modified_baseline_is_refused_by_every_reader(v1):
    edit_result(v1, "abs", speedup=9.0)
    with pytest.raises(ZlbenchError, match="main/abs/result.json: content changed"):
        load_baseline(v1)


# --------------------------------------------------------------------------- noise model


@pytest.mark.parametrize("noise", [float("inf"), float("nan"), -0.01, 0.5, 10.0])
def test_baseline_row_noise_must_be_a_sane_fraction(noise):
    with pytest.raises(ValueError, match="noise"):
        BaselineRow(op="x", dtype="bfloat16", shape="[1]", speedup=1.0, noise=noise)


@pytest.mark.parametrize("noise", [0.0, 0.0139, 0.49])
def test_baseline_row_noise_in_range_is_kept(noise):
    assert BaselineRow(op="x", dtype="f", shape="[1]", speedup=1.0, noise=noise).noise == noise


def test_baseline_row_with_an_unusable_speedup_sample_is_refused():
    with pytest.raises(ValueError, match="speedups"):
        BaselineRow(op="x", dtype="f", shape="[1]", speedup=1.0, speedups=[1.0, float("nan")])


# --------------------------------------------------------------------------- --out


@pytest.mark.parametrize("sub", [".", "gate", "main/softmax"])
def test_out_inside_the_baseline_is_refused(v1, sub):
    from zlbench.gate.baselines import check_out_outside_baseline

    with pytest.raises(ZlbenchError, match="inside the baseline"):
        check_out_outside_baseline(v1 / sub, v1)


def test_out_through_a_link_into_the_baseline_is_refused(tmp_path, v1):
    from zlbench.gate.baselines import check_out_outside_baseline

    (tmp_path / "link").symlink_to(v1)
    with pytest.raises(ZlbenchError, match="inside the baseline"):
        check_out_outside_baseline(tmp_path / "link" / "out", v1)


@pytest.mark.parametrize("out", ["zlbench-gate", "v1-gate", "v1/../gate"])
def test_out_beside_the_baseline_is_allowed(tmp_path, v1, out):
    from zlbench.gate.baselines import check_out_outside_baseline

    check_out_outside_baseline(tmp_path / out, v1)  # raises nothing


# --------------------------------------------------------------------------- schema_version


@pytest.mark.parametrize("value", ['"1"', "true", "1.0"])
def test_a_schema_version_that_is_not_an_integer_says_so(tmp_path, value):
    path = tmp_path / "manifest.yaml"
    path.write_text(f"schema_version: {value}\nname: v\ncreated: now\n")
    with pytest.raises(ZlbenchError) as e:
        load_yaml_model(path, BaselineManifest)
    msg = str(e.value)
    assert "schema_version" in msg and "not an integer" in msg and "not supported" not in msg


def test_an_unknown_schema_version_is_not_supported(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 2}))
    with pytest.raises(ZlbenchError, match="schema_version 2 is not supported .*version 1"):
        load_json_model(path, BaselineManifest)
