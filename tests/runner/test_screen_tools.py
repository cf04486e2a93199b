"""benchmarks/screen_speed.py and benchmarks/phase_breakdown.py on small made-up
batch dirs: rows per GPU-minute, A/A noise, and the phase sums."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from zlbench.models import dump_json_model
from zlbench.models.timings import TIMINGS_JSON, OpTimings, SidePhases

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
HEAD = "repo,run_name,op,dtype,shape,occurrence,status,latency_base_ms,latency_ms,speedup"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # a dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def _batch(path: Path, speedups: list[float], wall: float, latency: float = 1.0) -> Path:
    path.mkdir(parents=True)
    lines = [HEAD] + [
        f"main,op{i},op{i},bfloat16,[{i}],0,SUCCESS,1.0,{latency},{s}"
        for i, s in enumerate(speedups)
    ]
    lines.append("main,bad,bad,bfloat16,[9],0,FAILED,,,")
    (path / "summary.csv").write_text("\n".join(lines) + "\n")
    (path / "wall_s").write_text(f"{wall}\n")
    return path


def test_screen_speed_rates_rows_per_gpu_minute_and_aa_noise(tmp_path):
    speed = _load("screen_speed")
    a = _batch(tmp_path / "a", [1.0, 2.0, 4.0, 1.0], 120)
    b = _batch(tmp_path / "b", [1.1, 2.0, 4.0, 0.9], 60)
    assert speed.noise(speed.rows_of(a), speed.rows_of(b))[2] == 4
    line = speed.line("old", [a, b])
    assert line == "| old | 4 | 120 / 60 | 2.0 / 4.0 | 5.00% | 10.00% | 4 |"


def test_phase_breakdown_sums_the_ops_of_a_batch(tmp_path):
    pb = _load("phase_breakdown")
    batch = tmp_path / "b"
    for name, first in (("x", True), ("y", False)):
        t = OpTimings(run_name=name, first_in_process=first, call_s=3.0, setup_s=0.5)
        t.torch = SidePhases(calls=1, first_call_s=1.0, replays_s=0.2)
        t.gems = SidePhases(calls=1, first_call_s=0.5, warmup_s=0.3)
        if first:
            t.process_start_s, t.collection_s = 14.0, 2.0
        (batch / "main" / name).mkdir(parents=True)
        dump_json_model(batch / "main" / name / TIMINGS_JSON, t)
    (batch / "wall_s").write_text("30\n")
    totals = pb.breakdown(batch)
    assert totals["ops"] == 2
    assert totals["process start + imports"] == 14.0 and totals["collection"] == 2.0
    assert totals["torch: first call"] == 2.0 and totals["gems: warmup"] == 0.6
    assert abs(totals["body other"] - 2 * (3.0 - 2.0)) < 1e-9
    assert "| process start + imports | 14.0 | 47% |" in pb.render(batch)


def test_phase_breakdown_refuses_a_dir_that_is_no_batch_in_one_line(tmp_path, capsys):
    pb = _load("phase_breakdown")
    good = tmp_path / "b"
    good.mkdir()
    (good / "wall_s").write_text("30\n")
    assert pb.main([str(good), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert (
        err.strip()
        == f"phase_breakdown: {tmp_path / 'nope'} is no batch dir (no batch.json nor wall_s)"
    )
    assert pb.main(["--help"]) == 0 and "BATCH_DIR" in capsys.readouterr().err


def test_screen_speed_compares_each_path_with_the_first(tmp_path):
    speed = _load("screen_speed")
    old = [_batch(tmp_path / f"old{i}", [1.0, 2.0, 4.0, 1.0], 120) for i in (1, 2)]
    new = [_batch(tmp_path / f"new{i}", [1.0, 2.0, 4.0, 1.0], 40) for i in (1, 2)]
    for run in new:  # the new path's FlagGems latency of op0 5 % slower in both runs
        text = (run / "summary.csv").read_text().replace(",1.0,1.0,1.0\n", ",1.0,1.05,1.0\n", 1)
        (run / "summary.csv").write_text(text)
    line = speed.versus("new", new, old)
    assert line == "| new | 3.00x | 0.00% | 5.00% | 8 |"


def test_screen_speed_leaves_out_a_stopped_run(tmp_path, capsys):
    """A stage cut by the device call's limit has wall_s but no summary.csv: the report
    names it and goes on with the complete runs (one run: no A/A)."""
    speed = _load("screen_speed")
    a = _batch(tmp_path / "a", [1.0, 2.0], 60)
    b1 = _batch(tmp_path / "b1", [1.0, 2.0], 30)
    stopped = tmp_path / "b2"
    stopped.mkdir()
    (stopped / "wall_s").write_text("16.1\n")
    assert speed.main([f"old={a},{a}", f"new={b1},{stopped}"]) == 0
    out, err = capsys.readouterr()
    assert f"{stopped}: no summary.csv or wall_s (stopped?): left out" in err
    assert "| new | 2 | 30 | 4.0 | – | – | 0 |" in out
    assert "| new | 2.00x | 0.00% | 0.00% | 2 |" in out
    # run 1 stopped: run 2 is compared with the first label's run 2, never its run 1
    a2 = _batch(tmp_path / "a2", [1.0, 2.0], 60, latency=2.0)
    b2 = _batch(tmp_path / "b2x", [1.0, 2.0], 30)
    assert speed.main([f"old={a},{a2}", f"new={stopped},{b2}"]) == 0
    out = capsys.readouterr().out
    assert "| new | 2.00x | 50.00% | 50.00% | 2 |" in out


def test_screen_speed_help_prints_its_usage(capsys):
    speed = _load("screen_speed")
    assert speed.main(["--help"]) == 0 and speed.main([]) == 2
    assert "LABEL=DIR_A1,DIR_A2" in capsys.readouterr().err


def test_ops_by_seconds_lists_a_capture_the_shortest_ops_left_in_a_range(tmp_path, capsys):
    """benchmarks/ops_by_seconds.py: a capture's --ops-file, shortest first (a batch
    deals longest first, so a call cut at its limit then captures the most ops), less
    the ops a batch ran elsewhere."""
    from tests.support.zlsynth import write_status
    from zlbench.models import OpStatus

    def st(op: str, seconds: float, status: str = "PASS") -> OpStatus:
        return OpStatus(repo="main", op=op, run_name=op, status=status, rows=1,
                        seconds=seconds, run_dir=f"main/{op}")  # fmt: skip

    pick = _load("ops_by_seconds")
    base, done = tmp_path / "bl", tmp_path / "done"
    base.mkdir(), done.mkdir()
    write_status(base, st("c", 9.0), st("a", 4.0), st("b", 6.0), st("d", 30.0), st("e", 7.0))
    write_status(done, st("e", 90.0, "TIMEOUT"))  # ran elsewhere, timed out: not again
    assert pick.ops_by_seconds(base) == ["main/a", "main/b", "main/e", "main/c", "main/d"]
    assert pick.ops_by_seconds(base, 5, 10, [done]) == ["main/b", "main/c"]
    # an op the baseline holds a capture of (a capture version): not again, unless asked
    (base / "main" / "b" / "codegen").mkdir(parents=True)
    (base / "main" / "b" / "codegen" / "launches.json").write_text("{}")
    assert pick.ops_by_seconds(base, 5, 10, [done]) == ["main/c"]
    assert pick.ops_by_seconds(base, 5, 10, [done], recapture=True) == ["main/b", "main/c"]
    # a batch that replayed another baseline ran none of this one's ops
    from zlbench.models import BatchInfo, dump_json_model

    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.yaml").write_text("name: v5h\n")
    (base / "manifest.yaml").write_text("name: v7\n")
    ran_c = tmp_path / "ran_c"
    ran_c.mkdir()
    write_status(ran_c, st("c", 9.0))
    for root, left in ((other, ["main/c"]), (base, [])):
        info = BatchInfo(created="2026-12-07T08:14:12Z", mode="replay", replay_root=str(root))
        dump_json_model(ran_c / "batch.json", info)
        assert pick.ops_by_seconds(base, 5, 10, [done, ran_c]) == left
    assert pick.main([str(base), "--upto", "6"]) == 0
    assert capsys.readouterr().out == "main/a\n"
    assert pick.main([str(base), "--upto", "6", "--recapture"]) == 0
    assert capsys.readouterr().out == "main/a\nmain/b\n"
    assert pick.main([str(base), "--done", str(tmp_path)]) == 2  # no ops_status.csv there
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "ops_status.csv" in err


def test_records_overlap_finds_configs_two_ops_differ_on_and_kernels_an_op_left_unrecorded(
    tmp_path, capsys
):
    """benchmarks/records_overlap.py (docs/design.md §5 item 25): a kernel and key that two
    ops record with different configs, an op that launched a tuned kernel timed but does
    not record it, and one whose timed launch ran a config it does not pin."""
    import json

    from tests.support.cgsynth import record, request, stage_texts, use, write_index

    tool = _load("records_overlap")
    # cgsynth's request(name, block): constexpr BLOCK=block, num_warps 4, num_stages 3
    sqrt = "flag_gems.ops.x:sqrt_kernel"
    cfg = {"kwargs": {"BLOCK": 256}, "num_warps": 4, "num_stages": 3}
    other = {**cfg, "kwargs": {"BLOCK": 512}}

    def op(name: str, records: dict, launched: list[tuple[str, bool]], block=256) -> None:
        d = tmp_path / "bl" / "main" / name
        (d / "autotune_records").mkdir(parents=True)
        body = {"schema_version": 1, "kind": "autotune_record_set", "kernels": records}
        (d / "autotune_records" / f"{name}.json").write_text(json.dumps(body))
        ran(tmp_path / "bl", name, launched, block)

    def ran(root, name: str, launched: list[tuple[str, bool]], block: int) -> None:
        uses = {t: [use(name).model_copy(update={"timed": t})] for t in (True, False)}
        recs = [
            record(request(k.split(":")[1], block), stage_texts(), uses[t]) for k, t in launched
        ]
        write_index(root / "main" / name / "codegen", recs, [])

    op("sqrt", {sqrt: {"[16]": cfg, "[32]": cfg}}, [(sqrt, True)])
    op("sqrt_", {sqrt: {"[16]": other, "[32]": cfg}}, [(sqrt, True)])  # 256 for one key
    op("rsqrt", {}, [(sqrt, True)])  # launched it timed, recorded nothing
    op("cbrt", {sqrt: {"[64]": other}}, [(sqrt, True)])  # ran 256, pins only 512
    op("abs", {}, [(sqrt, False), ("flag_gems.ops.x:other", True)])  # untimed, or untuned
    o = tool.overlap(tmp_path / "bl")
    assert o.keys == 3 and len(o.shared) == 2
    assert list(o.differing) == [(sqrt, "[16]")]
    assert o.differing_ops() == {"main/sqrt", "main/sqrt_"}
    assert o.unrecorded == {"main/rsqrt": [sqrt]}
    assert o.ran_unpinned == {"main/cbrt": [sqrt]}
    assert tool.main([str(tmp_path / "bl")]) == 0
    out = capsys.readouterr().out
    assert "differing configs: 1 (2 ops)" in out and "main/rsqrt: " + sqrt in out
    assert "ran a config they do not pin: 1\n  main/cbrt: " + sqrt in out
    # --batch: a replay batch's indexes against the baseline's pins: sqrt ran 512 there
    # (sqrt_'s config for [16], none of its own), cbrt its own 512
    batch = tmp_path / "capwork" / "replay"
    ran(batch, "sqrt", [(sqrt, True)], 512)
    ran(batch, "cbrt", [(sqrt, True)], 512)
    b = tool.overlap(tmp_path / "bl", batch)
    assert b.ran_unpinned == {"main/sqrt": [sqrt]} and b.unrecorded == {}
    assert tool.main([str(tmp_path / "bl"), "--batch", str(batch)]) == 0
    assert "ran a config they do not pin: 1\n  main/sqrt: " + sqrt in capsys.readouterr().out
    assert tool.main([str(tmp_path / "bl"), "--batch", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_replay_position_probes_are_the_gates_plan_but_for_what_they_name():
    """benchmarks/replay_position.py: "on" and "each" are the gate's own plan (a zeroing
    flush, a restore before each timed call); "read", "off" and "sample" change only the
    field they name."""
    from zlbench.models.replay import ReplayPlanFile

    probe = _load("replay_position").probe_update
    gate = ReplayPlanFile()
    assert probe(0, "on", "each") == {
        "settle": gate.settle, "flush": gate.flush, "flush_by": gate.flush_by,
        "restore_each": gate.restore_each,
    }  # fmt: skip
    assert probe(2, "read", "sample") == {
        "settle": 2, "flush": True, "flush_by": "read", "restore_each": False
    }  # fmt: skip
    assert probe(0, "off", "each")["flush"] is False
