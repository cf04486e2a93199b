"""zlbench.codegen.pinned: of a record pass's compile records, the ones a replay of its
pinned configs launches (the sweep's losers dropped), on v3's real addmm records."""

from __future__ import annotations

from tests.support.trees import shipped
from zlbench.codegen.pinned import pinned_only
from zlbench.models import CodegenIndex, load_json_model
from zlbench.models.autotune import AutotuneRecords

OP = shipped("baselines/v3") / "main" / "addmm__at__test_addmm.py"
KERNEL = "flag_gems.ops.addmm:addmm_kernel"


def _real() -> tuple[CodegenIndex, dict]:
    index = load_json_model(OP / "codegen" / "index.json", CodegenIndex)
    (records,) = (load_json_model(p, AutotuneRecords) for p in OP.glob("autotune_records/*.json"))
    return index, records.kernels


def _loser(index: CodegenIndex, rid: str, **const: int) -> CodegenIndex:
    """``index`` plus a copy of its addmm record with other constexpr values: a config
    the sweep compiled and did not pin."""
    (win,) = (r for r in index.records if r.request.kernel.name == "addmm_kernel")
    names = list(win.request.signature)
    consts = [
        c.model_copy(update={"value": const.get(names[c.path[0]], c.value)})
        for c in win.request.constexprs
    ]
    request = win.request.model_copy(update={"constexprs": consts})
    return index.model_copy(
        update={"records": [*index.records, win.model_copy(update={"id": rid, "request": request})]}
    )


def test_a_replay_baseline_keeps_every_record():
    index, records = _real()
    assert KERNEL in records
    kept, dropped = pinned_only(index, records)
    assert (len(kept.records), dropped) == (len(index.records), 0)


def test_a_config_the_sweep_did_not_pin_is_dropped_and_other_kernels_kept():
    index, records = _real()
    swept = _loser(index, "loser", BLOCK_SIZE_M=128)
    kept, dropped = pinned_only(swept, records)
    assert dropped == 1
    assert [r.id for r in kept.records] == [r.id for r in index.records]  # fill kept: not tuned
    other_warps = _loser(index, "warps")
    last = other_warps.records[-1]
    config = last.request.config.model_copy(update={"num_warps": 8})
    request = last.request.model_copy(update={"config": config})
    other_warps.records[-1] = last.model_copy(update={"request": request})
    assert pinned_only(other_warps, records)[1] == 1


def test_nothing_of_a_kernel_is_dropped_unless_every_pinned_config_matched():
    index, records = _real()
    swept = _loser(index, "loser", BLOCK_SIZE_M=128)
    (key,) = records[KERNEL]
    config = dict(records[KERNEL][key])
    rewritten = {KERNEL: {key: config, "other": {**config, "kwargs": {"BLOCK_SIZE_M": 999}}}}
    assert pinned_only(swept, rewritten)[1] == 0  # a pin no record shows: keep the kernel whole
    assert pinned_only(swept, {KERNEL + "#2": records[KERNEL]})[1] == 1  # second tuner's name
    assert pinned_only(swept, {})[1] == 0  # no records: nothing known, nothing dropped
