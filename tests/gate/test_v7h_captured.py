"""baselines/v7h (docs/baselines.md "v7h"): v7, the whole inventory, with the launch
captures an H100 took of 461 of its 998 ops on 2026-12-07 (forty-third session,
untimed, its shortest ops first): every file of v7 the same, one capture more for each
of those ops, and the ops whose kernels no other process records under the same id
(an address in triton's key, a generated module named by its pid or a hash) matched to
v7's records by all but that (request_diff.twins) and named so in the manifest."""

from __future__ import annotations

from tests.support.trees import added_files, shipped
from zlbench.gate.baselines import verify
from zlbench.models import BaselineManifest, load_yaml_model
from zlbench.models.base import load_json_model
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture


def test_v7h_is_v7_and_its_captures():
    v7, v7h = shipped("baselines/v7"), shipped("baselines/v7h")
    m = load_yaml_model(v7h / "manifest.yaml", BaselineManifest)
    assert (m.name, m.derived_from) == ("v7h", "v7") and verify(v7h, m).ok
    added = added_files(v7, v7h)
    assert len(added) == 461 and all(k.endswith(f"/codegen/{LAUNCHES_JSON}") for k in added)
    captured = {k.rsplit("/codegen/", 1)[0] for k in added}
    gpus = {load_json_model(v7h / k, LaunchCapture).gpu_model for k in added}
    assert gpus == {"NVIDIA H100 80GB HBM3"}
    c = m.summary["captures"]
    assert (c["ops"], c["rows"]) == (461, 1389)
    assert c["generated_twins"] == ["main/copysign_out", "main/index_copy_"]
    assert set(c["address_twins"]) == {
        "main/copysign_out",
        "main/cumsum_out",
        "main/repeat_interleave_self_tensor",
        "main/repeat_interleave_tensor",
    }
    assert set(c["generated_twins"]) | set(c["address_twins"]) <= captured
