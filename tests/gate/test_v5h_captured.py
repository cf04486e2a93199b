"""baselines/v5h (docs/baselines.md "v5h"): v5, the CI default, with the launch captures
an H100 took of it on 2026-12-07 (forty-third session): every file of v5 the same and one
capture more for each of its 54 ops, the 5 whose kernels v5 recorded under triton's
address-keyed cache key (cumsum, sort, argsort, isin, nonzero) matched to v5's records by
all but that key (bebf65e8) and named so in the manifest."""

from __future__ import annotations

from tests.support.trees import captured_version

ADDRESS_KEYED = {"main/argsort", "main/cumsum", "main/isin", "main/nonzero", "main/sort"}


def test_v5h_is_v5_and_its_captures():
    c, captured = captured_version("v5", "v5h", 54, "NVIDIA H100 80GB HBM3")
    assert ADDRESS_KEYED <= captured
    assert (c["ops"], c["rows"], c["without"]) == (54, 99, {})
    assert set(c["address_twins"]) == ADDRESS_KEYED
