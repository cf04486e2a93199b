"""baselines/v7h (docs/baselines.md "v7h"): v7, the whole inventory, with the launch
captures an H100 took of 461 of its 998 ops on 2026-12-07 (forty-third session,
untimed, its shortest ops first): every file of v7 the same, one capture more for each
of those ops, and the ops whose kernels no other process records under the same id
(an address in triton's key, a generated module named by its pid or a hash) matched to
v7's records by all but that (request_diff.twins) and named so in the manifest."""

from __future__ import annotations

from tests.support.trees import captured_version


def test_v7h_is_v7_and_its_captures():
    c, captured = captured_version("v7", "v7h", 461, "NVIDIA H100 80GB HBM3")
    assert (c["ops"], c["rows"]) == (461, 1389)
    assert c["generated_twins"] == ["main/copysign_out", "main/index_copy_"]
    assert set(c["address_twins"]) == {
        "main/copysign_out",
        "main/cumsum_out",
        "main/repeat_interleave_self_tensor",
        "main/repeat_interleave_tensor",
    }
    assert set(c["generated_twins"]) | set(c["address_twins"]) <= captured
