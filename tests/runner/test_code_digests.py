"""zlbench baseline code-digests: a new version of a shipped baseline (v5) whose records
take the code digest of a rebuild that reproduces them, and only those; shard dirs of
another baseline, or not from a finished rebuild, refused in one line; the old version
untouched (docs/baselines.md "Code digests")."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import verify
from zlbench.models import (
    BaselineManifest,
    CodegenIndex,
    dump_json_model,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.codegen_screen import RebuiltShard
from zlbench.runner.code_digests import derive, reproduces

V5 = Path(__file__).resolve().parents[2] / "baselines" / "v5"
CODE = "c0de" * 16


def _records(op: str) -> CodegenIndex:
    return load_json_model(V5 / "main" / op / "codegen" / "index.json", CodegenIndex)


def _shard(tmp: Path, records, sha: str | None = None) -> Path:
    d = tmp / "rebuilt"
    d.mkdir()
    sha = sha or hashlib.sha256((V5 / "manifest.yaml").read_bytes()).hexdigest()
    stamp = RebuiltShard(baseline_sha256=sha, compiler="triton 3.6.0", shard=(1, 1),
                         ids=[r.id for r in records])  # fmt: skip
    dump_json_model(d / "rebuilt.json", stamp)
    dump_json_model(d / "index.json", CodegenIndex(records=records))
    return d


def _rebuilt_of(op: str):
    """abs's two records as a rebuild gives them: the first the same (with a code
    digest), the second with another SASS."""
    same, other = (r.model_copy(deep=True) for r in _records(op).records)
    same.result.cubin_code_sha256 = CODE
    other.result.cubin_code_sha256 = "d" * 64
    other.result.stages["sass"] = other.result.stages["sass"].model_copy(
        update={"sha256": "e" * 64}
    )
    return [same, other]


def test_records_the_rebuild_reproduces_get_its_code_digest(tmp_path):
    before = {p: p.read_bytes() for p in V5.rglob("index.json")}
    out = tmp_path / "baselines" / "v9"
    manifest, done = derive(V5, [_shard(tmp_path, _rebuilt_of("abs"))], out)
    # a kernel several ops launched is a record in each of them (one id)
    ids = [r.id for p in before for r in load_json_model(p, CodegenIndex).records]
    same_id, other_id = (r.id for r in _records("abs").records)
    assert (done.filled, done.differ, done.had) == (ids.count(same_id), ids.count(other_id), 0)
    assert done.not_rebuilt == len(ids) - done.filled - done.differ
    first, second = load_json_model(out / "main" / "abs" / "codegen" / "index.json",
                                    CodegenIndex).records  # fmt: skip
    assert first.result.cubin_code_sha256 == CODE and second.result.cubin_code_sha256 is None
    # everything else of the record as it was
    assert first.model_copy(update={"result": first.result.model_copy(
        update={"cubin_code_sha256": None})}) == _records("abs").records[0]  # fmt: skip
    assert manifest.derived_from == "v5"
    assert manifest.summary["code_digests"]["filled"] == done.filled
    assert verify(out, load_yaml_model(out / "manifest.yaml", BaselineManifest)).ok
    assert {p: p.read_bytes() for p in V5.rglob("index.json")} == before  # v5 untouched


def test_a_record_that_has_a_code_digest_keeps_it(tmp_path):
    out1 = tmp_path / "baselines" / "v9"
    derive(V5, [_shard(tmp_path, _rebuilt_of("abs"))], out1)
    again = _rebuilt_of("abs")
    again[0].result.cubin_code_sha256 = "f" * 64
    (tmp_path / "r2").mkdir()
    sha = hashlib.sha256((out1 / "manifest.yaml").read_bytes()).hexdigest()
    d = _shard(tmp_path / "r2", again, sha=sha)
    _, done = derive(out1, [d], tmp_path / "baselines" / "v10")
    assert (done.had, done.filled) == (1, 0)
    (rec, _) = load_json_model(tmp_path / "baselines" / "v10" / "main" / "abs" / "codegen"
                               / "index.json", CodegenIndex).records  # fmt: skip
    assert rec.result.cubin_code_sha256 == CODE


@pytest.mark.parametrize(
    ("field", "value"),
    [("n_regs", 255), ("n_spills", 4), ("sass_instructions", 1), ("cubin_code_sha256", None)],
)
def test_a_rebuild_that_differs_in_a_figure_does_not_reproduce(field, value):
    base = _records("abs").records[0].result
    cur = base.model_copy(update={"cubin_code_sha256": CODE})
    assert reproduces(base, cur)
    assert not reproduces(base, cur.model_copy(update={field: value}))


def test_another_compiler_version_does_not_reproduce():
    base = _records("abs").records[0].result
    cur = base.model_copy(deep=True, update={"cubin_code_sha256": CODE})
    cur.compiler.version = "3.7.1"
    assert not reproduces(base, cur)


def test_a_shard_of_another_baseline_is_refused_and_nothing_is_written(tmp_path):
    d = _shard(tmp_path, _rebuilt_of("abs"), sha="a" * 64)
    out = tmp_path / "baselines" / "v9"
    with pytest.raises(ZlbenchError, match="rebuilt from another baseline"):
        derive(V5, [d], out)
    assert not out.exists() and not list(out.parent.glob(".v9*"))


def test_the_cli_refuses_a_dir_that_is_not_a_finished_rebuild(tmp_path, capsys):
    (tmp_path / "half").mkdir()
    out = tmp_path / "baselines" / "v9"
    rc = main(["baseline", "code-digests", str(V5), "--out", str(out),
               "--rebuilt", str(tmp_path / "half")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "no rebuilt.json: not the --out of a finished" in err and not out.exists()


def test_the_cli_says_what_it_did(tmp_path, capsys):
    d = _shard(tmp_path, _rebuilt_of("abs"))
    out = tmp_path / "baselines" / "v9"
    assert main(["baseline", "code-digests", str(V5), "--out", str(out), "--rebuilt", str(d)]) == 0
    ids = [r.id for p in V5.rglob("index.json") for r in load_json_model(p, CodegenIndex).records]
    same_id, other_id = (r.id for r in _records("abs").records)
    filled, differ = ids.count(same_id), ids.count(other_id)
    assert capsys.readouterr().out == (
        f"{out}: v9 from v5: {filled} record(s) given a code digest, 0 had one, {differ} not "
        f"reproduced by the rebuild, {len(ids) - filled - differ} not rebuilt\n"
    )
