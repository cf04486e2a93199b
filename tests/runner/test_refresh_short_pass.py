"""refresh --min-repeats: an op that a cut replay pass never finished enters the
baseline with the passes that did; a pass that ran the op and failed keeps it out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.batch_fakes import make_inventory, write_one_row_pass
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import verify
from zlbench.models import (
    BaselineManifest,
    BaselineResult,
    BatchInfo,
    Environment,
    OpStatus,
    RunStatus,
    load_json_model,
    load_yaml_model,
)
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.info import write_batch_info
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.refresh import RefreshConfig, refresh

ENV = Environment(gpu_model="Test GPU", triton_dist="triton", triton_version="3.6.0")
OPS = ["a", "b", "c"]


def _pass(d: Path, ops: list[str], *, finished: str | None, failed: str = "") -> None:
    """A batch dir of ``ops`` (each a one-row PASS, ``failed`` a FAIL without result)."""
    statuses = []
    for op in ops:
        if op != failed:
            mode = "record" if d.name == "record" else "replay"
            write_one_row_pass(d / "main" / op, op, mode, ENV)
        status = RunStatus.FAIL if op == failed else RunStatus.PASS
        statuses.append(
            OpStatus(repo="main", op=op, run_name=op, status=status, rows=1, run_dir=f"main/{op}")
        )
    write_ops_status(d, statuses)
    write_batch_info(d, BatchInfo(created="2026-01-01T10:00:00Z", finished=finished))


@pytest.fixture
def work(tmp_path) -> Path:
    """record + replay-1 of a, b, c; replay-2 cut before c (no row, no result)."""
    w = tmp_path / "wk"
    _pass(w / "record", OPS, finished="2026-01-01T10:05:00Z")
    _pass(w / "replay-1", OPS, finished="2026-01-01T10:10:00Z")
    _pass(w / "replay-2", OPS[:2], finished=None)
    (w / "replay-2" / "main" / "c").mkdir(parents=True)  # started, killed: no result.json
    return w


def _refresh(tmp_path: Path, work: Path, **kw):
    fg = tmp_path / "fg"
    fg.mkdir(exist_ok=True)
    make_inventory(tmp_path / "ops", "main", OPS)
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
        **kw,
    )
    return refresh(cfg)


@pytest.mark.parametrize("kw", [{}, {"min_repeats": 2}], ids=["without", "too_few_finished"])
def test_without_min_repeats_or_too_few_finished_passes_the_op_is_left_out(tmp_path, work, kw):
    out = _refresh(tmp_path, work, **kw)
    assert out.manifest.ops == ["main/a", "main/b"]
    assert out.excluded == {"main/c": "replay pass 2 left no result.json"}
    assert "short" not in out.manifest.summary


def test_min_repeats_builds_the_missed_op_from_the_passes_that_finished_it(tmp_path, work):
    out = _refresh(tmp_path, work, min_repeats=1)
    m = load_yaml_model(out.out / "manifest.yaml", BaselineManifest)
    assert m.ops == ["main/a", "main/b", "main/c"] and m.repeats == 2
    assert m.summary["short"] == {
        "main/c": "1 of 2 replay passes: replay pass 2 did not finish it (cut before it ended)"
    }
    assert m.summary["excluded"] == {}
    rows = {
        op: load_json_model(out.out / "main" / op / "result.json", BaselineResult).rows
        for op in OPS
    }
    assert [r.repeats for r in rows["a"]] == [2] and [r.repeats for r in rows["c"]] == [1]
    assert rows["c"][0].speedups == [2.0] and rows["c"][0].noise == 0.0
    assert verify(out.out, m).ok


def test_a_pass_that_ran_the_op_and_failed_still_keeps_it_out(tmp_path):
    w = tmp_path / "wk"
    _pass(w / "record", OPS, finished=None)
    _pass(w / "replay-1", OPS, finished=None)
    _pass(w / "replay-2", OPS, finished=None, failed="c")
    out = _refresh(tmp_path, w, min_repeats=1)
    assert "main/c" not in out.manifest.ops
    assert out.excluded == {"main/c": "replay pass 2 left no result.json"}
    assert "short" not in out.manifest.summary


def test_the_span_ends_at_the_last_stamped_end_when_the_last_pass_was_cut(tmp_path, work):
    out = _refresh(tmp_path, work, min_repeats=1)
    # record started 10:00 (created), replay-1 ended 10:10, replay-2 stamped no end
    assert out.manifest.summary["refresh_wall_s"] == 600.0


@pytest.mark.parametrize("bad", ["0", "3"])
def test_min_repeats_outside_one_to_repeats_is_one_line_exit_2(
    tmp_path, work, bad, capsys, monkeypatch
):
    monkeypatch.setenv("ZLBENCH_FLAGGEMS_DIR", str(tmp_path))
    argv = ["baseline", "refresh", "--out", str(tmp_path / "v9"), "--all", "--repeats", "2"]
    code = main([*argv, "--min-repeats", bad, "--from-work", str(work)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: --min-repeats" in err and "Traceback" not in err
    assert not (tmp_path / "v9").exists()


def test_min_repeats_error_is_a_zlbench_error(tmp_path, work):
    with pytest.raises(ZlbenchError, match="--min-repeats"):
        _refresh(tmp_path, work, min_repeats=3)
