"""One --ops grammar for every command (zlbench.protocol.ops): a SPEC means the same
op to `batch` (resolved in the inventory) and to `gate` / `report` (matched in the
baseline)."""

from __future__ import annotations

import pytest

from tests.support.batch_fakes import make_inventory
from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline
from zlbench.gate.plan import baseline_scope
from zlbench.models import GateVerdict, load_json_model
from zlbench.protocol.layout import op_key, split_op_key
from zlbench.protocol.ops import (
    parse_spec,
    run_name_for,
    selector_for,
    spec_matches,
)
from zlbench.runner.catalog.select import select_ops

S = "[1024]"
OPS = ["abs", "add", "mm@test_mm.py"]
# each SPEC form -> the op keys it names (repo main; "add" is in vllm too)
SPECS = {
    "abs": {"main/abs"},
    "main:abs": {"main/abs"},
    "main/abs": {"main/abs"},
    "mm@test_mm.py": {"main/mm__at__test_mm.py"},
    "main:mm@test_mm.py": {"main/mm__at__test_mm.py"},
    "main/mm__at__test_mm.py": {"main/mm__at__test_mm.py"},
    "vllm:add": {"vllm/add"},
}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("abs", (None, "abs")),
        (" vllm:op@f.py ", ("vllm", "op@f.py")),
        ("main/mm__at__f.py", ("main", "mm@f.py")),
        ("main:mm", ("main", "mm")),
    ],
)
def test_parse_spec_reads_every_form(spec, want):
    assert parse_spec(spec) == want


@pytest.mark.parametrize(("spec", "text"), [("nope:abs", "unknown repo"), ("main:", "no op")])
def test_a_bad_spec_is_one_line(spec, text):
    with pytest.raises(ZlbenchError, match=text):
        parse_spec(spec)


def test_names_round_trip():
    assert selector_for(run_name_for("mm@test_mm.py")) == "mm@test_mm.py"
    assert split_op_key(op_key("main", "mm__at__x.py")) == ("main", "mm__at__x.py")
    assert spec_matches("mm__at__test_mm.py", "main/mm__at__test_mm.py")  # a run name
    assert not spec_matches("vllm:abs", "main/abs")


@pytest.fixture
def world(tmp_path):
    make_inventory(tmp_path / "ops", "main", OPS)
    make_inventory(tmp_path / "ops", "vllm", ["add"])
    base = {run_name_for(o): [brow(o.split("@")[0], S, 1.0)] for o in OPS}
    bl = write_baseline(tmp_path / "bl", base)
    return tmp_path, bl


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_batch_and_gate_read_a_spec_as_the_same_ops(world, spec):
    tmp, bl = world
    batch = set(select_ops(tmp / "ops", specs=[spec], repos=["main", "vllm"]).keys())
    assert batch == SPECS[spec]
    baseline = load_baseline(bl)
    in_baseline = {k for k in SPECS[spec] if k in baseline.ops}  # vllm/add is not
    if in_baseline:
        assert baseline_scope(baseline, [spec])[0] == in_baseline
    else:
        with pytest.raises(ZlbenchError, match="names no op of baseline"):
            baseline_scope(baseline, [spec])


def test_gate_ops_main_abs_judges_only_abs(world, capsys):
    tmp, bl = world
    results = [run_result(run_name_for(o), [crow(o.split("@")[0], S, 1.0)]) for o in OPS]
    rdir = write_results(tmp / "r", results)
    out = tmp / "out"
    argv = ["gate", "--baseline", str(bl), "--results", str(rdir), "--out", str(out)]
    assert main([*argv, "--ops", "main:abs", "main:mm@test_mm.py"]) == 0
    v = load_json_model(out / "verdict.json", GateVerdict)
    assert sorted(o.run_name for o in v.ops) == ["abs", "mm__at__test_mm.py"]
    assert "not in the baseline" not in capsys.readouterr().err
