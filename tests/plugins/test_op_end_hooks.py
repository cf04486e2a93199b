"""An op-end hook, or a test's teardown after its pass mark, that runs long names itself
in the op's run.log, once, while it runs (zlbench.plugins.capture): two ops on the H200
printed every row and pytest's pass mark, then used the rest of their 300 s with
nothing in their logs (2026-12-02)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from zlbench.plugins import capture
from zlbench.protocol.boundary import find_end


class Recorder:
    def __init__(self, secs: float) -> None:
        self.secs, self.ran = secs, 0

    def on_end(self, op) -> None:
        time.sleep(self.secs)
        self.ran += 1


OP = SimpleNamespace(entry=SimpleNamespace(run_name="addmv__at__test_addmv.py"))


def test_a_slow_hook_says_which_it_is_while_it_runs(monkeypatch, capsys):
    monkeypatch.setattr(capture, "SLOW_HOOK_S", 0.05)
    slow = Recorder(0.2)
    capture._end_hook(slow.on_end, OP)
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln]
    assert slow.ran == 1
    assert out == [
        "ZLBENCH_OP_HOOK_SLOW run_name=addmv__at__test_addmv.py hook=Recorder.on_end after=0.05s"
    ]
    assert find_end(out[0]) is None  # never read as the op's END line


def test_a_quick_hook_prints_nothing_and_no_timer_outlives_it(monkeypatch, capsys):
    monkeypatch.setattr(capture, "SLOW_HOOK_S", 0.2)
    quick = Recorder(0.0)
    capture._end_hook(quick.on_end, OP)
    time.sleep(0.3)  # past the limit: the cancelled timer stays silent
    assert quick.ran == 1 and capsys.readouterr().out == ""


def test_a_wrapped_hook_is_named_by_what_it_wraps():
    wrapper = SimpleNamespace(cb=Recorder(0).on_end)
    assert capture._hook_name(wrapper) == "Recorder.on_end"
    assert capture._hook_name(Recorder(0).on_end) == "Recorder.on_end"


def _report(when: str):
    return SimpleNamespace(when=when, outcome="passed", longrepr=None)


def _capture(op):
    session = SimpleNamespace(current=op)
    return capture.Capture(config=None, session=session)


def test_a_slow_teardown_after_the_pass_mark_says_so(monkeypatch, capsys):
    monkeypatch.setattr(capture, "SLOW_HOOK_S", 0.05)
    cap = _capture(SimpleNamespace(entry=OP.entry, outcomes=[], error=None))
    cap.pytest_runtest_logreport(_report("call"))
    time.sleep(0.2)  # the test's fixtures tearing down
    cap.pytest_runtest_logreport(_report("teardown"))
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln]
    assert out == [
        "ZLBENCH_OP_HOOK_SLOW run_name=addmv__at__test_addmv.py hook=pytest-teardown after=0.05s"
    ]
    assert cap.teardown_timer is None


def test_a_quick_teardown_says_nothing(monkeypatch, capsys):
    monkeypatch.setattr(capture, "SLOW_HOOK_S", 0.2)
    cap = _capture(SimpleNamespace(entry=OP.entry, outcomes=[], error=None))
    cap.pytest_runtest_logreport(_report("call"))
    cap.pytest_runtest_logreport(_report("teardown"))
    time.sleep(0.3)
    assert capsys.readouterr().out == ""
