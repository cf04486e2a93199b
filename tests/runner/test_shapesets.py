"""The shipped shape sets keep upstream's class-name keys; derive() thins shape lists."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zlbench.runner.catalog.shapesets import derive, derive_file, pick_indices

OPS_DIR = Path(__file__).resolve().parents[2] / "ops"
UPSTREAM = """
one: &one
  shapes: [[64], [1024], [65536], [4096], [2048]]
  shape_desc: "M"
alias_user:
  <<: *one
BlasBenchmark:
  shapes: [[2, 384, 384, 384], [16, 4096, 4096, 4096], [16, 1024, 1024, 1024]]
  shape_desc: "B, M, N, K"
nested:
  shapes: [[[8], [[2]], false], [[32], [[4]], true]]
plain_value: 3
"""


def test_pick_indices():
    shapes = [[64], [1024], [65536], [4096], [2048]]
    # by size: 64, 1024, 2048, 4096, 65536; a third of the way is 1024
    assert pick_indices(shapes, "single") == [1]
    assert pick_indices(shapes, "multi") == [0, 1, 3]  # 64, 1024, 4096 in upstream order
    assert pick_indices([[3, 3]], "single") == [0]
    assert pick_indices([], "multi") == []
    assert pick_indices([[[1], 2], [[3], 4]], "single") == [0]  # not flat: upstream order
    with pytest.raises(ValueError):
        pick_indices([[1]], "double")


def test_derive_keeps_every_key_and_resolves_aliases():
    single = yaml.safe_load(derive_file(UPSTREAM, "single", "test"))
    assert list(single) == ["one", "alias_user", "BlasBenchmark", "nested", "plain_value"]
    assert single["alias_user"] == {"shapes": [[1024]], "shape_desc": "M"}
    assert single["BlasBenchmark"]["shapes"] == [[16, 1024, 1024, 1024]]
    assert single["plain_value"] == 3
    text = derive_file(UPSTREAM, "multi", "test")
    assert "&" not in text and "*" not in text  # no yaml anchors/aliases
    multi = yaml.safe_load(text)
    assert multi["BlasBenchmark"]["shapes"] == [[2, 384, 384, 384], [16, 1024, 1024, 1024]]
    assert multi["one"]["shapes"] == [[64], [1024], [4096]]
    assert derive({"k": {"shape_desc": "x"}}, "single") == {"k": {"shape_desc": "x"}}


@pytest.mark.parametrize("kind,most", [("single", 1), ("multi", 3)])
def test_shipped_shape_sets(kind, most):
    data = yaml.safe_load((OPS_DIR / f"shapes_{kind}.yaml").read_text())
    # upstream class-name keys that the MRO fallback needs (docs/design.md §5.12)
    for key in (
        "Benchmark",
        "BlasBenchmark",
        "UnaryPointwiseBenchmark",
        "NormBenchmark",
        "UnaryReductionBenchmark",
        "TensorSelectBenchmark",
        "GenericBenchmark2DOnly",
    ):
        assert data[key]["shapes"], key
    assert all(len(s) == 4 for s in data["BlasBenchmark"]["shapes"])  # (B, M, N, K)
    for key, entry in data.items():
        if isinstance(entry, dict) and "shapes" in entry:
            assert 1 <= len(entry["shapes"]) <= most, key
