"""The shipped thresholds example loads, and docs/thresholds.md documents every key."""

from __future__ import annotations

from pathlib import Path

import yaml

from zlbench.gate.thresholds import load_thresholds
from zlbench.models import ThresholdDefaults, ThresholdsFile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ops" / "thresholds.example.yaml"
DOC = ROOT / "docs" / "thresholds.md"


def test_the_example_loads_and_sets_every_key():
    th = load_thresholds(EXAMPLE, ThresholdDefaults(default=0.1))
    raw = yaml.safe_load(EXAMPLE.read_text())
    assert set(raw) == set(ThresholdsFile.model_fields)
    assert th.default == 0.05 and th.ops == {"softmax_backward": 0.08}
    assert [(o.op, o.threshold) for o in th.rows] == [("layer_norm", 0.07), ("mm", 0.06)]


def test_the_doc_names_every_key_and_the_example():
    doc = DOC.read_text()
    for key in ThresholdsFile.model_fields:
        assert f"| `{key}` |" in doc, key
    assert "ops/thresholds.example.yaml" in doc
