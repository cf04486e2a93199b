"""Autotune record & replay through the real plugins (docs/design.md §5.1-7).

Each test runs subprocess pytest sessions (``TRITON_INTERPRET=1``) of a small
test file that calls the fake FlagGems ops, in record then replay mode.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from autotune_harness import run_plugins

pytest.importorskip("triton")

SOFTMAX = "flag_gems.ops.softmax:softmax_kernel"
MM = "flag_gems.ops.mm:mm_kernel"
SUM = "flag_gems.ops.sum:sum_kernel"
ADD = "flag_gems.ops.add:add_kernel"
F32 = '"torch.float32"'

OPS_TESTS = textwrap.dedent(
    """
    import importlib, json
    import torch
    import flag_gems

    mm_mod = importlib.import_module("flag_gems.ops.mm")
    MM_SHAPES = [(40, 24, 48), (20, 24, 48), (24, 16, 32)]

    def test_softmax():
        x = torch.randn(4, 100)
        torch.testing.assert_close(flag_gems.ops.softmax(x), torch.softmax(x, -1))

    def test_mm():
        chosen = {}
        for m, n, k in MM_SHAPES:
            a, b = torch.randn(m, k), torch.randn(k, n)
            torch.testing.assert_close(flag_gems.ops.mm(a, b), a @ b, atol=1e-3, rtol=1e-3)
            chosen[f"{m},{n},{k}"] = mm_mod.mm_kernel.best_config.all_kwargs()
        print("MM_CONFIGS=" + json.dumps(chosen, sort_keys=True))
        print(f"MM_BENCH_CALLS={mm_mod.mm_kernel.bench_calls}")

    def test_sum_and_add():
        x = torch.randn(1000)
        torch.testing.assert_close(flag_gems.ops.sum(x), x.sum(), atol=1e-3, rtol=1e-3)
        torch.testing.assert_close(flag_gems.ops.add(x, x), x + x)
    """
)


def mm_key(m: int, n: int, k: int) -> str:
    return f"[{m},{n},{k},{F32},{F32},{F32}]"


def mm_bench_calls(run) -> int:
    (line,) = run.lines("MM_BENCH_CALLS=")
    return int(line.split("=")[1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, object]:
    """One record run of the ops file on a fresh tuning DB (shared by the tests below)."""
    tmp = tmp_path_factory.mktemp("autotune")
    (tmp / "test_ops.py").write_text(OPS_TESTS)
    run = run_plugins(tmp, "test_ops.py", "rec")
    assert run.rc == 0, run.out
    return tmp, run


def test_record_writes_the_chosen_configs_per_kernel_and_key(recorded):
    _, run = recorded
    records = run.records()
    assert set(records[MM]) == {mm_key(40, 24, 48), mm_key(20, 24, 48), mm_key(24, 16, 32)}
    assert list(records[SOFTMAX]) == [f"[100,{F32},{F32}]"]
    chosen = run.printed_json("MM_CONFIGS")
    for (shape, kwargs), key in zip(sorted(chosen.items()), sorted(records[MM]), strict=True):
        cfg = records[MM][key]
        assert {**cfg["kwargs"], **{k: v for k, v in cfg.items() if k != "kwargs"}} == kwargs, shape
    assert mm_bench_calls(run) == 9  # 3 shapes x 3 configs: a real sweep happened


def test_single_config_recorded_and_pre_hook_configs_dropped(recorded):
    _, run = recorded
    records = run.records()
    # docs/design.md §5.3: the single-config kernel is recorded with configs[0]
    assert records[ADD] == {
        f"[1000,{F32},{F32},{F32}]": {
            "kwargs": {"BLOCK": 256},
            "num_ctas": 1,
            "num_stages": 3,
            "num_warps": 4,
        }
    }
    # docs/design.md §5.4: a plain Autotuner config with a pre_hook is not recorded
    assert SUM not in records
    assert run.markers() == []


def test_replay_reproduces_configs_and_marks_the_pre_hook_kernel_it_tuned_live(recorded):
    tmp, rec = recorded
    run = run_plugins(tmp, "test_ops.py", "rep", mode="replay", replay_from=rec.run_dir)
    assert run.rc == 0, run.out
    assert run.printed_json("MM_CONFIGS") == rec.printed_json("MM_CONFIGS")
    assert mm_bench_calls(run) == 0
    summary = run.summary()
    assert summary["mode"] == "replay"
    assert int(summary["pinned"]) > 0
    # sum (pre_hook, not recorded) is the only kernel that still tunes: an unpinned
    # measurement, so a fallback (the gate fails it), never a silent one
    assert int(summary["bench_calls"]) == 2
    assert run.markers() == [f"AUTOTUNE_REPLAY_FALLBACK reason=pre_hook_dropped kernel={SUM}"]
    result = json.loads((run.run_dir / "result.json").read_text())
    assert [(m["reason"], m["kernel"]) for m in result["markers"]] == [("pre_hook_dropped", SUM)]


def test_warm_sqlite_db_is_still_recorded(recorded):
    """docs/design.md §5.1: the second record run on the warm DB tunes nothing, yet
    records all keys."""
    tmp, first = recorded
    run = run_plugins(tmp, "test_ops.py", "rec-warm")
    assert run.rc == 0, run.out
    assert mm_bench_calls(run) == 0  # every mm key came from the warm sqlite DB
    assert run.records()[MM] == first.records()[MM]


def _edited_records(tmp: Path, rec, name: str) -> Path:
    """A copy of the recorded run dir whose mm / softmax records are edited:

    * mm 40x24x48: a different valid config than the warm DB holds (must be pinned);
    * mm 20x24x48: removed (key_missing);
    * mm 24x16x32: BLOCK_K=128 fails the kernel's static_assert (sqlite: _no_evict);
    * softmax: BLOCK_N=2048 fails the kernel's static_assert (dict cache: evicted).
    """
    records = rec.records()
    other = {"kwargs": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, "num_warps": 1}
    other.update(num_stages=2, num_ctas=1)
    assert records[MM][mm_key(40, 24, 48)] != other
    records[MM][mm_key(40, 24, 48)] = other
    del records[MM][mm_key(20, 24, 48)]
    records[MM][mm_key(24, 16, 32)]["kwargs"]["BLOCK_K"] = 128
    (key,) = records[SOFTMAX]
    records[SOFTMAX][key]["kwargs"]["BLOCK_N"] = 2048
    out = tmp / name / "autotune_records"
    out.mkdir(parents=True)
    (out / "op.json").write_text(json.dumps(records))
    return out.parent


def test_replay_fallbacks_pin_over_warm_db_and_mark_the_rest(recorded):
    tmp, rec = recorded
    source = _edited_records(tmp, rec, "edited")
    run = run_plugins(tmp, "test_ops.py", "rep-edit", mode="replay", replay_from=source)
    assert run.rc == 0, run.out  # every fallback still runs the op
    chosen = run.printed_json("MM_CONFIGS")
    # docs/design.md §5.2: injected although the warm sqlite DB holds another config for this key
    assert chosen["40,24,48"] == {
        "BLOCK_M": 16,
        "BLOCK_N": 16,
        "BLOCK_K": 16,
        "num_warps": 1,
        "num_ctas": 1,
        "num_stages": 2,
    }
    assert sorted(run.markers()) == sorted(
        [
            f"AUTOTUNE_REPLAY_FALLBACK reason=compile_InterpreterError kernel={SOFTMAX}",
            f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel={MM}",
            f"AUTOTUNE_REPLAY_FALLBACK reason=compile_InterpreterError_no_evict kernel={MM}",
            f"AUTOTUNE_REPLAY_FALLBACK reason=pre_hook_dropped kernel={SUM}",
        ]
    )
    result = json.loads((run.run_dir / "result.json").read_text())
    assert result["marker_counts"] == {
        "AUTOTUNE_REPLAY_FALLBACK compile_InterpreterError": 1,
        "AUTOTUNE_REPLAY_FALLBACK key_missing": 1,
        "AUTOTUNE_REPLAY_FALLBACK compile_InterpreterError_no_evict": 1,
        "AUTOTUNE_REPLAY_FALLBACK pre_hook_dropped": 1,
    }


CRASH_TESTS = textwrap.dedent(
    """
    import os, torch, flag_gems

    def test_record_then_die():
        flag_gems.ops.softmax(torch.randn(2, 50))
        os._exit(7)
    """
)


def test_records_survive_a_process_killed_after_recording(tmp_path):
    """docs/design.md §5.7: os._exit skips atexit and pytest's teardown; the record is
    on disk already."""
    (tmp_path / "test_crash.py").write_text(CRASH_TESTS)
    run = run_plugins(tmp_path, "test_crash.py", "crash")
    assert run.rc == 7, run.out
    assert list(run.records()[SOFTMAX]) == [f"[50,{F32},{F32}]"]
    assert not (run.run_dir / "result.json").exists()


VLLM_TESTS = textwrap.dedent(
    """
    import sys, torch, flaggems_vllm

    def test_scale():
        x = torch.randn(300)
        torch.testing.assert_close(flaggems_vllm.ops.scale(x, 3.0), x * 3.0)
        assert "flag_gems" not in sys.modules
    """
)


def test_flaggems_vllm_libtuner_is_patched_when_it_is_the_one_imported(tmp_path):
    """docs/design.md §5.6: the vllm package has its own LibTuner class; it is the one patched."""
    (tmp_path / "test_vllm.py").write_text(VLLM_TESTS)
    rec = run_plugins(tmp_path, "test_vllm.py", "rec")
    assert rec.rc == 0, rec.out
    (patched,) = rec.lines("ZLBENCH_AUTOTUNE_PATCHED")
    assert "flaggems_vllm.utils.libentry.LibTuner" in patched.split()
    assert "flag_gems.utils.libentry.LibTuner" not in patched.split()
    assert list(rec.records()) == ["flaggems_vllm.ops.scale:scale_kernel"]
    rep = run_plugins(tmp_path, "test_vllm.py", "rep", mode="replay", replay_from=rec.run_dir)
    assert rep.rc == 0, rep.out
    assert rep.markers() == []
    assert rep.summary()["pinned"] == "1" and rep.summary()["bench_calls"] == "0"


BYPASS_TESTS = textwrap.dedent(
    """
    import importlib, json
    import torch
    import flag_gems

    mm_mod = importlib.import_module("flag_gems.ops.mm")
    tuner = mm_mod.mm_kernel
    own_cache, own_pick = tuner.cache, tuner._pick

    def pick_from_own_cache(args, kwargs):
        # a tuner that re-resolves its cache table inside run(): the injected
        # view is never consulted, so the pin is silently bypassed
        tuner.cache = own_cache
        return own_pick(args, kwargs)

    tuner._pick = pick_from_own_cache

    def test_mm():
        a, b = torch.randn(40, 48), torch.randn(48, 24)
        torch.testing.assert_close(flag_gems.ops.mm(a, b), a @ b, atol=1e-3, rtol=1e-3)
        print("MM_CONFIGS=" + json.dumps(tuner.best_config.all_kwargs(), sort_keys=True))
        print(f"MM_BENCH_CALLS={tuner.bench_calls}")
    """
)


def _bypassed_replay(tmp: Path, name: str, source: Path, db: Path | None = None):
    (tmp / "test_bypass.py").write_text(BYPASS_TESTS)
    run = run_plugins(tmp, "test_bypass.py", name, "replay", replay_from=source, db=db)
    assert run.rc == 0, run.out
    assert run.markers() == [f"AUTOTUNE_REPLAY_FALLBACK reason=pin_ignored kernel={MM}"]
    result = json.loads((run.run_dir / "result.json").read_text())
    assert result["marker_counts"] == {"AUTOTUNE_REPLAY_FALLBACK pin_ignored": 1}
    return run


def test_a_bypassed_pin_that_sweeps_is_a_fallback_not_a_pinned_replay(recorded):
    """The record is right, but the tuner benchmarks anyway (cold DB): the sweep is
    shown in the summary and marked, never counted as pinned. A normal replay of
    the same records has no marker and mm_bench_calls=0 (test above)."""
    tmp, rec = recorded
    run = _bypassed_replay(tmp, "rep-bypass-cold", rec.run_dir, db=tmp / "cold.db")
    assert mm_bench_calls(run) == 3
    summary = run.summary()
    assert (summary["pinned"], summary["tuned"], summary["bench_calls"]) == ("0", "1", "3")


def test_a_bypassed_pin_that_runs_the_warm_db_config_is_a_fallback(recorded):
    """No sweep, but the warm sqlite DB's config ran instead of the pinned one."""
    tmp, rec = recorded
    source = _edited_records(tmp, rec, "edited-bypass")  # 40x24x48 pinned != warm DB
    run = _bypassed_replay(tmp, "rep-bypass-warm", source)
    assert mm_bench_calls(run) == 0
    # the warm DB's (recorded) config ran, not the pinned one
    assert run.printed_json("MM_CONFIGS") == rec.printed_json("MM_CONFIGS")["40,24,48"]
    summary = run.summary()
    assert (summary["pinned"], summary["tuned"], summary["bench_calls"]) == ("0", "0", "0")
