"""baselines/v7h (docs/baselines.md "v7h"): v7, the whole inventory, with the launch
captures an H100 took of 996 of its 998 ops on 2026-12-07 (forty-third and forty-fourth
sessions, untimed, shortest ops first): every file of v7 the same, one capture more for
each of those ops, and the ops whose kernels no other process records under the same id
(an address in triton's key, a generated module named by its pid or a hash) matched to
v7's records by all but that (request_diff.twins) and named so in the manifest. The two
ops left out are named with their reasons."""

from __future__ import annotations

from tests.support.trees import captured_version, shipped

AMP = "main/amp_foreach_non_finite_check_and_unscale_"


def test_v7h_is_v7_and_its_captures():
    c, captured = captured_version("v7", "v7h", 996, "NVIDIA H100 80GB HBM3")
    assert (c["ops"], c["rows"]) == (996, 6390)
    assert c["generated_twins"] == [
        "main/copysign_",
        "main/copysign_out",
        "main/index_add_",
        "main/index_copy",
        "main/index_copy_",
        "main/unsafe_masked_index_put_accumulate",
    ]
    assert len(c["address_twins"]) == 19
    assert {"main/cumsum_out", "main/nonzero", "main/sort", "main/unique2"} <= set(
        c["address_twins"]
    )
    assert set(c["generated_twins"]) | set(c["address_twins"]) <= captured
    # the two without a capture: one compiled a kernel v7 did not record, one failed
    assert c["unsound"] == [AMP] and AMP not in captured
    assert sum(c["without"].values()) == 2
    assert "main/fused_experts_impl__at__test_fused_moe_int4_w4a16.py" not in captured


# captured again on 2026-12-07 (forty-fifth session, an H100) for their run order: each
# row's launches interleave through a buffer (a radix sort's passes), so without the
# order the row falls back to the op path (models.replay.order_unknown)
ORDERED = ("argsort", "isin", "isin_scalar_tensor", "mode", "sort", "sort_stable", "unique2")


def test_v7h_sorts_carry_their_run_order():
    from zlbench.models.base import load_json_model
    from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture, order_unknown, run_order

    v7h = shipped("baselines/v7h")
    for op in ORDERED:
        cap = load_json_model(v7h / "main" / op / "codegen" / LAUNCHES_JSON, LaunchCapture)
        assert cap.rows, op
        for row in cap.rows:
            assert any(launch.count > 1 for launch in row.launches), (op, row.shape)
            assert run_order(row.launches, row.order) is not None, (op, row.shape)
            assert not order_unknown(row.launches, row.order), (op, row.shape)
            # and without it the same row would fall back
            assert order_unknown(row.launches, None), (op, row.shape)
