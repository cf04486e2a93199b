"""baselines/v5h (docs/baselines.md "v5h"): v5, the CI default, with the launch captures
an H100 took of it on 2026-12-07 (forty-third session): every file of v5 the same and one
capture more for each of its 54 ops, the 5 whose kernels v5 recorded under triton's
address-keyed cache key (cumsum, sort, argsort, isin, nonzero) matched to v5's records by
all but that key (bebf65e8) and named so in the manifest."""

from __future__ import annotations

from tests.support.trees import added_files, shipped
from zlbench.gate.baselines import verify
from zlbench.models import BaselineManifest, load_yaml_model
from zlbench.models.base import load_json_model
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture

ADDRESS_KEYED = {"main/argsort", "main/cumsum", "main/isin", "main/nonzero", "main/sort"}


def test_v5h_is_v5_and_its_captures():
    v5, v5h = shipped("baselines/v5"), shipped("baselines/v5h")
    m = load_yaml_model(v5h / "manifest.yaml", BaselineManifest)
    assert (m.name, m.derived_from) == ("v5h", "v5") and verify(v5h, m).ok
    added = added_files(v5, v5h)
    assert len(added) == 54 and all(k.endswith(f"/codegen/{LAUNCHES_JSON}") for k in added)
    assert ADDRESS_KEYED <= {k.rsplit("/codegen/", 1)[0] for k in added}
    gpus = {load_json_model(v5h / k, LaunchCapture).gpu_model for k in added}
    assert gpus == {"NVIDIA H100 80GB HBM3"}
    c = m.summary["captures"]
    assert (c["ops"], c["rows"], c["without"]) == (54, 99, {})
    assert set(c["address_twins"]) == ADDRESS_KEYED
