"""benchmarks/turn_log.py: a shared GPU's turn log read back per batch run, from the
csv, a record-pass dir or the full.tgz a device call packed."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "turn_log.py"

LOG = "\n".join(
    [
        "gpu,pid,start,end,wait_s",  # a pass begun before 2026-12-02: the old header
        "0,5,1796000000.0,1796000001.0,0.0",
        "0,6,1796000001.0,1796000002.0,0.5",
        "0,5,1796000002.5,1796000130.0,0.0,shared,mm__at__test_mm.py",
        "0,6,1796000130.0,1796000131.0,128.0,timed,abs",
        "0,7,1796000131.0,1796000133.0,0.0,shared,abs",
        "0,7,1796000135.0,1796000136.0,0.0,timed,sum",
    ]
)


@pytest.fixture(scope="module")
def tl():
    spec = importlib.util.spec_from_file_location("turn_log", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_run_says_its_share_its_stretches_and_who_held_the_turn(tl):
    assert tl.report(LOG) == [
        "2026-11-30 00:53:20 UTC, 136 s: 4 timed turns, timing 4 s (3%); 1 stretch(es) of "
        "20 s or more without a timing, 128 s; longest wait 128.0 s",
        "  shared hold 127.5 s by mm__at__test_mm.py at 2026-11-30 00:53:22",
        "  shared hold 2.0 s by abs at 2026-11-30 00:55:31",
    ]
    assert tl.report("") == ["turn_log: no turns"]


def test_the_log_is_read_from_a_dir_a_pack_or_itself(tl, tmp_path):
    (tmp_path / "gpu_turns.csv").write_text(LOG)
    packed = tmp_path / "full.tgz"
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(tmp_path / "gpu_turns.csv", arcname="gpu_turns.csv")
    for where in (tmp_path, packed, tmp_path / "gpu_turns.csv"):
        assert tl.read_log(where) == LOG
    empty = tmp_path / "empty.tgz"
    with tarfile.open(empty, "w:gz"):
        pass
    with pytest.raises(SystemExit, match="holds no gpu_turns.csv"):
        tl.read_log(empty)
    with pytest.raises(SystemExit, match="turn_log: no "):
        tl.read_log(tmp_path / "nope.csv")
