"""Any runner, honestly (issue 48 item 2): a baseline of another GPU model is accepted
only with a base compiler paired on this GPU and the same architecture, named in the
report's first lines; another architecture, one not known, or no base compiler is
refused in one line that names the command recording this runner's own baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cgsynth import record, request, stage_texts, write_index
from tests.support.interleaved import gate_dir
from tests.support.trees import shipped
from tests.support.zlsynth import (
    ENV,
    brow,
    crow,
    gate,
    load_judge_inputs,
    one_error_line,
    run_result,
    write_baseline,
)
from zlbench.gate.env import (
    BOOTSTRAP_HINT,
    GPU_ARCHS,
    baseline_arch,
    check_environment,
    gpu_arch_of,
    runner_arch,
)
from zlbench.gate.load import load_baseline
from zlbench.gate.verdict import GateOptions, run_gate
from zlbench.models import Environment, GateVerdict, RunResult
from zlbench.models.run import arch_text
from zlbench.report.html import render_html
from zlbench.report.markdown import header, render_markdown

H100 = "NVIDIA H100 80GB HBM3"  # the baseline's GPU (zlsynth.GPU) is "NVIDIA H200"
A100 = "NVIDIA A100-SXM4-80GB"


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    ("model", "arch"),
    [
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA H100 PCIe", "sm_90"),
        ("NVIDIA H200", "sm_90"),
        ("NVIDIA H800", "sm_90"),
        ("NVIDIA H20", "sm_90"),
        ("NVIDIA GH200 480GB", "sm_90"),
        ("NVIDIA A100-SXM4-80GB", "sm_80"),
        ("NVIDIA A800 80GB PCIe", "sm_80"),
        ("NVIDIA A30", "sm_80"),
        ("NVIDIA A10", "sm_86"),
        ("NVIDIA A10G", "sm_86"),
        ("NVIDIA L4", "sm_89"),
        ("NVIDIA L40", "sm_89"),
        ("NVIDIA L40S", "sm_89"),
        ("NVIDIA GeForce RTX 4090", "sm_89"),
        ("NVIDIA B200", "sm_100"),
        ("NVIDIA GB200", "sm_100"),
        ("Tesla V100-SXM2-32GB", None),  # not in the table: not guessed
        ("NVIDIA H100, NVIDIA A100", None),  # two architectures named
        ("", None),
        (None, None),
    ],
)
def test_gpu_arch_of_a_model_name(model, arch):
    assert gpu_arch_of(model) == arch


def test_the_table_matches_whole_words():
    # "H20" is not "H200", "A10" not "A100", "L4" not "L40": each name maps to its own
    assert gpu_arch_of("NVIDIA H20") == "sm_90" and GPU_ARCHS["H20"] == "sm_90"
    assert gpu_arch_of("NVIDIA A10") == "sm_86" != gpu_arch_of("NVIDIA A100")
    assert gpu_arch_of("NVIDIA L4") == gpu_arch_of("NVIDIA L40") == "sm_89"
    assert gpu_arch_of("NVIDIA XH1000") is None


@pytest.mark.parametrize(
    ("value", "text"),
    [(90, "sm_90"), ("90", "sm_90"), ((9, 0), "sm_90"), ((10, 0), "sm_100"), ((8, 6), "sm_86")]
    + [("sm_89", "sm_89"), ("gfx942", "gfx942"), (None, None)],
)
def test_arch_text(value, text):
    assert arch_text(value) == text


# --------------------------------------------------------------------------- recorded / old


def test_an_old_environment_without_gpu_arch_loads_and_round_trips():
    old = ENV.model_dump(mode="json")
    old.pop("gpu_arch")
    env = Environment.model_validate(old)
    assert env.gpu_arch is None
    new = env.model_copy(update={"gpu_arch": "sm_90"})
    assert Environment.model_validate_json(new.model_dump_json()).gpu_arch == "sm_90"


def test_an_old_verdict_without_gpu_difference_loads(tmp_path):
    b, r, th = load_judge_inputs(tmp_path, {"x": [brow("x", "[1]", 1.0)]}, _runs())
    data = run_gate(b, r, th, GateOptions()).model_dump(mode="json")
    data.pop("gpu_difference")
    assert GateVerdict.model_validate(data).gpu_difference is None


@pytest.mark.data
def test_a_shipped_baseline_without_gpu_arch_reads_its_codegen_target():
    baseline = load_baseline(shipped("baselines/v5"))
    assert all(r.environment.gpu_arch is None for r in baseline.ops.values())
    assert baseline_arch(baseline) == "sm_90"


def _baseline_with_codegen(tmp_path, arch: int, **env):
    """A one-op H200 baseline whose op's codegen records compiled for ``arch``."""
    root = tmp_path / "bl"
    req = request().model_copy(
        update={"target": request().target.model_copy(update={"arch": arch})}
    )
    texts = stage_texts()
    write_index(root / "main" / "x" / "codegen", [record(req, texts)], [texts])
    bl = write_baseline(root, {"x": [brow("x", "[1]", 1.0)]})
    if env:  # the ops' recorded environment (as a newer baseline records it)
        path = bl / "main" / "x" / "result.json"
        data = json.loads(path.read_text())
        data["environment"].update(env)
        path.write_text(json.dumps(data))
        bl = _rehash(bl)
    return load_baseline(bl)


def _rehash(bl):
    """The manifest's content hashes again, after a test edited a file."""
    import yaml

    from zlbench.gate.baselines import content_hashes

    path = bl / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    data["files"] = content_hashes(bl)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return bl


def test_the_baseline_arch_comes_from_its_records_before_its_name(tmp_path):
    # the manifest says H200 (sm_90 by name); the kernels were compiled for sm_80
    assert baseline_arch(_baseline_with_codegen(tmp_path / "a", 80)) == "sm_80"
    # an arch the ops recorded wins over both
    recorded = _baseline_with_codegen(tmp_path / "b", 80, gpu_arch="sm_86")
    assert baseline_arch(recorded) == "sm_86"
    # no record, no recorded arch: the name's
    plain = load_baseline(write_baseline(tmp_path / "c", {"x": [brow("x", "[1]", 1.0)]}))
    assert baseline_arch(plain) == "sm_90"


def test_the_runner_arch_is_recorded_else_the_name(tmp_path):
    assert runner_arch(_runs(gpu_model="NVIDIA Hopper-X", gpu_arch="sm_90")) == "sm_90"
    assert runner_arch(_runs(gpu_model=H100)) == "sm_90"
    assert runner_arch(_runs(gpu_model="NVIDIA Hopper-X")) is None


def test_the_plugin_records_the_compute_capability(monkeypatch):
    import torch

    from zlbench.plugins import environment

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: (9, 0))
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert environment.gpu_arch() == "sm_90"
    monkeypatch.setattr(environment, "_gpu", lambda: (H100, 1, "580.1", "13.0"))
    env = environment.probe(None, "cudagraph", "core")
    assert (env.gpu_model, env.gpu_arch) == (H100, "sm_90")


def test_the_plugin_records_no_arch_without_a_gpu(monkeypatch):
    import torch

    from zlbench.plugins import environment

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert environment.gpu_arch() is None


# --------------------------------------------------------------------------- the gate


def _runs(**env) -> list[RunResult]:
    return [run_result("x", [crow("x", "[1]", 1.0)], env=ENV.model_copy(update=env))]


def _judge(tmp_path, paired: bool, allow: bool = False, **env) -> GateVerdict:
    b, r, th = load_judge_inputs(tmp_path, {"x": [brow("x", "[1]", 1.0)]}, _runs(**env))
    return run_gate(b, r, th, GateOptions(paired_base=paired, allow_env_mismatch=allow))


def test_same_architecture_with_a_base_is_accepted(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model=H100)
    assert (v.verdict, v.exit_code) == ("PASS", 0)
    d = v.gpu_difference
    assert d is not None and d.accepted
    assert (d.baseline_gpu, d.baseline_arch, d.runner_gpu, d.runner_arch) == (
        "NVIDIA H200",
        "sm_90",
        H100,
        "sm_90",
    )
    assert d.line == (
        f"Baseline recorded on NVIDIA H200 (sm_90), this runner is {H100} (sm_90): accepted, "
        "the A/B pairs PR and base on this GPU; stored timings are context only"
    )
    gpu = next(f for f in v.environment if f.field == "gpu_model")
    assert not gpu.mismatch and gpu.current == H100  # shown, informational


def test_same_architecture_without_a_base_is_refused(tmp_path):
    v = _judge(tmp_path, paired=False, gpu_model=H100)
    assert (v.verdict, v.exit_code) == ("ERROR", 2)
    assert v.gpu_difference is not None and not v.gpu_difference.accepted
    assert "no base compiler (--base-compiler ENV)" in v.summary
    assert BOOTSTRAP_HINT in v.summary


def test_another_architecture_is_refused_even_with_a_base(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model=A100)
    assert (v.verdict, v.exit_code) == ("ERROR", 2)
    assert f"this runner is {A100} (sm_80): another architecture" in v.summary
    assert "baseline recorded on NVIDIA H200 (sm_90)" in v.summary
    assert BOOTSTRAP_HINT in v.summary
    assert not v.gpu_difference.accepted


def test_an_unknown_architecture_is_refused(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model="NVIDIA Hopper-X")
    assert v.exit_code == 2 and "an architecture not known" in v.summary
    # the same GPU name with its recorded architecture: accepted
    ok = _judge(tmp_path / "b", paired=True, gpu_model="NVIDIA Hopper-X", gpu_arch="sm_90")
    assert ok.exit_code == 0 and ok.gpu_difference.accepted


def test_the_refusal_names_every_other_mismatch_too(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model=A100, flaggems_commit="0123456789abcdef")
    why = v.summary.split(" — ")[0]
    assert "another architecture; flaggems_commit[main]: baseline" in why
    assert why.endswith(f"; record this runner's own baseline: {BOOTSTRAP_HINT}")


def test_allow_env_mismatch_keeps_its_meaning(tmp_path):
    v = _judge(tmp_path, paired=False, allow=True, gpu_model=A100)
    assert v.exit_code == 0 and v.allow_env_mismatch
    assert not v.gpu_difference.accepted
    assert [f.field for f in v.environment if f.mismatch] == ["gpu_model"]
    assert "Judged despite an environment mismatch" in render_markdown(v)


def test_the_same_gpu_has_no_difference(tmp_path):
    v = _judge(tmp_path, paired=True)
    assert v.gpu_difference is None and v.exit_code == 0
    assert "this runner is" not in render_markdown(v)


def test_the_report_leads_with_the_accepted_difference(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model=H100)
    head = header(v).splitlines()
    line = next(i for i, s in enumerate(head) if "this runner is NVIDIA H100" in s)
    assert line <= 8 and "accepted, the A/B pairs PR and base on this GPU" in head[line]
    assert head[line + 2].startswith("Judged")
    assert "stored timings are context only" in render_html(v)


# --------------------------------------------------------------------------- the CLI


def _as_runner(gate, model: str) -> None:
    """Rewrite a gate dir's results (both sides) as measured on ``model``."""
    for path in gate.rglob("result.json"):
        data = json.loads(path.read_text())
        data["environment"]["gpu_model"] = model
        path.write_text(json.dumps(data))


def test_a_gate_dir_of_an_interleaved_ab_is_accepted_on_the_same_arch(tmp_path):
    bl, g = gate_dir(tmp_path, {"x": [(100.0, 100.0)] * 5})
    _as_runner(g, H100)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.gpu_difference.accepted and v.gpu_difference.runner_arch == "sm_90"
    md = (out / "report.md").read_text()
    assert "this runner is NVIDIA H100 80GB HBM3 \\(sm\\_90\\): accepted" in md.split("Judged")[0]


@pytest.mark.data
def test_the_shipped_h200_aa_gate_dir_as_measured_on_an_h100_passes_named(tmp_path):
    """The real interleaved A/A (examples/h200-aa-interleaved, baseline v2) with its
    results' GPU model rewritten to an H100's: PASS as on the H200, the difference named."""
    import shutil

    g = tmp_path / "aa"
    shutil.copytree(shipped("examples/h200-aa-interleaved"), g)
    _as_runner(g, H100)
    ops = Path(__file__).resolve().parents[2] / "ops" / "gate_core.txt"
    rc, out = gate(tmp_path, shipped("baselines/v2"), g, "--ops-file", str(ops))
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.verdict == "PASS" and v.gpu_difference.accepted
    assert v.gpu_difference.baseline_arch == v.gpu_difference.runner_arch == "sm_90"


def test_an_accepted_gpu_does_not_hide_another_mismatch(tmp_path):
    v = _judge(tmp_path, paired=True, gpu_model=H100, flaggems_commit="0123456789abcdef")
    assert v.exit_code == 2 and v.gpu_difference.accepted
    why = v.summary.split(" — ")[0]
    assert why.startswith("ERROR: environment differs from the baseline: flaggems_commit[main]")
    assert "gpu_model" not in why


def test_another_arch_on_the_cli_is_one_line_with_the_bootstrap_hint(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, {"x": [(100.0, 100.0)] * 5})
    _as_runner(g, A100)
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    line = one_error_line(capsys)
    assert "another architecture" in line
    assert line.endswith(f"record this runner's own baseline: {BOOTSTRAP_HINT}")


def test_the_judge_job_accepts_the_merged_shards_of_an_interleaved_ab(tmp_path):
    """CI's judge job: ``zlbench merge`` of the shards, then ``gate --results`` with no
    ``--base-compiler``: the merged A/B still pairs every row on this GPU."""
    from tests.support.interleaved import S
    from zlbench.cli import main

    _, g1 = gate_dir(tmp_path / "a", {"x": [(100.0, 100.0)] * 5})
    _, g2 = gate_dir(tmp_path / "b", {"y": [(100.0, 100.0)] * 5})
    for g in (g1, g2):
        _as_runner(g, H100)
    merged = tmp_path / "merged"
    assert main(["merge", str(g1), str(g2), "--out", str(merged)]) == 0
    ops = {op: [brow(op, S, 1.0, lat=0.1)] for op in ("x", "y")}
    bl = write_baseline(tmp_path / "bl", ops)
    rc, out = gate(tmp_path, bl, merged)
    assert rc == 0
    v = GateVerdict.model_validate_json((out / "verdict.json").read_text())
    assert v.gpu_difference.accepted and v.ab is not None


def test_without_the_ab_the_same_arch_is_refused_on_the_cli(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, {"x": [(100.0, 100.0)] * 5})
    _as_runner(g, H100)
    import shutil

    shutil.rmtree(g / "ab")
    rc, _ = gate(tmp_path, bl, g)
    assert rc == 2
    assert BOOTSTRAP_HINT in one_error_line(capsys)


def test_gate_options_pair_the_base_compiler():
    from types import SimpleNamespace

    from zlbench.gate.thresholds import load_thresholds
    from zlbench.models import ThresholdDefaults
    from zlbench.workflow.ab import AbOptions
    from zlbench.workflow.gate_judge import gate_options

    th = load_thresholds(None, ThresholdDefaults())

    def job(ab: AbOptions):  # what gate_options reads of a GateJob
        return SimpleNamespace(
            ab=ab, allow_env_mismatch=False, confirm=None, baseline="bl", thresholds_label=""
        )

    assert not gate_options(job(AbOptions()), None, th, "").paired_base
    assert gate_options(job(AbOptions(base_compiler="/envs/base")), None, th, "").paired_base


def test_check_environment_alone_still_flags_the_gpu_model(tmp_path):
    """The finding is a mismatch in itself; only the gate, knowing of the base, accepts."""
    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    bad = [f.field for f in check_environment(baseline, _runs(gpu_model=H100)) if f.mismatch]
    assert bad == ["gpu_model"]
