"""refresh names the true reason an op is left out: a row measured in every replay pass
but scattered past MAX_NOISE is "too noisy" (with its noise and MAX_NOISE), not "no row
measured in every replay pass" (issue 47)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory
from zlbench.gate.baselines import why_no_rows
from zlbench.models import (
    MAX_NOISE,
    BatchInfo,
    Environment,
    OpStatus,
    Row,
    RunResult,
    RunStatus,
    dump_json_model,
)
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.refresh import RefreshConfig, refresh

ENV = Environment(gpu_model="Test GPU", triton_dist="triton", triton_version="3.6.0")


def _result(op: str, mode: str, rows: list[tuple[str, float]]) -> RunResult:
    """A PASS of ``op`` with one float32 row per (shape, speedup)."""
    return RunResult(
        repo="main",
        run_name=op,
        op=op,
        status=RunStatus.PASS,
        mode=mode,
        timing="cudagraph",
        rows=[
            Row(op=op, dtype="float32", shape=s, latency_base_ms=x, latency_ms=1.0, speedup=x)
            for s, x in rows
        ],
        environment=ENV,
    )


# op -> its rows per pass (record, replay-1, replay-2): (shape, speedup)
PASSES = {
    "steady": [[("[64]", 2.0)], [("[64]", 2.0)], [("[64]", 2.02)]],
    "noisy": [[("[64]", 2.0)], [("[64]", 1.0)], [("[64]", 4.0)]],  # median 2.5: noise 60 %
    "gone": [[("[64]", 2.0)], [("[64]", 2.0)], [("[128]", 2.0)]],  # [64] not in replay 2
    "both": [
        [("[64]", 2.0), ("[128]", 2.0)],
        [("[64]", 1.0), ("[128]", 2.0)],
        [("[64]", 3.0)],  # [64]: noise 50 % (MAX_NOISE or more); [128] not in replay 2
    ],
}


@pytest.fixture
def work(tmp_path) -> Path:
    w = tmp_path / "wk"
    for i, name in enumerate(["record", "replay-1", "replay-2"]):
        statuses = []
        for op, passes in PASSES.items():
            mode = "record" if name == "record" else "replay"
            dump_json_model(w / name / "main" / op / "result.json", _result(op, mode, passes[i]))
            statuses.append(
                OpStatus(repo="main", op=op, run_name=op, status=RunStatus.PASS, rows=1,
                         run_dir=f"main/{op}")
            )  # fmt: skip
        write_ops_status(w / name, statuses)
        write_batch_info(w / name, BatchInfo(created="2026-01-01T10:00:00Z", finished=None))
    return w


def test_each_left_out_op_is_named_with_its_own_reason(tmp_path, work):
    fg = tmp_path / "fg"
    fg.mkdir()
    make_inventory(tmp_path / "ops", "main", list(PASSES))
    cfg = RefreshConfig(
        out=tmp_path / "baselines" / "v9",
        batch=BatchConfig(
            out_dir=tmp_path / "unused",
            flaggems_dirs={"main": fg},
            ops_dir=tmp_path / "ops",
            all_ops=True,
        ),
        repeats=2,
        from_work=work,
        zlbench_commit="abc",
        progress=io.StringIO(),
    )
    out = refresh(cfg)
    assert out.manifest.ops == ["main/steady"]
    assert MAX_NOISE == 0.5  # the figures below
    assert out.excluded == {
        "main/noisy": "every row too noisy: 1 row(s) measured in all 2 replay passes "
        "scatter by MAX_NOISE (50 %) or more (noise 60.0 %)",
        "main/gone": "no row measured in every replay pass",
        "main/both": "no row usable: 1 row(s) measured in all 2 replay passes scatter by "
        "MAX_NOISE (50 %) or more (noise 50.0 %); 1 row(s) not measured in every replay pass",
    }
    assert "leaving out main/noisy: every row too noisy" in cfg.progress.getvalue()


def test_several_noisy_rows_give_the_range_of_their_noise():
    reps = [
        _result("x", "replay", [("[1]", 1.0), ("[2]", 1.0)]),
        _result("x", "replay", [("[1]", 3.0), ("[2]", 9.0)]),
    ]  # medians 2 and 5: noise 50 % and 80 %
    assert why_no_rows(reps) == (
        "every row too noisy: 2 row(s) measured in all 2 replay passes scatter by "
        "MAX_NOISE (50 %) or more (noise 50.0 % to 80.0 %)"
    )


def test_a_failed_row_is_not_measured_in_every_pass():
    ok = _result("x", "replay", [("[1]", 2.0)])
    failed = ok.model_copy(update={"rows": [ok.rows[0].model_copy(update={"status": "FAILED"})]})
    assert why_no_rows([ok, failed]) == "no row measured in every replay pass"
