"""The replay's quarantine (models.replay.quarantined): after a row broke the device,
the later rows of its op that launch a kernel of a name it launched are not tried."""

from __future__ import annotations

from zlbench.models.replay import QUARANTINED, LaunchSpec, PlannedRow, quarantined
from zlbench.models.run import RowKey


def launch(name: str, kid: str | None = None) -> LaunchSpec:
    return LaunchSpec(kernel_id=kid or f"id-{name}", kernel=name, grid=[1, 1, 1], args=[])


def row(op: str, shape: str, *names: str) -> PlannedRow:
    key = RowKey(repo="main", run_name=op, op=op, dtype="bfloat16", shape=shape)
    return PlannedRow(key=key, launches=[launch(n) for n in names])


ROWS = [
    row("moe", "[1]", "align", "fused_moe"),  # 0: before the culprit
    row("moe", "[2]", "align", "fused_moe"),  # 1: the culprit
    row("moe", "[3]", "fused_moe"),  # 2: shares fused_moe
    row("moe", "[4]", "sum_kernel"),  # 3: same op, other kernels
    row("other", "[5]", "fused_moe"),  # 4: the kernel's name, another op
    row("moe", "[6]", "align"),  # 5: shares align
]


def test_later_rows_of_the_op_sharing_a_kernel_name_are_quarantined_with_why():
    got = quarantined(ROWS, 1)
    assert sorted(got) == [2, 5]
    assert got[2] == QUARANTINED.format(kernel="fused_moe")
    assert got[5] == QUARANTINED.format(kernel="align")
    assert got[2] == "not tried: kernel `fused_moe` broke the replay in an earlier row of this op"


def test_the_name_not_the_id_decides_another_specialisation_is_quarantined_too():
    rows = [PlannedRow(key=ROWS[1].key, launches=[launch("fused_moe", "a")]),
            PlannedRow(key=ROWS[2].key.model_copy(update={"shape": "[9]"}),
                       launches=[launch("fused_moe", "b")])]  # fmt: skip
    assert list(quarantined(rows, 0)) == [1]


def test_the_last_row_or_an_op_of_its_own_quarantines_nothing():
    assert quarantined(ROWS, len(ROWS) - 1) == {}
    assert quarantined(ROWS, 4) == {}
