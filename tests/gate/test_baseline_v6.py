"""v6, the whole inventory's baseline (issue 29; docs/baselines.md "v6"): it verifies,
and it accounts for every op of the H200 record pass it was assembled from
(examples/h200-full-screen/full-v6.tgz, the pass as v6's assembly read it): each PASS
op with rows is in it, every other op is excluded with the pass's reason; and the pass
as it stands now (full.tgz, retried after v6) differs from it only in ops v6 left out."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.models import BaselineManifest, load_codegen_index, load_yaml_model
from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss

ROOT = Path(__file__).resolve().parents[2]
V6 = ROOT / "baselines" / "v6"
PASS_DIR = ROOT / "examples" / "h200-full-screen"


@pytest.fixture(scope="module")
def manifest() -> BaselineManifest:
    return load_yaml_model(V6 / "manifest.yaml", BaselineManifest)


@pytest.fixture(scope="module")
def pass_status() -> dict[str, dict]:
    """run key -> ops_status.csv row of the record pass v6 was assembled from (the copy
    inside full-v6.tgz, the one the assembly read)."""
    return _statuses(PASS_DIR / "full-v6.tgz")


def _statuses(tgz: Path) -> dict[str, dict]:
    with tarfile.open(tgz) as tar:
        member = tar.extractfile("ops_status.csv")
        assert member is not None
        text = member.read().decode()
    return {f"{r['repo']}/{r['run_name']}": r for r in csv.DictReader(io.StringIO(text))}


def test_the_pass_after_v6_changed_only_ops_v6_left_out(manifest, pass_status):
    """full.tgz (the pass resumed after v6) holds the same ops, and every op whose row
    changed is one v6 left out: a TIMEOUT retried with a longer limit, or a dismissed
    op (SKIP) that the dismiss list re-checked on the H200 dropped (run now) or re-dated
    (its note now the list's). So v6 still accounts for the pass it was made from."""
    now = _statuses(PASS_DIR / "full.tgz")
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
