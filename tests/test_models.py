"""zlbench.models: on-disk round trips, loader errors, atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from zlbench import models
from zlbench.errors import ZlbenchError
from zlbench.models import (
    BaselineManifest,
    EnvFinding,
    Environment,
    GateVerdict,
    Marker,
    MarkerKind,
    OpVerdict,
    Row,
    RowKey,
    RowVerdict,
    RunResult,
    RunStatus,
    ThresholdDefaults,
    Verdict,
    atomic_write_text,
    dump_json_model,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
)

SHAPE = "[torch.Size([64, 64]), 1]"


def _run_result() -> RunResult:
    marker = Marker(
        kind=MarkerKind.NO_CUDAGRAPH,
        phase="capture",
        reason="x y",
        dtype="bfloat16",
        shape_detail=SHAPE,
    )
    return RunResult(
        repo="main",
        run_name="softmax",
        op="softmax",
        test_nodeids=["benchmark/test_softmax.py::test_softmax"],
        status=RunStatus.FAIL,
        mode="replay",
        timing="cudagraph",
        dtypes=["bfloat16"],
        rows=[
            Row(
                op="softmax",
                dtype="bfloat16",
                shape=SHAPE,
                latency_base_ms=0.2,
                latency_ms=0.1,
                speedup=2.0,
                no_cudagraph=True,
            ),
            Row(
                op="softmax",
                dtype="bfloat16",
                shape=SHAPE,
                occurrence=1,
                status="FAILED",
                error="OOM",
            ),
        ],
        markers=[marker],
        marker_counts=models.count_markers([marker]),
        failing_shape=SHAPE,
        environment=Environment(gpu_model="NVIDIA H200", gpu_count=1, flaggems_dirty=False),
        duration_s=1.5,
    )


def _manifest() -> BaselineManifest:
    return BaselineManifest(
        name="v1",
        created="2026-11-29T00:00:00Z",
        gpu_model="NVIDIA H200",
        flaggems={"main": {"package": "flag_gems", "commit": "ed2508bcb5a0", "dirty": False}},
        dtypes=["bfloat16"],
        ops=["main/softmax", "main/mm"],
        repeats=3,
        thresholds=ThresholdDefaults(default=0.07, improvement=None),
        files={"main/softmax/result.json": "ab" * 32},
        summary={"rows": 10, "noise_max": 0.01},
    )


def _verdict() -> GateVerdict:
    key = RowKey(repo="main", run_name="softmax", op="softmax", dtype="bfloat16", shape=SHAPE)
    return GateVerdict(
        verdict="FAIL",
        exit_code=1,
        summary="1 regression",
        baseline="v1",
        baseline_dir="baselines/v1",
        results_dir="out/results",
        generated="2026-11-29T00:00:00Z",
        counts={Verdict.REGRESSION.value: 1},
        ops=[
            OpVerdict(
                repo="main",
                run_name="softmax",
                op="softmax",
                verdict=Verdict.REGRESSION,
                geomean_ratio=0.9,
                log_tail=["a", "b"],
            )
        ],
        rows=[
            RowVerdict(
                key=key,
                verdict=Verdict.REGRESSION,
                baseline_speedup=2.0,
                current_speedup=1.8,
                ratio=0.9,
                samples=[0.9, 0.91],
                confirmed=True,
            )
        ],
        environment=[EnvFinding(field="gpu_model", baseline="H200", current="H100")],
        markers=[Marker(kind=MarkerKind.REPLAY_FALLBACK, reason="key_missing", kernel="k")],
    )


CASES = {"run": _run_result, "manifest": _manifest, "verdict": _verdict}
IO = {"json": (dump_json_model, load_json_model), "yaml": (dump_yaml_model, load_yaml_model)}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_round_trip(tmp_path, name, fmt):
    obj = CASES[name]()
    path = tmp_path / f"x.{fmt}"
    dump, load = IO[fmt]
    dump(path, obj)
    back = load(path, type(obj))
    assert back == obj
    assert back.schema_version == type(obj).FORMAT_VERSION
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


def test_json_is_plain_data(tmp_path):
    dump_json_model(tmp_path / "r.json", _run_result())
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["status"] == "FAIL" and data["markers"][0]["kind"] == MarkerKind.NO_CUDAGRAPH.value
    assert data["rows"][1]["occurrence"] == 1


def _one_line_error(fn, *args) -> str:
    with pytest.raises(ZlbenchError) as err:
        fn(*args)
    msg = str(err.value)
    assert "\n" not in msg and err.value.exit_code == 2
    return msg


@pytest.mark.parametrize("load", [load_json_model, load_yaml_model])
def test_missing_file(tmp_path, load):
    path = tmp_path / "nope"
    assert _one_line_error(load, path, RunResult) == f"{path}: file not found"


def test_read_text_names_what_is_missing_and_refuses_non_utf8(tmp_path):
    path = tmp_path / "ops.txt"
    assert _one_line_error(models.read_text, path, "ops file not found") == (
        f"{path}: ops file not found"
    )
    path.write_bytes(b"abs\n\xff\xfe\n")
    assert _one_line_error(models.read_text, path).startswith(f"{path}: cannot read: not UTF-8")


def test_truncated_json(tmp_path):
    path = tmp_path / "r.json"
    dump_json_model(path, _run_result())
    path.write_text(path.read_text()[:200])
    msg = _one_line_error(load_json_model, path, RunResult)
    assert msg.startswith(f"{path}: not valid JSON")


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_wrong_schema_version(tmp_path, fmt):
    path = tmp_path / f"m.{fmt}"
    dump, load = IO[fmt]
    dump(path, _manifest())
    version = BaselineManifest.FORMAT_VERSION
    path.write_text(
        path.read_text()
        .replace(f"schema_version: {version}", "schema_version: 99")
        .replace(f'"schema_version": {version}', '"schema_version": 99')
    )
    msg = _one_line_error(load, path, BaselineManifest)
    assert msg.startswith(f"{path}: schema_version 99 is not supported")


@pytest.mark.parametrize(
    ("model", "drop", "field"),
    [
        (RunResult, "status", "status"),
        (BaselineManifest, "name", "name"),
        (GateVerdict, "exit_code", "exit_code"),
    ],
)
def test_missing_required_field(tmp_path, model, drop, field):
    obj = {RunResult: _run_result, BaselineManifest: _manifest, GateVerdict: _verdict}[model]()
    data = obj.model_dump(mode="json")
    del data[drop]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    msg = _one_line_error(load_json_model, path, model)
    assert msg.startswith(f"{path}: field '{field}'") and "required" in msg.lower()


def test_nested_field_is_named(tmp_path):
    data = _run_result().model_dump(mode="json")
    data["rows"][1]["speedup"] = "fast"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert _one_line_error(load_json_model, path, RunResult).startswith(
        f"{path}: field 'rows.1.speedup'"
    )


def test_broken_yaml(tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text("name: v1\ncreated: [unclosed\nops: x\n")
    msg = _one_line_error(load_yaml_model, path, BaselineManifest)
    assert msg.startswith(f"{path}: not valid YAML at line ")


def test_atomic_write_replaces_whole_file(tmp_path):
    path = tmp_path / "sub" / "f.txt"
    atomic_write_text(path, "one\n")
    atomic_write_text(path, "two\n")
    assert path.read_text() == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]


@pytest.mark.parametrize("fail_in", ["write", "fsync", "replace"])
def test_atomic_write_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch, fail_in):
    path = tmp_path / "result.json"
    path.write_text("old\n")

    def boom(*a, **k):
        raise OSError("disk full")

    if fail_in == "write":
        monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: _FailingFile(fd))
    else:
        monkeypatch.setattr(os, fail_in, boom)
    with pytest.raises(OSError):
        atomic_write_text(path, "new content\n" * 1000)
    monkeypatch.undo()
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_atomic_write_failure_leaves_no_new_file(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        dump_json_model(tmp_path / "result.json", _run_result())
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


class _FailingFile:
    """A file whose write gets half way, then fails (disk full)."""

    def __init__(self, fd: int):
        self._fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self._fd)
        return False

    def write(self, text: str) -> int:
        os.write(self._fd, text[: len(text) // 2].encode())
        raise OSError("disk full")
