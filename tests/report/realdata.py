"""Verdicts from the real H200 numbers shipped in the repo (baselines/v1 and
examples/h200-gate-v1), with slowdowns injected offline into a copy.

The injection is the one of docs/judging.md's sensitivity table: each row of a
named op gets its FlagGems latency multiplied by (1 + d) and its speedup divided
by (1 + d); the run-to-run noise in the rows stays the real, measured one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.gate.verdict import GateOptions, run_gate
from zlbench.models import GateVerdict

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "baselines" / "v1"
RESULTS = ROOT / "examples" / "h200-gate-v1"
DISMISSED = {
    "main/index_add": "2026-11-29 cannot be CUDA-graph captured on the H200 (ops/dismiss.txt)"
}
# the FAIL example of docs/reports.md
FAIL_SLOWDOWNS = {"softmax": 0.20, "cat": 0.08, "layer_norm": 0.06, "gelu": 0.03}


def inject(dst: Path, slowdowns: dict[str, float], default: float = 0.0) -> Path:
    """A copy of examples/h200-gate-v1 at ``dst`` with ops slowed by their fraction
    (``default`` for every other op)."""
    shutil.copytree(RESULTS, dst)
    for path in dst.glob("*/*/result.json"):
        data = json.loads(path.read_text())
        d = slowdowns.get(data["run_name"], default)
        for row in data["rows"]:
            if d and row.get("latency_ms"):
                row["latency_ms"] *= 1 + d
                row["speedup"] = row["latency_base_ms"] / row["latency_ms"]
        path.write_text(json.dumps(data, indent=2))
    return dst


def real_verdict(results: Path, thresholds: Path | None = None) -> GateVerdict:
    """The gate's verdict on ``results`` against baselines/v1, offline (no confirm)."""
    b = load_baseline(BASELINE)
    th = load_thresholds(thresholds, b.manifest.thresholds)
    opts = GateOptions(
        dismissed=dict(DISMISSED),
        baseline_label="baselines/v1",
        results_label="gate-out/results",
        generated="2026-11-29T15:07:00Z",
        thresholds_label=thresholds.name if thresholds else "",
    )
    return run_gate(b, load_results(results), th, opts)


def main(out: Path) -> None:
    """Write the FAIL example of docs/reports.md (report.md, comment.md, report.html,
    junit.xml, verdict.json) into ``out``."""
    import tempfile

    from zlbench.report.html import render_html
    from zlbench.report.junit import render_junit
    from zlbench.report.markdown import render_comment, render_markdown

    with tempfile.TemporaryDirectory() as tmp:
        v = real_verdict(inject(Path(tmp) / "results", FAIL_SLOWDOWNS))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render_markdown(v), encoding="utf-8")
    (out / "comment.md").write_text(render_comment(v, limit=6_000), encoding="utf-8")
    (out / "report.html").write_text(render_html(v), encoding="utf-8")
    (out / "junit.xml").write_text(render_junit(v), encoding="utf-8")
    (out / "verdict.json").write_text(v.model_dump_json(indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import sys

    main(Path(sys.argv[1]))
