"""`zlbench codegen` on tiny baseline dirs, with a stand-in rebuild worker
(tests/support/fakeworker.py: no triton) so the orchestration is tested on its own."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.cgsynth import record, request, stage_texts, use, write_run
from zlbench.cli import main
from zlbench.codegen import worker_pool
from zlbench.codegen.collect import has_codegen_records
from zlbench.models import load_json_model
from zlbench.models.codegen_screen import CodegenScreen

REPO = Path(__file__).resolve().parents[2]

ADD, MUL, SUM = request("add_kernel"), request("mul_kernel"), request("sum_kernel", block=128)


def _texts(tag: str, **changed: str) -> dict[str, str]:
    return {k: v.decode() for k, v in stage_texts(tag, **changed).items()}


@pytest.fixture
def fake_worker(monkeypatch, tmp_path):
    """Point the screen at fakeworker; returns a function that sets its plan."""
    monkeypatch.setattr(worker_pool, "WORKER_MODULE", "tests.support.fakeworker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    plan_file = tmp_path / "fake_plan.json"
    monkeypatch.setenv("FAKE_CODEGEN_PLAN", str(plan_file))

    def set_plan(plan: dict) -> None:
        plan_file.write_text(json.dumps(plan))

    return set_plan


@pytest.fixture
def baseline(tmp_path) -> Path:
    """Two ops: add (add_kernel, 2 rows) and mul (mul_kernel + sum_kernel, shared
    add_kernel), plus a v1-style op without records."""
    root = tmp_path / "base"
    write_run(
        root, "add", [(record(ADD, stage_texts("add"), [use("add"), use("add", occ=1)]),
                       stage_texts("add"))], rows=2,
    )  # fmt: skip
    write_run(
        root,
        "mul",
        [
            (record(MUL, stage_texts("mul"), [use("mul")], n_regs=40), stage_texts("mul")),
            (record(SUM, stage_texts("sum"), [use("mul")]), stage_texts("sum")),
            (record(ADD, stage_texts("add"), [use("mul")]), stage_texts("add")),
        ],
    )
    write_run(root, "old", None)
    return root


SAME = {"add_kernel": {"texts": _texts("add")}, "mul_kernel": {"texts": _texts("mul")},
        "sum_kernel": {"texts": _texts("sum")}}  # fmt: skip


def _screen(out: Path) -> CodegenScreen:
    return load_json_model(out / "codegen.json", CodegenScreen)


def test_same_compiler_reports_nothing_changed(baseline, tmp_path, fake_worker, capsys):
    assert has_codegen_records(baseline)
    fake_worker(SAME | {"mul_kernel": {"texts": _texts("mul"), "figures": {"n_regs": 40}}})
    out = tmp_path / "out"
    rc = main(["codegen", "--baseline", str(baseline), "--out", str(out), "--jobs", "2"])
    s = _screen(out)
    assert rc == 0
    assert s.counts["identical"] == 3 and len(s.kernels) == 3  # add_kernel deduplicated
    assert s.changed() == [] and list((out / "diffs").iterdir()) == []
    assert s.ops_without_records == ["main/old"]
    add = next(k for k in s.kernels if k.name == "add_kernel")
    assert add.ops == ["main/add", "main/mul"] and len(add.rows) == 3
    assert "**0 of 3 kernels changed**" in (out / "codegen.md").read_text()
    err = capsys.readouterr().err
    assert "codegen: chunk" in err and "3/3 kernels" in err and "ETA" in err


def test_changed_kernels_are_classified_with_diffs(baseline, tmp_path, fake_worker, capsys):
    fake_worker(
        SAME
        | {
            "mul_kernel": {"texts": _texts("mul", ttgir="new ttgir\n", llir="x\n", ptx="y\n",
                                           sass="z\n"), "figures": {"n_regs": 48}},
            "sum_kernel": {"texts": _texts("sum", sass="  /*0000*/  NOP ;\n")},
        }
    )  # fmt: skip
    out = tmp_path / "out"
    rc = main(["codegen", "--baseline", str(baseline), "--out", str(out)])
    s = _screen(out)
    by_name = {k.name: k for k in s.kernels}
    assert rc == 0
    assert by_name["mul_kernel"].status.value == "ttgir_changed"
    assert by_name["mul_kernel"].first_stage == "ttgir"
    assert by_name["mul_kernel"].deltas["n_regs"] == 8
    assert by_name["sum_kernel"].status.value == "sass_changed"
    assert by_name["add_kernel"].status.value == "identical"
    diff = (out / by_name["mul_kernel"].diff_file).read_text()
    assert "--- baseline/" in diff and "+new ttgir" in diff and "# kernel mul_kernel" in diff
    sass = (out / by_name["sum_kernel"].diff_file).read_text()
    assert "+  /*0000*/  NOP ;" in sass
    assert sorted(p.name for p in (out / "diffs").iterdir()) == sorted(
        f"{k.kernel_id}.diff" for k in s.changed()
    )
    md = (out / "codegen.md").read_text()
    assert "**2 of 3 kernels changed**" in md and "| TTGIR changed | 1 |" in md
    assert "40→48 (+8)" in md
    assert "2 of 3 kernels changed" in capsys.readouterr().out


def test_compile_failure_exits_1_and_is_named(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME | {"sum_kernel": "fail"})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out)]) == 1
    s = _screen(out)
    assert [k.name for k in s.failed()] == ["sum_kernel"]
    assert "Boom: no" in s.failed()[0].error
    assert "FAILED sum_kernel [BLOCK=128" in capsys.readouterr().err
    assert "### Failed to compile" in (out / "codegen.md").read_text()


def test_kernel_without_rebuild_is_missing_not_failed(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME | {"sum_kernel": "skip", "mul_kernel": "loadfail"})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out)]) == 0
    s = _screen(out)
    assert s.counts["missing"] == 2 and s.counts["compile_failed"] == 0
    assert {k.name: k.error for k in s.kernels if k.status.value == "missing"} == {
        "sum_kernel": "no rebuild result",
        "mul_kernel": "load failed: NoModule: x",
    }
    assert "2 kernel(s) not rebuilt, first: " in capsys.readouterr().err


def test_nothing_rebuilt_is_exit_2(baseline, tmp_path, fake_worker, capsys):
    fake_worker({k: "loadfail" for k in SAME})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zlbench codegen: error: no kernel could be rebuilt")
    assert _screen(out).counts["missing"] == 3  # the result is still written


def test_the_progress_line_counts_kernels_not_rebuilt(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME | {"mul_kernel": "loadfail"})
    assert main(["codegen", "--baseline", str(baseline), "--out", str(tmp_path / "o")]) == 0
    chunks = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("codegen: chunk")]
    assert "3/3 kernels, 0 changed, 0 failed, 1 not rebuilt;" in chunks[-1]


def test_a_shard_that_loads_no_kernel_is_exit_2_and_writes_nothing(
    baseline, tmp_path, fake_worker, capsys
):
    """2026-12-02: a rebuild on a CPU machine without GEMS_VENDOR loaded none of 3591
    kernels, said "rebuilt" and exit 0, and `baseline code-digests` took it."""
    fake_worker({k: "loadfail" for k in SAME})
    out = tmp_path / "shard"
    argv = ["codegen", "--baseline", str(baseline), "--shard", "1/1", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("zlbench codegen: error: no kernel of the shard could be loaded here")
    assert "load failed: NoModule: x" in err
    assert not out.exists()


def test_a_shard_says_which_kernels_it_could_not_load(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME | {"sum_kernel": "loadfail"})
    out = tmp_path / "shard"
    argv = ["codegen", "--baseline", str(baseline), "--shard", "1/1", "--out", str(out)]
    assert main(argv) == 0
    assert "codegen: 1 of 3 kernel(s) not rebuilt here, first: sum_kernel: load failed" in (
        capsys.readouterr().err
    )
    assert (out / "rebuilt.json").is_file()


def test_crashing_kernel_is_isolated_and_failed(baseline, tmp_path, fake_worker):
    # sum_kernel kills every process it is in; the others still rebuild alone.
    mul = {"texts": _texts("mul"), "figures": {"n_regs": 40}, "crash_unless_alone": True}
    fake_worker(SAME | {"sum_kernel": "crash", "mul_kernel": mul})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out), "--jobs", "1"]) == 1
    s = _screen(out)
    failed = s.failed()
    assert [k.name for k in failed] == ["sum_kernel"] and "SIGSEGV" in failed[0].error
    assert s.counts["identical"] == 2


def test_worker_that_cannot_start_is_exit_2(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME)
    os.environ["FAKE_CODEGEN_PLAN"] = str(tmp_path / "no-such-plan.json")  # every worker dies
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out), "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zlbench codegen: error: the rebuild worker cannot run: ")
    assert "exit code 1" in err[-1] and "FileNotFoundError" in err[-1]
    assert not (out / "codegen.json").exists()


def test_every_kernel_crashing_is_failed_not_an_error(baseline, tmp_path, fake_worker):
    fake_worker({k: "crash" for k in SAME})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out), "--jobs", "2"]) == 1
    assert _screen(out).counts["compile_failed"] == 3


def test_baseline_without_records_is_one_line_exit_2(tmp_path, capsys):
    root = tmp_path / "v1"
    write_run(root, "add", None)
    assert not has_codegen_records(root)
    assert main(["codegen", "--baseline", str(root), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no codegen records" in err[0]
    assert not (tmp_path / "o" / "codegen.json").exists()


def test_corrupted_record_is_one_line_exit_2(baseline, tmp_path, capsys):
    index = baseline / "main" / "mul" / "codegen" / "index.json"
    index.write_text(index.read_text()[:200])
    assert main(["codegen", "--baseline", str(baseline), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "index.json" in err[0] and "not valid JSON" in err[0]


def test_record_not_matching_its_request_is_corrupted(baseline, tmp_path, capsys):
    index = baseline / "main" / "add" / "codegen" / "index.json"
    data = json.loads(index.read_text())
    data["records"][0]["request"]["config"]["num_warps"] = 8
    index.write_text(json.dumps(data))
    assert main(["codegen", "--baseline", str(baseline), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not match its request" in err[0]


def test_corrupted_blob_of_a_changed_kernel_is_exit_2(baseline, tmp_path, fake_worker, capsys):
    fake_worker(SAME | {"sum_kernel": {"texts": _texts("sum", ttir="other\n")}})
    for blob in (baseline / "main" / "mul" / "codegen" / "blobs").iterdir():
        blob.write_bytes(b"not gzip")
    out = tmp_path / "o"
    assert main(["codegen", "--baseline", str(baseline), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "codegen blob corrupt" in err[-1]
    assert not (out / "codegen.json").exists() and not (out / "diffs").exists()


def test_bad_jobs_and_interpreter_are_exit_2(baseline, tmp_path, capsys):
    assert main(["codegen", "--baseline", str(baseline), "--jobs", "0"]) == 2
    assert main(["codegen", "--baseline", str(baseline), "--python", "no-such-python-x"]) == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and "at least 1" in err and "no such interpreter" in err


def test_rerun_replaces_old_diffs(baseline, tmp_path, fake_worker):
    out = tmp_path / "out"
    fake_worker(SAME | {"sum_kernel": {"texts": _texts("sum", ttgir="x\n")}})
    main(["codegen", "--baseline", str(baseline), "--out", str(out)])
    assert len(list((out / "diffs").iterdir())) == 1
    fake_worker(SAME)
    main(["codegen", "--baseline", str(baseline), "--out", str(out)])
    assert list((out / "diffs").iterdir()) == []
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_python_flag_runs_the_workers_in_that_interpreter(baseline, tmp_path, fake_worker):
    fake_worker(SAME | {"mul_kernel": {"texts": _texts("mul"), "figures": {"n_regs": 40}}})
    out = tmp_path / "out"
    rc = main(
        ["codegen", "--baseline", str(baseline), "--out", str(out), "--python", sys.executable]
    )
    assert rc == 0 and _screen(out).python == sys.executable


def test_baseline_recording_other_outputs_for_one_kernel_is_noted(tmp_path, fake_worker):
    root = tmp_path / "base"
    write_run(root, "a", [(record(ADD, stage_texts("add"), [use("a")]), stage_texts("add"))])
    other = stage_texts("add", sass="other\n")
    write_run(root, "b", [(record(ADD, other, [use("b")]), other)])
    fake_worker({"add_kernel": {"texts": _texts("add")}})
    out = tmp_path / "out"
    assert main(["codegen", "--baseline", str(root), "--out", str(out)]) == 0
    (k,) = _screen(out).kernels
    assert k.status.value == "identical" and k.ops == ["main/a", "main/b"]
    assert k.notes == ["baseline not deterministic: other outputs recorded in main/b"]
    md = (out / "codegen.md").read_text()
    assert f"### Notes\n\n- `add_kernel` `{k.kernel_id}`: baseline not deterministic" in md
