"""The whole inventory's baselines (issue 29; docs/baselines.md "v7", "v6"): each
verifies and accounts for every op of the H200 record pass it was assembled from: v6
for examples/h200-full-screen/full-v6.tgz (the pass as v6's assembly read it), v7 for
full.tgz (the pass as it stands, resumed since). Each PASS op with rows is in it, every
other op is excluded with the pass's reason. The pass changed since v6 only in ops v6
left out, and v7 holds every op of v6 and shares v6's store packs byte for byte."""

from __future__ import annotations

import csv
import functools
import io
import tarfile
from pathlib import Path

import pytest

from tests.support.trees import shipped
from zlbench.cli import main
from zlbench.models import CODEGEN_DIR, CODEGEN_INDEX, BaselineManifest, load_yaml_model
from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss

ROOT = Path(__file__).resolve().parents[2]
PASS_DIR = ROOT / "examples" / "h200-full-screen"
# version -> the copy of the record pass its assembly read
SOURCE = {"v6": "full-v6.tgz", "v7": "full.tgz"}


@functools.cache
def _manifest(version: str) -> BaselineManifest:
    return load_yaml_model(shipped(f"baselines/{version}") / "manifest.yaml", BaselineManifest)


@functools.cache
def _statuses(tgz: str) -> dict[str, dict]:
    """run key -> ops_status.csv row of ``tgz`` (the copy inside it, the one the
    assembly read)."""
    with tarfile.open(PASS_DIR / tgz) as tar:
        member = tar.extractfile("ops_status.csv")
        assert member is not None
        text = member.read().decode()
    return {f"{r['repo']}/{r['run_name']}": r for r in csv.DictReader(io.StringIO(text))}


def test_the_pass_after_v6_changed_only_ops_v6_left_out():
    """full.tgz (the pass resumed after v6) holds the same ops, and every op whose row
    changed is one v6 left out: a TIMEOUT retried with a longer limit, or a dismissed
    op (SKIP) that the dismiss list re-checked on the H200 dropped (run now) or re-dated
    (its note now the list's). So v6 still accounts for the pass it was made from."""
    manifest, pass_status, now = _manifest("v6"), _statuses("full-v6.tgz"), _statuses("full.tgz")
    assert set(now) == set(pass_status)
    changed = {k for k in now if now[k] != pass_status[k]}
    assert changed, "full.tgz is v6's pass: the retried state is missing"
    assert not changed & set(manifest.ops)
    dismissed = load_dismiss(ROOT / "ops" / "dismiss.txt")
    for key in changed:
        before, after = pass_status[key]["status"], now[key]["status"]
        listed = find_dismissal(dismissed, now[key]["repo"], now[key]["op"])
        assert before in ("TIMEOUT", "SKIP"), key
        if before == "TIMEOUT":
            assert after in ("PASS", "TIMEOUT"), key
        elif after == "SKIP":  # still dismissed: the note is today's entry
            assert listed is not None and now[key]["note"].startswith(f"dismissed {listed.when}")
        else:  # no longer dismissed: run, and final
            assert listed is None and after in ("PASS", "FAIL", "TIMEOUT", "CRASH"), key


@pytest.mark.parametrize("version", sorted(SOURCE))
def test_shipped_version_verifies(version, capsys):
    assert main(["baseline", "verify", str(ROOT / "baselines" / version)]) == 0
    assert "OK" in capsys.readouterr().out


@pytest.mark.parametrize("version", sorted(SOURCE))
def test_a_version_accounts_for_every_op_of_its_record_pass(version):
    manifest, pass_status = _manifest(version), _statuses(SOURCE[version])
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


@pytest.mark.parametrize("version", sorted(SOURCE))
def test_every_op_has_codegen_records_and_no_dtype_is_forced(version):
    manifest = _manifest(version)
    assert manifest.name == version
    assert manifest.dtypes == [] and manifest.gpu_model == "NVIDIA H200"
    assert manifest.compiler_version == "3.6.0"
    root = shipped(f"baselines/{version}")  # once: it reads the lock
    # each index is there; that each is valid and names texts its packs hold is verify's
    missing = [k for k in manifest.ops if not (root / k / CODEGEN_DIR / CODEGEN_INDEX).is_file()]
    assert missing == []


def _files(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()}


def test_v7_holds_every_op_of_v6_the_same_and_shares_its_packs_byte_for_byte():
    """v7 is the same pass resumed, compacted with ``--reuse baselines/v6``: each op of
    v6 is in v7 with the same files (git stores them once) and so is each of v6's packs."""
    v6, v7 = shipped("baselines/v6"), shipped("baselines/v7")
    ops6 = _manifest("v6").ops
    assert set(ops6) < set(_manifest("v7").ops)
    changed = [k for k in ops6 if _files(v6 / k) != _files(v7 / k)]
    assert changed == []
    packs6, packs7 = _files(v6 / "store"), _files(v7 / "store")
    assert packs6 and {k: packs7.get(k) for k in packs6} == packs6
