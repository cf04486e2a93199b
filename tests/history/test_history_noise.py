"""The usual-noise rule (rustc-perf's Q3 + 3 IQR over the last 30 deltas), pure, and
the history package's place in the layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import zlbench
from zlbench.gate.noise import MIN_POINTS, WINDOW, deltas, usual_noise


def test_deltas_are_relative_and_skip_missing_values():
    assert deltas([100.0, 110.0, None, 99.0, 0.0, 99.0]) == pytest.approx([0.1, 0.1, 0.0])


def test_the_threshold_is_q3_plus_three_iqr_of_the_deltas():
    # deltas 0.01, 0.02, ..., 0.09 alternating up and down around 100
    values, v = [100.0], 100.0
    for i in range(1, 10):
        v = v * (1 + 0.01 * i) if i % 2 else v / (1 + 0.01 * i)
        values.append(v)
    n = usual_noise(values)
    # |v/prev - 1| for a step down by 1/(1+x) is x/(1+x)
    ds = sorted(0.01 * i if i % 2 else 0.01 * i / (1 + 0.01 * i) for i in range(1, 10))
    import statistics

    q1, _, q3 = statistics.quantiles(ds, n=4, method="inclusive")
    assert n is not None and n.points == 10 and n.deltas == 9
    assert n.threshold == pytest.approx(q3 + 3 * (q3 - q1))
    assert n.factor(n.threshold * 2) == pytest.approx(2.0) and n.factor(None) is None


def test_too_little_history_has_no_usual_noise_and_only_the_last_window_counts():
    assert usual_noise([100.0] * (MIN_POINTS - 1)) is None
    assert usual_noise([100.0, None] * MIN_POINTS) is not None
    flat = usual_noise([100.0] * MIN_POINTS)
    assert flat is not None and flat.threshold == 0 and flat.factor(0.05) is None
    # an old wild stretch falls out of the window
    wild = [100.0, 200.0] * 20 + [100.0] * (WINDOW + 1)
    assert usual_noise(wild).threshold == 0 and usual_noise(wild).deltas == WINDOW


def test_the_history_package_imports_only_the_layers_below_it():
    root = Path(zlbench.__file__).parent
    allowed = (
        "zlbench.errors",
        "zlbench.models",
        "zlbench.protocol",
        "zlbench.gate",
        "zlbench.history",
    )
    for path in sorted((root / "history").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zlbench"):
                assert node.module.startswith(allowed), (path.name, node.module)
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert not a.name.startswith(("torch", "triton", "zlbench.cli")), path.name
    trend = root / "report" / "trend.py"
    if trend.exists():
        assert "zlbench.history" not in trend.read_text(encoding="utf-8")
