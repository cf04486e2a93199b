"""An op that fails under the base compiler too (an interleaved A/B gate dir re-judged
by ``zlbench gate --results``): its unmeasured rows are INCONCLUSIVE, not the PR's
failure; a row the base measured keeps the PR's failure (``gate.decide.failed_on_base``)."""

from __future__ import annotations

from tests.support.interleaved import S, gate_dir
from tests.support.zlsynth import crow, gate, run_result, write_results
from zlbench.models import GateVerdict, PairsFile, RunStatus, dump_json_model, load_json_model
from zlbench.runner.ab.rounds import AB_DIR

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.00 GiB"


def _fail(root, op: str, rows=()) -> None:
    """Op ``op`` of the batch dir ``root`` rewritten as a FAIL with ``rows`` measured,
    and its pairs dropped from the gate dir's A/B (a failed side pairs nothing)."""
    write_results(root, [run_result(op, list(rows), status=RunStatus.FAIL, error=OOM)])
    gate_root = next(d for d in [root, *root.parents] if (d / AB_DIR / "pairs.json").is_file())
    pairs = load_json_model(gate_root / AB_DIR / "pairs.json", PairsFile)
    kept = [r for r in pairs.rows if r.key.run_name != op]
    dump_json_model(gate_root / AB_DIR / "pairs.json", PairsFile(rows=kept))


def _verdict(out) -> GateVerdict:
    return GateVerdict.model_validate_json((out / "verdict.json").read_text())


def test_an_op_failing_under_both_compilers_is_inconclusive_and_the_gate_passes(tmp_path):
    bl, g = gate_dir(tmp_path, {"x": [(100.0, 100.0)] * 5, "moe": [(100.0, 100.0)] * 5})
    _fail(g / "results", "moe")
    _fail(g / AB_DIR / "1" / "base", "moe")
    rc, out = gate(tmp_path, bl, g)
    v = _verdict(out)
    assert rc == 0 and v.verdict == "PASS", v.summary
    rows = {r.key.op: r for r in v.rows}
    assert rows["moe"].verdict.value == "INCONCLUSIVE"
    assert rows["moe"].reason.startswith(
        "not measured under the base compiler either: op FAIL: " + OOM
    )
    assert "; the PR's: not measured: op FAIL" in rows["moe"].reason
    ops = {o.run_name: o for o in v.ops}
    assert ops["moe"].verdict.value == "INCONCLUSIVE" and ops["x"].verdict.value == "PASS"
    for name in ("report.md", "comment.md"):  # its own block, kept in the PR comment
        text = (out / name).read_text()
        assert "### Not measured under either compiler" in text, name
        (line,) = [ln for ln in text.splitlines() if ln.startswith("| `moe bfloat16 [1024]`")]
        assert "| not measured under the base compiler either: op FAIL" in line, name


def test_the_prs_failure_stands_where_the_base_measured_the_op(tmp_path):
    """The base side PASSed moe: FAILED, the gate FAIL; the base side failed but
    measured the row: FAILED too."""
    ops = {"x": [(100.0, 100.0)] * 5, "moe": [(100.0, 100.0)] * 5}
    bl, g = gate_dir(tmp_path / "1", ops)
    _fail(g / "results", "moe")
    rc, out = gate(tmp_path / "1", bl, g)
    assert rc == 1 and {r.key.op: r.verdict.value for r in _verdict(out).rows}["moe"] == "FAILED"
    bl, g = gate_dir(tmp_path / "2", ops)
    _fail(g / "results", "moe")
    _fail(g / AB_DIR / "1" / "base", "moe", [crow("moe", S, 1.0, lat=0.1)])
    rc, out = gate(tmp_path / "2", bl, g)
    assert rc == 1 and {r.key.op: r.verdict.value for r in _verdict(out).rows}["moe"] == "FAILED"
