"""A gate dir records how it was gated (gated.json: op set, baseline, judging options);
``report DIR`` and ``gate --results DIR`` re-judge it that way unless told otherwise,
and say so in one line; the record is untrusted input (issue 50 item 2)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.models import GATED_JSON, GateRecord, GateVerdict, Selection, load_json_model
from zlbench.workflow.gate import GateJob, GateSeams, run_gate

S = "[1024]"
OPS_DIR = Path(__file__).resolve().parents[2] / "ops"


def slowed():  # add and mm both 25 % slower
    return [
        run_result("add", [crow("add", S, 0.8)]),
        run_result("mm", [crow("mm", S, 0.6)]),
    ]


class FakeBatch:
    def __call__(self, req):
        write_results(req.out_dir, [r for r in slowed() if f"main/{r.run_name}" in req.ops])
        return req.out_dir, 0


@pytest.fixture
def gated(tmp_path, monkeypatch):
    """A gate of ops ``add`` and ``mm`` (``--ops-file gate_ops.txt``) of a three-op baseline,
    run from ``tmp_path`` with relative paths, as CI runs it: (its dir, what it said)."""
    monkeypatch.chdir(tmp_path)
    ops = {"add": [brow("add", S, 1.0)], "mm": [brow("mm", S, 0.8)], "abs": [brow("abs", S, 1.0)]}
    write_baseline(tmp_path / "bl", ops)
    Path("gate_ops.txt").write_text("# the gate's op set\nadd\nmm\n")
    job = GateJob(
        baseline="bl",
        out=Path("g"),
        selection=Selection(ops_file="gate_ops.txt", ops_dir=OPS_DIR),
        confirm=0,
    )
    said = io.StringIO()
    assert run_gate(job, GateSeams(measure=FakeBatch(), stdout=said)) == 1
    return Path("g"), said


def verdict(path) -> GateVerdict:
    return load_json_model(Path(path) / "verdict.json", GateVerdict)


def test_a_gate_records_its_op_set_baseline_and_options(gated, tmp_path):
    rec = load_json_model(gated[0] / GATED_JSON, GateRecord)
    assert rec.baseline == "bl" and rec.ops_file == "gate_ops.txt"
    assert rec.specs == ["add", "mm"] and rec.op_keys == ["main/add", "main/mm"]
    assert len(rec.baseline_sha256) == 64 and len(rec.ops_file_sha256) == 64
    assert rec.thresholds is None and rec.allow_env_mismatch is False and rec.confirm == 0


def test_report_re_judges_as_gated_and_says_so(gated, capsys):
    gate_dir, _ = gated
    assert main(["report", str(gate_dir), "--out", "rep"]) == 1  # no --baseline, no --ops-file
    out = capsys.readouterr().out
    assert "zlbench report: re-judged as gated: gate_ops.txt (2 ops), bl" in out
    again, first = verdict("rep"), verdict(gate_dir)
    assert {r.key.op for r in again.rows} == {"add", "mm"} == {r.key.op for r in first.rows}
    assert again.counts == first.counts and again.exit_code == first.exit_code


def test_gate_results_re_judges_as_gated(gated, capsys):
    assert main(["gate", "--results", "g", "--out", "rep"]) == 1
    assert "zlbench gate: re-judged as gated: gate_ops.txt (2 ops), bl" in capsys.readouterr().out
    assert {r.key.op for r in verdict("rep").rows} == {"add", "mm"}


def test_explicit_options_win(gated, capsys):
    assert main(["report", "g", "--baseline", "bl", "--ops", "mm", "--out", "rep"]) == 1
    out = capsys.readouterr().out
    assert "--ops, --baseline as given (not as g was gated: gate_ops.txt (2 ops), bl)" in out
    assert {r.key.op for r in verdict("rep").rows} == {"mm"}
    # --baseline alone: the op set still comes from the record
    assert main(["report", "g", "--baseline", "bl", "--out", "rep2"]) == 1
    assert "re-judged as gated: gate_ops.txt (2 ops) (--baseline as given)" in (
        capsys.readouterr().out
    )


def test_a_changed_ops_file_falls_back_to_the_recorded_list(gated, capsys):
    Path("gate_ops.txt").write_text("add\n")
    assert main(["report", "g", "--out", "rep"]) == 1
    out = capsys.readouterr().out
    assert "the 2 ops recorded from gate_ops.txt (not here or changed since), bl" in out
    assert {r.key.op for r in verdict("rep").rows} == {"add", "mm"}


def test_a_dir_without_record_needs_a_baseline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rdir = write_results(tmp_path / "r", slowed())
    assert main(["report", str(rdir), "--out", "rep"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "zlbench report: error: --baseline DIR is required: r does not record how it was gated"
    )
    assert main(["gate", "--out", "o"]) == 2
    assert "--baseline DIR is required" in capsys.readouterr().err


def _tamper(gate_dir: Path, **fields) -> None:
    path = gate_dir / GATED_JSON
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"baseline": "/etc"}, "is not a path below this dir"),
        ({"baseline": "../bl"}, "is not a path below this dir"),
        ({"baseline": "g/results"}, "is not a path below this dir"),  # inside the artifact
        ({"baseline": "nowhere"}, "is not here"),
        ({"baseline_sha256": "0" * 64}, "differs here"),
    ],
)
def test_a_hostile_or_stale_baseline_is_one_line(gated, capsys, fields, why):
    _tamper(gated[0], **fields)
    assert main(["report", "g", "--out", "rep"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0] and "give --baseline on the command line" in err[0]
    assert not Path("rep").exists()


def test_recorded_thresholds_are_checked(gated, capsys):
    _tamper(gated[0], thresholds="th.yaml", thresholds_sha256="1" * 64)
    assert main(["report", "g", "--out", "rep"]) == 2
    assert "gated with --thresholds 'th.yaml', which is not here" in capsys.readouterr().err
    Path("th.yaml").write_text("defaults: {}\n")
    assert main(["report", "g", "--out", "rep"]) == 2
    assert "which differs here" in capsys.readouterr().err


@pytest.mark.parametrize(
    "fields",
    [
        None,  # not JSON
        {"baseline_sha256": "x"},
        {"extra": 1},
        {"op_keys": ["main/nope"]},  # valid, but names no op of the baseline
        {"op_keys": ["x" * 5000]},
    ],
)
def test_a_bad_record_is_one_line_exit_2(gated, capsys, fields):
    if fields is None:
        (gated[0] / GATED_JSON).write_text("{not json")
    else:
        _tamper(gated[0], **fields)
    assert main(["report", "g", "--out", "rep"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not Path("rep").exists()


def test_recorded_allow_env_mismatch_is_kept(gated, capsys):
    _tamper(gated[0], allow_env_mismatch=True)
    assert main(["report", "g", "--out", "rep"]) == 1
    assert "re-judged as gated: gate_ops.txt (2 ops), bl, --allow-env-mismatch" in (
        capsys.readouterr().out
    )


def test_merge_carries_the_shards_record_when_they_agree(gated, tmp_path):
    from zlbench.workflow.gate_record import carry_record, load_record

    rec = load_record("g")
    for name in ("s1", "s2", "s3"):
        Path(name).mkdir()
        (Path(name) / GATED_JSON).write_text((Path("g") / GATED_JSON).read_text())
    _tamper(Path("s3"), baseline="other")
    carry_record([Path("s1"), Path("s2")], Path("m1"))
    assert load_record("m1") == rec
    Path("m2").mkdir()
    carry_record([Path("s1"), Path("s3")], Path("m2"))  # two gates: no record
    assert load_record("m2") is None


def test_the_reports_line_names_every_report_with_comment_md(gated):
    (line,) = [ln for ln in gated[1].getvalue().splitlines() if ln.startswith("reports: ")]
    names = [Path(p).name for p in line.removeprefix("reports: ").split(", ")]
    assert names == ["report.md", "comment.md", "report.html", "junit.xml", "verdict.json"]
