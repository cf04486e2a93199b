"""One loader for every untrusted JSON and YAML file (issue 26): nesting thousands of
levels deep, a key given twice and lone surrogates are one error line with exit 2, or
cleaned so that the reports are still written; never a traceback with exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import (
    AbSummary,
    BatchInfo,
    CodegenIndex,
    GateVerdict,
    RunResult,
    RunStatus,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.accept import AcceptList
from zlbench.models.codegen_screen import CodegenScreen

S = "[1024]"
DEPTHS = [5_000, 100_000]


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})


@pytest.fixture
def results(tmp_path):
    return write_results(tmp_path / "res", [run_result("add", [crow("add", S, 1.0)])])


def judge(bl, results, out, *more) -> int:
    return main(
        ["gate", "--baseline", str(bl), "--results", str(results), "--out", str(out), *more]
    )


def deep_json(depth: int) -> str:
    return '{"schema_version": 1, "x": ' + "[" * depth + "]" * depth + "}"


def deep_yaml(depth: int) -> str:
    return "default: " + "[" * depth + "]" * depth + "\n"


# --------------------------------------------------------------------------- 5: depth


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deeply_nested_result_json_is_one_line(tmp_path, bl, results, capsys, depth):
    (results / "main" / "add" / "result.json").write_text(deep_json(depth))
    assert judge(bl, results, tmp_path / "out") == 2
    assert "nested" in one_error_line(capsys)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("flag", ["--thresholds", "--accept"])
def test_a_deeply_nested_yaml_input_is_one_line(tmp_path, bl, results, capsys, depth, flag):
    f = tmp_path / "in.yaml"
    f.write_text(deep_yaml(depth))
    assert judge(bl, results, tmp_path / "out", flag, str(f)) == 2
    assert "nested" in one_error_line(capsys)


@pytest.mark.parametrize("depth", [100, 5_000, 100_000])
@pytest.mark.parametrize(
    "model", [RunResult, BatchInfo, AbSummary, CodegenIndex, CodegenScreen, GateVerdict]
)
def test_every_json_model_refuses_deep_nesting_in_one_line(tmp_path, model, depth):
    f = tmp_path / "f.json"
    f.write_text(deep_json(depth))
    with pytest.raises(ZlbenchError, match="nested") as e:
        load_json_model(f, model)
    assert "\n" not in str(e.value) and str(f) in str(e.value)


def test_a_deep_yaml_mapping_is_one_line(tmp_path):
    f = tmp_path / "a.yaml"
    f.write_text("".join(" " * i + "a:\n" for i in range(3000)))
    with pytest.raises(ZlbenchError, match="nested"):
        load_yaml_model(f, AcceptList)


def test_a_deeply_nested_batch_json_is_one_line(tmp_path, bl, results, capsys):
    (results / "batch.json").write_text(deep_json(50_000))
    assert judge(bl, results, tmp_path / "out") == 2
    assert "batch.json" in one_error_line(capsys)


# --------------------------------------------------------------------------- 14: duplicates


def test_an_accept_entry_with_a_key_twice_is_refused(tmp_path, bl, results, capsys):
    """A reviewer reads the first ``change``; PyYAML would take the last."""
    f = tmp_path / "accept.yaml"
    f.write_text(
        "accept:\n  - op: add\n    change: 0.01\n    reason: small, intended\n"
        + "    # ...forty lines later...\n" * 3
        + "    change: 1.0\n"
    )
    assert judge(bl, results, tmp_path / "out", "--accept", str(f)) == 2
    line = one_error_line(capsys)
    assert "'change' twice" in line and "line 8" in line


def test_a_thresholds_file_with_a_key_twice_is_refused(tmp_path, bl, results, capsys):
    f = tmp_path / "th.yaml"
    f.write_text("default: 0.05\nops:\n  add: 0.05\n  add: 0.9\n")
    assert judge(bl, results, tmp_path / "out", "--thresholds", str(f)) == 2
    assert "'add' twice" in one_error_line(capsys)


def test_a_result_json_with_a_key_twice_is_refused(tmp_path, bl, results, capsys):
    f = results / "main" / "add" / "result.json"
    f.write_text(f.read_text().replace('"status": "PASS"', '"status": "FAIL", "status": "PASS"'))
    assert judge(bl, results, tmp_path / "out") == 2
    assert "'status' twice" in one_error_line(capsys)


# --------------------------------------------------------------------------- 6: surrogates


def surrogate_results(tmp_path: Path) -> Path:
    res = write_results(
        tmp_path / "res",
        [run_result("add", [crow("add", S, 1.0)], status=RunStatus.FAIL, error="boom")],
    )
    f = res / "main" / "add" / "result.json"
    text = f.read_text()
    assert '"boom"' in text
    f.write_text(text.replace('"boom"', '"boom \\ud800 \\udfff end"'))
    return res


def test_a_lone_surrogate_in_an_artifact_string_still_gives_the_reports(tmp_path, bl, capsys):
    out = tmp_path / "out"
    assert judge(bl, surrogate_results(tmp_path), out) == 1  # judged: the op failed
    v = load_json_model(out / "verdict.json", GateVerdict)
    assert v.verdict == "FAIL"
    for name in ("report.md", "comment.md", "report.html", "junit.xml", "verdict.json"):
        assert "\ud800" not in (out / name).read_text(), name
    assert "boom" in json.dumps(v.model_dump(mode="json"), ensure_ascii=False)


def test_summarize_reads_a_lone_surrogate(tmp_path):
    res = write_results(tmp_path / "res", [run_result("add", [crow("add", S, 1.0)])])
    f = res / "main" / "add" / "result.json"
    f.write_text(f.read_text().replace('"[1024]"', '"[1024 \\ud800]"'))
    assert main(["summarize", str(res)]) == 0
    assert "[1024 \ufffd]" in (res / "summary.csv").read_text(encoding="utf-8")


def test_a_model_holding_a_surrogate_is_written_with_a_replacement(tmp_path):
    """The writers' backstop: a string from elsewhere (the environment) never crashes."""
    from zlbench.models import dump_json_model

    r = run_result("add", [crow("add", S, 1.0)], error="x\udcff y")
    dump_json_model(tmp_path / "r.json", r)
    assert load_json_model(tmp_path / "r.json", RunResult).error == "x\ufffd y"
