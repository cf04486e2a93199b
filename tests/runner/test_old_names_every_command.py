"""Old scripts' op names in every command's op selection (issue 30): ``--ops`` /
``--ops-file`` of gate and report (matched against the baseline), like batch, baseline
refresh and ab (the catalog's selection, tests/runner/test_old_names.py) and
``zlbench run --op``, resolve an old name to its op with one warning line
(``old name X: using Y (ops/old_names.csv)``); a current op id always wins and an
unknown name is still the error it was. The rule is one function of the catalog
(:func:`zlbench.runner.catalog.select.current_specs`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    gate,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.errors import ZlbenchError
from zlbench.runner.catalog.select import current_specs

OPS = Path(__file__).resolve().parents[2] / "ops"  # the shipped ops dir: old_names.csv
S = "[1024]"
NAMES = ["abs_", "polygamma_", "true_divide"]


@pytest.fixture
def world(tmp_path):
    bl = write_baseline(tmp_path / "bl", {o: [brow(o, S, 1.0)] for o in NAMES})
    rdir = write_results(tmp_path / "r", [run_result(o, [crow(o, S, 1.0)]) for o in NAMES])
    return tmp_path, bl, rdir


def judged(out: Path) -> list[str]:
    verdict = json.loads((out / "verdict.json").read_text())
    return sorted({f"{r['key']['repo']}/{r['key']['run_name']}" for r in verdict["rows"]})


def test_the_gate_s_ops_take_an_old_name_with_one_warning(world, capsys):
    tmp, bl, rdir = world
    rc, out = gate(tmp, bl, rdir, "--ops", "abs_inplace", "main:polygamma_inplace")
    assert rc == 0
    err = capsys.readouterr().err
    assert "warning: old name abs_inplace: using abs_ (ops/old_names.csv)" in err
    assert "warning: old name polygamma_inplace: using polygamma_ (ops/old_names.csv)" in err
    assert judged(out) == ["main/abs_", "main/polygamma_"]


def test_the_gate_s_ops_file_takes_an_old_name(world, capsys):
    tmp, bl, rdir = world
    f = tmp / "old.txt"
    f.write_text("# an old ops list\nabs_inplace\n")
    rc, out = gate(tmp, bl, rdir, "--ops-file", str(f))
    assert rc == 0 and judged(out) == ["main/abs_"]
    assert "old name abs_inplace: using abs_" in capsys.readouterr().err


def test_a_current_op_id_wins_and_an_unknown_name_is_still_an_error(world, capsys):
    tmp, bl, rdir = world
    rc, out = gate(tmp, bl, rdir, "--ops", "true_divide")  # also div_tensor's old name
    assert rc == 0 and judged(out) == ["main/true_divide"]
    assert "using" not in capsys.readouterr().err
    rc, _ = gate(tmp, bl, rdir, "--ops", "abs__")
    assert rc == 2 and "did you mean 'abs_'?" in one_error_line(capsys)


def test_current_specs_translates_old_names_only(tmp_path):
    said: list[str] = []
    specs = ["abs_inplace", "mm", "nope", "main/true_divide", "main:blas_benchmark"]
    assert current_specs(OPS, specs, warn=said.append) == [
        "main:abs_",
        "mm",
        "nope",  # no old name: kept, for the command's own error
        "main/true_divide",
        "main:addmm@test_blas_perf_parallel.py",
        "main:baddbmm@test_blas_perf_parallel.py",
        "main:bmm@test_blas_perf_parallel.py",
        "main:mm@test_blas_perf_parallel.py",
    ]
    assert said == [
        "warning: old name abs_inplace: using abs_ (ops/old_names.csv)",
        "note: 'true_divide' is an op of main (selected); 'true_divide' is the old name of "
        "div_tensor@test_true_divide.py (not selected)",
        "warning: old name blas_benchmark: using addmm@test_blas_perf_parallel.py, "
        "baddbmm@test_blas_perf_parallel.py, bmm@test_blas_perf_parallel.py, "
        "mm@test_blas_perf_parallel.py (ops/old_names.csv)",
    ]
    assert current_specs(OPS, ["blas_benchmark"]) == ["blas_benchmark"]  # a vllm op id
    # a baseline's op id is current even where no inventory says so (another ops dir)
    assert current_specs(tmp_path, ["abs_inplace"], current=["main/abs_inplace"]) == ["abs_inplace"]
    assert current_specs(tmp_path, ["abs_inplace"]) == ["abs_inplace"]  # no mapping there
    with pytest.raises(ZlbenchError, match="in 2 files: name one of them"):
        current_specs(OPS, ["main:perf_router_gemm"], warn=said.append)
