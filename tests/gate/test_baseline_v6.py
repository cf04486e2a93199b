"""v6, the whole inventory's baseline (issue 29; docs/baselines.md "v6"): it verifies,
and it accounts for every op of the H200 record pass it was assembled from
(examples/h200-full-screen): each PASS op with rows is in it, every other op is
excluded with the pass's reason."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import BaselineManifest, load_codegen_index, load_yaml_model

ROOT = Path(__file__).resolve().parents[2]
V6 = ROOT / "baselines" / "v6"
PASS_DIR = ROOT / "examples" / "h200-full-screen"


@pytest.fixture(scope="module")
def manifest() -> BaselineManifest:
    return load_yaml_model(V6 / "manifest.yaml", BaselineManifest)


@pytest.fixture(scope="module")
def pass_status() -> dict[str, dict]:
    """run key -> ops_status.csv row of the record pass v6 was assembled from (the copy
    inside full.tgz, the one the assembly read)."""
    with tarfile.open(PASS_DIR / "full.tgz") as tar:
        member = tar.extractfile("ops_status.csv")
        assert member is not None
        text = member.read().decode()
    return {f"{r['repo']}/{r['run_name']}": r for r in csv.DictReader(io.StringIO(text))}


def test_shipped_v6_verifies(capsys):
    assert main(["baseline", "verify", str(V6)]) == 0
    assert "OK" in capsys.readouterr().out


def test_v6_accounts_for_every_op_of_the_record_pass(manifest, pass_status):
    excluded_why = manifest.summary["excluded"]
    held, excluded = set(manifest.ops), set(excluded_why)
    assert not held & excluded
    assert held | excluded == set(pass_status), "an op of the pass is neither held nor excluded"
    assert all(pass_status[k]["status"] == "PASS" for k in held)
    passed_with_rows = {
        k for k, r in pass_status.items() if r["status"] == "PASS" and int(r["rows"] or 0) > 0
    }
    # a PASS op is left out only when the recorder kept no row or no kernel for it
    for key in passed_with_rows - held:
        why = excluded_why[key]
        assert "no row" in why or "codegen" in why, (key, why)
    for key in excluded:
        status = pass_status[key]["status"]
        if status in ("TIMEOUT", "FAIL"):
            why = excluded_why[key]
            assert status in why or "dismissed" in why, key
    assert manifest.summary["rows"] == sum(int(pass_status[k]["rows"]) for k in held)


def test_v6_every_op_has_codegen_records_and_no_dtype_is_forced(manifest):
    assert manifest.dtypes == [] and manifest.gpu_model == "NVIDIA H200"
    assert manifest.compiler_version == "3.6.0"
    missing = [k for k in manifest.ops if load_codegen_index(V6 / k) is None]
    assert missing == []
