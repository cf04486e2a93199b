"""benchmarks/replay_read.py ``agree`` on a gate dir whose replay lists a row as timing
no Triton kernel: the judge re-derives that from the gate's baseline, so the reader
takes the baseline too (``--baseline``; without it the replay is refused, as v7's
op-path shard 1 was on 2026-12-07)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from test_gate_replay_rejudge import _no_launch_gate

from tests.support.zlsynth import gate
from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _reader():
    spec = importlib.util.spec_from_file_location("replay_read", BENCH / "replay_read.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replay_read"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_agree_reads_a_replay_that_proves_rows_given_the_gates_baseline(tmp_path, capsys):
    bl, g = _no_launch_gate(tmp_path, captured=True)
    rc, out = gate(tmp_path, bl, g)
    assert rc == 0
    shutil.copy(out / "verdict.json", g / "verdict.json")  # the gate dir, as a device's
    read = _reader()
    with pytest.raises(ZlbenchError, match="launch capture does not show it"):
        read.agree(g)  # no baseline: nothing proves the row
    capsys.readouterr()
    read.agree(g, load_baseline(bl))
    said = capsys.readouterr().out
    assert "rows timed by both instruments: 0" in said and "disagreements: 0 of 0" in said


def test_a_gate_cut_before_its_verdict_is_one_line_and_exit_2(tmp_path, capsys):
    """The fiftieth session's aa-3, cut by its call's budget in the op path after its
    replay: the reader says which file is missing in one line, not a traceback."""
    cut = tmp_path / "aa-3"
    (cut / "replay").mkdir(parents=True)
    for cmd in (["aa", str(cut)], ["agree", str(cut)], ["compare", str(cut), str(cut)]):
        assert _reader().main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("replay_read: ") and "verdict.json: file not found" in err
        assert "\n" not in err
