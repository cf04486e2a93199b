"""``zlbench baseline show``'s text (zlbench.report.baseline.render_show)."""

from __future__ import annotations

from pathlib import Path

from zlbench.gate.baselines import OpSummary, summarize
from zlbench.gate.load import load_baseline
from zlbench.models import BaselineManifest
from zlbench.report.baseline import render_show

SHIPPED = Path(__file__).resolve().parents[2] / "baselines" / "v1"


def _manifest(**kw) -> BaselineManifest:
    base = dict(
        name="v9",
        created="2026-01-02T03:04:05Z",
        gpu_model="NVIDIA H200",
        gpu_count=8,
        driver="570.1",
        torch="2.7.0",
        cuda="12.8",
        compiler_dist="flagtree",
        compiler_version="0.3",
        compiler_commit="abc123",
        flaggems={"vllm": {"commit": "v222"}, "main": {"commit": "m111"}},
        zlbench_version="0.1",
        shape_file="ops/shapes_single.yaml",
        shape_file_sha256="0123456789abcdef",
        dtypes=["bfloat16", "float16"],
        repeats=3,
    )
    return BaselineManifest(**{**base, **kw})


def test_manifest_lines_and_op_table():
    ops = [OpSummary("main/abs", 4, 1.2345, 0.0125), OpSummary("main/add", 2, None, 0.0)]
    lines = render_show(_manifest(summary={}), ops).splitlines()
    assert lines[0] == "baseline v9 (created 2026-01-02T03:04:05Z)"
    assert lines[1] == "  GPU        NVIDIA H200 x8, driver 570.1"
    assert lines[3] == "  compiler   flagtree 0.3 abc123"
    assert lines[4] == "  FlagGems   main=m111, vllm=v222"  # sorted by repo
    assert lines[5] == "  zlbench    0.1"  # no commit: no trailing blank
    assert lines[6] == "  timing     cudagraph, level core, dtypes bfloat16,float16"
    assert lines[7] == "  shapes     ops/shapes_single.yaml sha256 0123456789ab"
    assert not any("row noise" in line for line in lines)  # no noise summary: no line
    assert lines[9] == ""
    assert lines[10].split() == ["op", "rows", "median", "speedup", "max", "noise"]
    assert lines[11].split() == ["main/abs", "4", "1.234", "1.25%"]
    assert lines[12].split() == ["main/add", "2", "-", "0.00%"]
    assert len(lines) == 13


def test_ops_built_from_fewer_passes_are_listed_under_the_manifest():
    short = {"main/embedding": "1 of 2 replay passes: replay pass 2 did not finish it"}
    lines = render_show(_manifest(summary={"short": short}), []).splitlines()
    want = "  fewer passes main/embedding: 1 of 2 replay passes: replay pass 2 did not finish it"
    assert want in lines and lines.index(want) < lines.index("")  # with the manifest lines


def test_noise_line_when_the_manifest_has_one():
    noise = {"rows": 10, "p50": 0.01, "p90": 0.02, "max": 0.05}
    text = render_show(_manifest(summary={"noise": noise}), [])
    assert "  row noise  p50 1.00%  p90 2.00%  max 5.00% over 10 rows" in text.splitlines()


def test_shipped_baseline_renders_every_op():
    b = load_baseline(SHIPPED)
    text = render_show(b.manifest, summarize(sorted(b.ops.items())))
    keys = [line.split()[0] for line in text.splitlines()[text.splitlines().index("") + 2 :]]
    assert keys == sorted(b.ops)
