"""Timing inside the GPU's turn (``--gpu-share``): measure's discarded first call holds
it shared (never inside another process's timing), warmup, capture, replays and the
plain fallback hold it exclusive; inputs are drawn in the shared turn; other callers
of do_bench (an autotuner) take it too; the phases plugin books the waits for it as
``gpu_wait_s``, never as first-call or other time."""

from __future__ import annotations

import fcntl
import os
import threading
from types import SimpleNamespace

import pytest

from zlbench.models.timings import OpTimings
from zlbench.plugins import timing
from zlbench.plugins.phases import Phases
from zlbench.plugins.timing import BENCH_METHOD, TimingSettings, measure
from zlbench.plugins.timing_backends import CAPTURE_SYNC_ERROR
from zlbench.protocol.turn import (
    GpuTurn,
)


def lock_is_taken(path) -> bool:
    """Another open file description cannot take the flock now (flock conflicts
    between separate opens even within one process)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class TurnBackend:
    """A timing backend that records the turn's depth at each call (and whether the
    lock file is really locked); ``capture_error`` makes capture raise."""

    def __init__(self, turn: GpuTurn, capture_error: Exception | None = None) -> None:
        self.turn, self.capture_error = turn, capture_error
        self.seen: list[tuple[str, int]] = []
        self.locked: list[bool] = []

    def _saw(self, what: str) -> None:
        self.seen.append((what, self.turn.depth))
        self.locked.append(lock_is_taken(self.turn.path))

    def synchronize(self) -> None:
        self._saw("sync")

    def time_eager(self, fn, n):
        self._saw("eager")
        for _ in range(n):
            fn()
        return 0.01

    def capture(self, fn, n):
        self._saw("capture")
        if self.capture_error is not None:
            raise self.capture_error
        fn()
        return n

    def replay_ms(self, graph):
        self._saw("replay")
        return 0.01 * graph

    def plain(self, fn, rep_ms, warmup_ms, **kw):
        self._saw("plain")
        fn()
        return 42.0


@pytest.fixture
def turn(tmp_path):
    return GpuTurn(str(tmp_path / "gpu-0.lock"), log=str(tmp_path / "turns.csv"), gpu="0")


def test_first_call_in_the_shared_turn_and_the_timing_in_the_exclusive_one(turn, capsys):
    depths: list[int] = []
    shared: list[int] = []
    backend = TurnBackend(turn)

    def record():
        depths.append(turn.depth)
        shared.append(turn.shared_depth)

    ms = measure(record, backend, TimingSettings(1.0, 3), rep_ms=1.0, turn=turn)
    assert ms == pytest.approx(0.01)
    # the discarded first call: compile, load, beside others' untimed work, not a timing
    assert depths[0] == 0 and shared[0] == 1
    assert len(depths) > 2 and set(depths[1:]) == {1}
    kinds = [k for k, _ in backend.seen]
    assert kinds.count("eager") == 2 and kinds.count("capture") == 1
    assert kinds.count("replay") == 3 and "plain" not in kinds
    assert all(depth == 1 for _, depth in backend.seen) and all(backend.locked)
    assert turn.taken == 1 and turn.depth == 0 and not lock_is_taken(turn.path)
    assert "BENCHMARK_DIRECT" not in capsys.readouterr().out


def test_the_plain_fallback_runs_inside_the_turn_with_a_marker(turn, capsys):
    depths: list[int] = []
    backend = TurnBackend(turn, RuntimeError(CAPTURE_SYNC_ERROR))
    record = lambda: depths.append(turn.depth)  # noqa: E731
    ms = measure(record, backend, TimingSettings(1.0, 2), rep_ms=1.0, turn=turn)
    assert ms == 42.0
    assert backend.seen[-1] == ("plain", 1) and backend.locked[-1]
    assert depths[0] == 0 and depths[-1] == 1  # plain's own call of fn: in the turn
    assert turn.taken == 1 and turn.depth == 0 and not lock_is_taken(turn.path)
    out = capsys.readouterr().out
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=RuntimeError:CUDA_error:" in out


def test_a_device_fault_leaves_the_turn_released(turn):
    fault = RuntimeError("CUDA error: an illegal memory access was encountered")
    backend = TurnBackend(turn, fault)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        measure(lambda: None, backend, TimingSettings(1.0, 2), rep_ms=1.0, turn=turn)
    assert "plain" not in [k for k, _ in backend.seen]
    assert turn.depth == 0 and not lock_is_taken(turn.path)


def test_an_autotune_sweep_in_the_first_call_takes_the_turn_itself(turn):
    def first_call_tunes():
        with turn.hold():  # what _tuners._wrap_bench does per config benchmarked
            assert lock_is_taken(turn.path)

    measure(first_call_tunes, TurnBackend(turn), TimingSettings(1.0, 2), rep_ms=1.0, turn=turn)
    # the first call's own turn, then measure's (the later calls nest in measure's)
    assert turn.taken == 2


def test_measure_uses_the_process_turn_by_default(env_turn):
    backend = TurnBackend(env_turn)
    measure(lambda: None, backend, TimingSettings(1.0, 2), rep_ms=1.0)
    assert env_turn.taken == 1 and all(depth == 1 for _, depth in backend.seen)


def test_do_bench_of_a_non_benchmark_caller_runs_in_the_turn(env_turn, monkeypatch):
    import triton.testing as testing

    if timing._INSTALLED is not None:
        pytest.skip("timing already installed in this process")
    seen = []

    def upstream(fn, *args, **kw):  # triton's own do_bench, called by an autotuner
        seen.append(env_turn.depth)
        return 1.5

    monkeypatch.setattr(testing, "do_bench", upstream)
    monkeypatch.setattr(testing, "do_bench_cudagraph", upstream)
    timing.install("cpu", TimingSettings(1.0, 2))
    try:
        assert testing.do_bench(lambda: None) == 1.5
        assert testing.do_bench_cudagraph(lambda: None) == 1.5
    finally:
        timing.uninstall()
    assert seen == [1, 1] and env_turn.taken == 2 and env_turn.depth == 0


def test_do_bench_of_a_benchmark_is_measured_in_the_turn(env_turn, monkeypatch):
    import triton.testing as testing

    if timing._INSTALLED is not None:
        pytest.skip("timing already installed in this process")
    monkeypatch.setattr(testing, "do_bench", lambda *a, **k: pytest.fail("upstream called"))
    depths: list[int] = []
    timing.install("cpu", TimingSettings(1.0, 2))
    try:

        class Bench:  # upstream's Benchmark: its method that calls do_bench
            def get_latency(self):
                return testing.do_bench(lambda: depths.append(env_turn.depth), rep=1)

        assert BENCH_METHOD == "get_latency" and Bench().get_latency() >= 0
    finally:
        timing.uninstall()
    assert depths[0] == 0 and set(depths[1:]) == {1} and env_turn.taken == 1


def test_an_autotuner_takes_the_turn_for_each_config_it_benchmarks(env_turn, monkeypatch):
    from zlbench.plugins import _tuners

    for name, fresh in (("_BENCH_CALLS", [0]), ("_BENCHED", {}), ("_IDS", {}), ("_ID_USERS", {})):
        monkeypatch.setattr(_tuners, name, fresh)
    seen = []

    def orig(self, *args, **kw):  # Autotuner._bench: times one config
        seen.append((env_turn.depth, lock_is_taken(env_turn.path), args))
        return [1.0]

    def kernel():
        pass

    bench, tuner = _tuners._wrap_bench(orig), SimpleNamespace(base_fn=kernel)
    assert bench(tuner, "cfg1") == [1.0] and bench(tuner, "cfg2") == [1.0]
    assert seen == [(1, True, ("cfg1",)), (1, True, ("cfg2",))]
    # one turn per config: another process may time between two configs
    assert env_turn.taken == 2 and env_turn.depth == 0 and not lock_is_taken(env_turn.path)
    assert _tuners.bench_calls() == 2 and list(_tuners.benched_kernels().values()) == [2]


def hold_lock_for(path, seconds: float) -> threading.Timer:
    """Take the flock now (another open: another 'process'); drop it after ``seconds``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)

    def release():
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    timer = threading.Timer(seconds, release)
    timer.start()
    return timer


def _phases_measure(turn: GpuTurn, fn) -> OpTimings:
    phases = Phases()
    phases.current = OpTimings(run_name="op", first_in_process=False)
    phases.timed_measure(fn, TurnBackend(turn), TimingSettings(1.0, 2), rep_ms=1.0)
    return phases.current


HELD_S = 0.5


def test_phases_book_the_wait_for_the_turn_as_gpu_wait(env_turn):
    timer = hold_lock_for(env_turn.path, HELD_S)  # another process is timing
    try:
        t = _phases_measure(env_turn, lambda: None)
    finally:
        timer.join()
    side = t.gems
    assert side.calls == 1 and side.gpu_wait_s >= HELD_S * 0.8
    assert side.gpu_wait_s == pytest.approx(env_turn.waited_s)
    assert side.other_s < HELD_S / 2 and side.first_call_s < HELD_S / 2  # not the wait
    assert t.torch.gpu_wait_s == 0.0


def test_phases_first_call_excludes_an_autotune_sweeps_wait_for_the_turn(env_turn):
    def first_call_tunes():
        with env_turn.hold():  # waits for the other process's turn to end
            pass

    timer = hold_lock_for(env_turn.path, HELD_S)
    try:
        t = _phases_measure(env_turn, first_call_tunes)
    finally:
        timer.join()
    side = t.gems
    assert env_turn.taken == 2 and env_turn.waited_s >= HELD_S * 0.8
    assert side.gpu_wait_s == pytest.approx(env_turn.waited_s)
    assert 0 <= side.first_call_s < HELD_S / 2
    assert side.other_s < HELD_S / 2


def test_each_input_is_drawn_in_the_shared_turn(env_turn):
    """The benchmark's inputs (tensors made on the GPU) are drawn with the turn held
    shared, and between draws it is free (the measuring in between times exclusive)."""
    from zlbench.plugins import bench_adapter

    seen: list[tuple[int, bool]] = []

    def inputs(dtype):
        for i in range(3):
            seen.append((env_turn.shared_depth, lock_is_taken(env_turn.path)))
            yield (dtype, i)

    bench = SimpleNamespace(get_input_iter=inputs)
    bench_adapter._wrap_input_iter(bench)
    got = []
    for item in bench.get_input_iter("bf16"):
        got.append(item)
        assert env_turn._sh_fd is None and not lock_is_taken(env_turn.path)
    assert got == [("bf16", 0), ("bf16", 1), ("bf16", 2)]
    assert seen == [(1, True)] * 3


@pytest.fixture
def install_timing(monkeypatch):
    """``install_timing()`` installs the timing patch (CPU backend); uninstalled after
    the test (uninstall is idempotent), triton's do_bench functions restored."""
    import triton.testing as testing

    if timing._INSTALLED is not None:
        pytest.skip("timing already installed in this process")
    monkeypatch.setattr(testing, "do_bench", testing.do_bench)
    monkeypatch.setattr(testing, "do_bench_cudagraph", testing.do_bench_cudagraph)
    yield lambda: timing.install("cpu", TimingSettings(1.0, 2))
    timing.uninstall()


@pytest.mark.parametrize(("module", "cls_name", "name", "done_attr"), timing.OFF_THE_TURN)
def test_compiling_and_loading_a_kernel_give_the_shared_turn_up(
    env_turn, monkeypatch, install_timing, module, cls_name, name, done_attr
):
    """triton's JIT compile and launcher build + binary load (CPU work of a first call)
    run with the shared turn released, so a timer is not kept waiting for them; taken
    again after. Once done (``_init_handles`` on every later launch: ``module`` set) and
    outside the shared turn the method runs as it is, with no lock calls. uninstall
    puts triton's method back."""
    import importlib

    cls = getattr(importlib.import_module(module), cls_name)
    inside: list[tuple[bool, bool]] = []

    def fake(self, *args, **kwargs):  # triton's method: records the turn meanwhile
        inside.append((env_turn.sharing, lock_is_taken(env_turn.path)))
        return ("ran", args, kwargs)

    monkeypatch.setattr(cls, name, fake)
    install_timing()
    try:
        assert getattr(cls, name) is not fake
        todo = SimpleNamespace(**({done_attr: None} if done_attr else {}))
        with env_turn.share():
            assert lock_is_taken(env_turn.path)
            assert getattr(cls, name)(todo, 1, k=2) == ("ran", (1,), {"k": 2})
            assert env_turn.sharing and lock_is_taken(env_turn.path)
            if done_attr:  # the work done: the turn is kept (no release, no gate)
                getattr(cls, name)(SimpleNamespace(**{done_attr: object()}))
        getattr(cls, name)(todo)  # not sharing: nothing to give up
    finally:
        timing.uninstall()
    kept = [(True, True)] if done_attr else []
    assert inside == [(False, False), *kept, (False, False)]
    assert cls.__dict__[name] is fake


def test_a_gpu_of_its_own_keeps_tritons_methods(no_env_turn, install_timing):
    """Without a turn file (one process per GPU) nothing is wrapped: no cost on triton's
    launch path (``_init_handles`` runs on every launch)."""
    import importlib

    before = {
        (m, c, n): importlib.import_module(m).__dict__[c].__dict__[n]
        for m, c, n, _ in timing.OFF_THE_TURN
    }
    install_timing()
    for (m, c, n), orig in before.items():
        assert importlib.import_module(m).__dict__[c].__dict__[n] is orig


def test_the_capture_method_makes_two_calls_in_the_shared_turn_and_times_nothing(turn):
    """``--zl-timing capture`` (``baseline capture --untimed``): no warmup, graph or
    replay, never the exclusive turn; both calls inside the row's timed region (the
    launch capture keeps the second's); the latency is the second call's wall time."""
    from zlbench.plugins import state

    seen: list[tuple[int, int, bool]] = []
    backend = TurnBackend(turn)

    def record():
        seen.append((turn.depth, turn.shared_depth, state.in_timed_region()))

    ms = measure(record, backend, TimingSettings(capture_only=True), rep_ms=1.0, turn=turn)
    assert seen == [(0, 1, True), (0, 1, True)]
    assert [k for k, _ in backend.seen] == ["sync", "sync"]  # no eager, capture, replay
    assert turn.taken == 0 and not lock_is_taken(turn.path)
    assert isinstance(ms, float) and ms >= 0
    quantiles = measure(record, backend, TimingSettings(capture_only=True), rep_ms=1.0,
                        turn=turn, quantiles=[0.5, 0.2])  # fmt: skip
    assert len(quantiles) == 2 and len(seen) == 4
