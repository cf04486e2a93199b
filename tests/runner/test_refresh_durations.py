"""A refreshed baseline ships the first replay pass's ops_status.csv (the recorded
seconds per op of a replay), under the manifest's content hashes, and a gate's shard
deal balances by it (docs/baselines.md "Durations for balancing"). The batches are
synthetic (a fake batch runner), so no GPU or compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory, refresh_with_fake_batches, write_one_row_pass
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import sha256_file, verify
from zlbench.gate.load import load_baseline
from zlbench.models import (
    BaselineManifest,
    Environment,
    OpStatus,
    RunStatus,
    dump_yaml_model,
    load_yaml_model,
)
from zlbench.runner.baseline_batch import baseline_durations
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.batch.plan import plan_selection, recorded_durations, selection_costs
from zlbench.runner.batch.status import write_ops_status

ENV = Environment(gpu_model="NVIDIA H200", gpu_count=1, triton_version="3.6.0")
OPS = ["a", "b", "c", "d"]
# seconds per op of each pass: only replay-1's may end up in the baseline
SECONDS = {
    "record": {"a": 7.0, "b": 7.0, "c": 7.0, "d": 7.0},
    "replay-1": {"a": 90.0, "b": 10.0, "c": 10.0, "d": 10.0},
    "replay-2": {"a": 10.0, "b": 10.0, "c": 10.0, "d": 90.0},
}


def _write_pass(out: Path) -> BatchOutcome:
    statuses = []
    for op in OPS:
        mode = "record" if out.name == "record" else "replay"
        write_one_row_pass(out / "main" / op, op, mode, ENV)
        seconds = SECONDS[out.name][op]
        statuses.append(
            OpStatus(
                repo="main",
                op=op,
                run_name=op,
                status=RunStatus.PASS,
                rows=1,
                seconds=seconds,
                run_dir=f"main/{op}",
            )
        )
    write_ops_status(out, statuses)
    return BatchOutcome(out_dir=out, statuses=statuses, counts={}, summary_rows=0, exit_code=0)


def _fake_batch(cfg: BatchConfig) -> BatchOutcome:
    return _write_pass(Path(cfg.out_dir))


@pytest.fixture
def base(tmp_path) -> Path:
    return refresh_with_fake_batches(tmp_path, _fake_batch, keep_work=tmp_path / "work")


def _manifest(base: Path) -> BaselineManifest:
    return load_yaml_model(base / "manifest.yaml", BaselineManifest)


def test_refresh_keeps_the_first_replay_pass_ops_status_under_the_hashes(base, tmp_path):
    shipped = base / "ops_status.csv"
    assert shipped.read_bytes() == (tmp_path / "work" / "replay-1" / "ops_status.csv").read_bytes()
    assert _manifest(base).files["ops_status.csv"] == sha256_file(shipped)
    assert verify(base, _manifest(base)).ok
    assert load_baseline(base).path == base


def test_the_gate_reads_the_baselines_recorded_durations(base):
    want = {"main/a": 90.0, "main/b": 10.0, "main/c": 10.0, "main/d": 10.0}
    assert baseline_durations(base) == want
    cfg = BatchConfig(out_dir=base.parent / "o", flaggems_dirs={}, ops_dir=base, replay_root=base)
    assert recorded_durations(cfg) == want


@pytest.mark.parametrize("how", ["content changed", "missing"])
def test_a_touched_ops_status_is_refused(base, how):
    shipped = base / "ops_status.csv"
    if how == "content changed":
        shipped.write_text(shipped.read_text().replace("90.0", "1.0"))
    else:
        shipped.unlink()
    problems = verify(base, _manifest(base)).problems
    assert any(p.startswith(f"ops_status.csv: {how}") for p in problems), problems
    with pytest.raises(ZlbenchError, match="does not match its manifest: ops_status.csv"):
        load_baseline(base)


def test_an_ops_status_added_to_a_baseline_without_one_is_refused(base):
    """A baseline recorded without durations (v1) cannot be handed some afterwards."""
    m = _manifest(base)
    shipped = base / "ops_status.csv"
    m.files.pop("ops_status.csv")
    dump_yaml_model(base / "manifest.yaml", m)
    assert any(p == "ops_status.csv: not listed in manifest.yaml" for p in verify(base, m).problems)
    shipped.unlink()
    assert verify(base, m).ok  # without it, the v1 shape verifies


def test_shards_of_a_replay_balance_by_the_baselines_durations(base, tmp_path):
    """a (90 s) gets a shard of its own; b, c, d (10 s each) share the other. The hash
    deal (no durations) would put two ops in each shard."""
    ops_dir = tmp_path / "ops"
    make_inventory(ops_dir, "main", OPS)

    def shard(k: int, replay_root: Path | None) -> list[str]:
        cfg = BatchConfig(
            out_dir=tmp_path / "o",
            flaggems_dirs={},
            ops_dir=ops_dir,
            all_ops=True,
            shard=(k, 2),
            replay_root=replay_root,
        )
        return sorted(op.run_name for op in plan_selection(cfg).ops)

    balanced = sorted([shard(1, base), shard(2, base)])
    assert balanced == [["a"], ["b", "c", "d"]]
    assert sorted(len(shard(k, None)) for k in (1, 2)) == [2, 2]


def test_a_replay_asking_no_dtypes_costs_each_op_its_recorded_seconds(tmp_path):
    """A replayed op asked for no dtypes measures its own again, as recorded: a one-dtype
    op of 30 s costs 30 s, not three dtypes' worth (v7h's int4 MoE op: 419 s instead of
    140 by the shard deal, the fifty-first session). Asked dtypes, or record mode, scale
    the per-dtype seconds as before."""
    root, ops_dir = tmp_path / "root", tmp_path / "ops"
    make_inventory(ops_dir, "main", ["one", "three"])
    used = {"one": "float32", "three": "float16,float32,bfloat16"}
    write_ops_status(root, [
        OpStatus(repo="main", op=op, run_name=op, status=RunStatus.PASS, rows=1,
                 seconds=30.0, run_dir=f"main/{op}", dtype_used=d)
        for op, d in used.items()
    ])  # fmt: skip
    keys = ["main/one", "main/three"]

    def costs(**kw) -> dict[str, float]:
        cfg = BatchConfig(out_dir=tmp_path / "o", flaggems_dirs={}, ops_dir=ops_dir, **kw)
        return selection_costs(cfg, keys).seconds

    assert costs(replay_root=root) == {"main/one": 30.0, "main/three": 30.0}
    assert costs(replay_root=root, dtypes=["float16"]) == {"main/one": 30.0, "main/three": 10.0}
    record = costs(durations={"main/one": 30.0, "main/three": 10.0})  # per dtype, 3 each
    assert record == {"main/one": 90.0, "main/three": 30.0}
