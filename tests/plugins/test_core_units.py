"""In-process unit tests of the plugin logic (no pytest subprocess)."""

from __future__ import annotations

import pytest
import torch

from zlbench.models import Marker, MarkerKind, PlanEntry, RunStatus, WorkerPlan
from zlbench.plugins import capture, devices, environment, shapes, state
from zlbench.plugins.timing import TimingSettings, graph_calls, measure, warm_calls
from zlbench.plugins.timing_backends import CAPTURE_SYNC_ERROR, CpuBackend, capture_mode, summarize
from zlbench.protocol import faults, options
from zlbench.protocol.signature import short_path

FOOTER = (
    "\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("CUDA error: device-side assert triggered" + FOOTER, True),
        ("CUDA error: an illegal memory access was encountered" + FOOTER, True),
        ("CUDA error: an illegal instruction was encountered", True),
        ("CUDA error: misaligned address" + FOOTER, True),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", True),
        ("CUDA error: unspecified launch failure" + FOOTER, True),
        ("Triton Error [CUDA]: an illegal memory access was encountered", True),
        (CAPTURE_SYNC_ERROR, False),  # footer mentions device-side assertions: not a fault
        ("CUDA error: operation failed due to a previous error during capture" + FOOTER, False),
        ("CUDA error: operation not permitted when stream is capturing", False),
        ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture.", False),
        ("RuntimeError: some unrelated failure", False),
    ],
)
def test_device_fault_classification(text, fault):
    assert faults.is_device_fault(text) is fault
    assert faults.is_device_fault(RuntimeError(text)) is fault


def test_oom_exception_type_is_a_fault():
    OutOfMemoryError = type("OutOfMemoryError", (RuntimeError,), {})
    assert faults.is_device_fault(OutOfMemoryError("no text"))


def test_marker_reason_is_one_token_without_footer():
    reason = faults.reason_text(RuntimeError(CAPTURE_SYNC_ERROR))
    assert reason == "RuntimeError:CUDA_error:_operation_not_permitted_when_stream_is_capturing"


@pytest.mark.parametrize(
    ("env", "view", "expected"),
    [
        ({}, devices.DeviceView(True, False, "NVIDIA H200"), "nvidia"),
        ({}, devices.DeviceView(True, False, None), "nvidia"),
        ({"GEMS_VENDOR": "metax"}, devices.DeviceView(True, False, "NVIDIA H200"), None),
        ({}, devices.DeviceView(False, False), None),
        ({}, devices.DeviceView(True, True, "AMD Instinct MI300X"), None),
        ({}, devices.DeviceView(True, False, "Some Other Accelerator"), None),
    ],
)
def test_gems_vendor_value(env, view, expected):
    assert devices.gems_vendor_value(env, view) == expected


def test_warmup_and_graph_sizes_are_clamped():
    assert warm_calls(100.0, 50.0) == 5 and warm_calls(100.0, 100.0) == 5
    assert warm_calls(100.0, 0.001) == 200
    assert warm_calls(100.0, 2.0) == 50
    # a call longer than the whole budget: two (not five of ormqr's 4.9 s calls)
    assert warm_calls(100.0, 100.5) == 2 and warm_calls(100.0, 4945.0) == 2
    assert graph_calls(100.0, 0.0) == 1000 and graph_calls(1.0, 5.0) == 1


class _FakeBackend(CpuBackend):
    """CPU backend whose capture raises a chosen error; counts calls of each phase."""

    def __init__(self, capture_error=None):
        self.capture_error = capture_error
        self.plain_calls = 0

    def capture(self, fn, n):
        if self.capture_error is not None:
            raise self.capture_error
        return super().capture(fn, n)

    def plain(self, fn, rep_ms, warmup_ms, **kw):
        self.plain_calls += 1
        return 42.0


def test_measure_captures_and_summarizes(capsys):
    calls = []
    backend = _FakeBackend()
    ms = measure(lambda: calls.append(1), backend, TimingSettings(1.0, 3), rep_ms=1.0)
    assert ms >= 0 and backend.plain_calls == 0
    assert len(calls) >= 1 + 1 + 5 + 1 + 3  # discard, estimate, warmup >= 5, capture, replays
    assert "BENCHMARK_DIRECT" not in capsys.readouterr().out


class _ClockBackend(CpuBackend):
    """A CPU backend whose every call reads as ``ms`` (no real clock): the eager calls
    it runs are counted by the measured function itself."""

    def __init__(self, ms: float):
        self.ms = ms

    def time_eager(self, fn, n):
        for _ in range(n):
            fn()
        return self.ms


@pytest.mark.parametrize(("ms", "warm"), [(150.0, 2), (50.0, 5), (10.0, 10)])
def test_measure_warms_a_call_longer_than_the_budget_twice(ms, warm):
    """The eager calls before the graph: the discarded first, the estimate, then the
    warmup: the budget over one call (at least five), and two for a call longer than the
    whole budget (a 150 ms call against 100 ms)."""
    calls = []
    measure(lambda: calls.append(1), _ClockBackend(ms), TimingSettings(100.0, 0), rep_ms=ms)
    before_graph = len(calls) - 1 - 1  # the graph of one call, and one replay (replays 0: 1)
    assert before_graph == 1 + 1 + warm


def test_measure_falls_back_with_marker_on_capture_error(capsys):
    backend = _FakeBackend(RuntimeError(CAPTURE_SYNC_ERROR))
    assert measure(lambda: None, backend, TimingSettings(1.0, 2), rep_ms=1.0) == 42.0
    out = capsys.readouterr().out
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=RuntimeError:CUDA_error:" in out


def test_measure_falls_back_with_marker_when_a_replay_fails(capsys):
    class ReplayFails(_FakeBackend):
        def replay_ms(self, graph):
            raise RuntimeError("operation not permitted when stream is capturing")

    backend = ReplayFails()
    assert measure(lambda: None, backend, TimingSettings(1.0, 2), rep_ms=1.0) == 42.0
    assert backend.plain_calls == 1
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=sync" in capsys.readouterr().out


def test_measure_reraises_device_faults():
    backend = _FakeBackend(RuntimeError("CUDA error: an illegal memory access was encountered"))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        measure(lambda: None, backend, TimingSettings(1.0, 2), rep_ms=1.0)
    assert backend.plain_calls == 0


def test_measure_does_not_hide_a_broken_function(capsys):
    def broken():
        raise ValueError("kernel does not compile")

    with pytest.raises(ValueError):
        measure(broken, _FakeBackend(), TimingSettings(1.0, 2), rep_ms=1.0)
    assert "BENCHMARK_DIRECT" not in capsys.readouterr().out


def test_cpu_capture_mode_rejects_host_syncs_like_a_real_capture():
    x = torch.tensor([0.0, 1.0, 2.0])
    with capture_mode():
        assert torch.add(x, 1).shape == x.shape  # plain kernels are fine
        with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
            torch.nonzero(x)
        with pytest.raises(RuntimeError, match="operation not permitted"):
            x.sum().item()
    assert torch.nonzero(x).numel() == 2  # and nothing leaks out of the mode


def test_summarize_modes():
    times = [3.0, 1.0, 2.0]
    assert summarize(times, None, "median") == 2.0
    assert summarize(times, None, "min") == 1.0 and summarize(times, None, "max") == 3.0
    assert summarize(times, None, "mean") == 2.0 and summarize(times, None, "all") == times
    assert summarize(times, [0.5, 0.0], "mean") == [2.0, 1.0]


def _plan(*nodeids):
    entries = [
        PlanEntry(op=f"op{i}", run_name=f"op{i}", run_dir=f"/x/op{i}", nodeids=[n])
        for i, n in enumerate(nodeids)
    ]
    return WorkerPlan(entries=entries)


def test_group_items_follows_plan_order_and_drops_unplanned():
    items = ["t.py::b[x]", "t.py::a", "t.py::b[y]", "t.py::c", "u.py::Cls::d"]
    order = capture.group_items(items, [["t.py::b"], ["u.py"], ["t.py::a"]])
    assert order == [(0, 0), (0, 2), (1, 4), (2, 1)]


@pytest.mark.parametrize(
    ("outcomes", "rows", "poisoned", "expected"),
    [
        (["passed"], 3, False, RunStatus.PASS),
        (["failed"], 1, False, RunStatus.FAIL),
        (["passed", "failed"], 2, False, RunStatus.FAIL),  # teardown error after a passed call
        (["skipped"], 0, False, RunStatus.SKIP),
        (["passed", "skipped"], 2, False, RunStatus.PASS),
        (["passed"], 3, True, RunStatus.FAIL),  # device fault seen after a passing op
        (["skipped"], 0, True, RunStatus.FAIL),
    ],
)
def test_entry_status(outcomes, rows, poisoned, expected):
    if not poisoned:
        assert capture.entry_status(outcomes, rows) is expected
    assert capture.entry_status(outcomes, rows, poisoned) is expected


def test_skipped_tests_counts_one_per_skipped_test():
    assert state.skipped_tests(["passed", "skipped", "skipped", "failed"]) == 2
    assert state.skipped_tests(["passed"]) == 0


def test_emit_marker_attaches_row_context(capsys, monkeypatch):
    monkeypatch.setattr(state, "_ACTIVE", state.Session(plan=_plan("t.py::a")))
    op = state.OpState(entry=state.active().plan.entries[0])
    state.active().current = op
    state.set_row_context("bfloat16", "[torch.Size([64])]")
    state.emit_marker(Marker(kind=MarkerKind.REPLAY_FALLBACK, reason="key_missing", kernel="k"))
    assert "AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=k" in capsys.readouterr().out
    assert (op.markers[0].dtype, op.markers[0].shape_detail) == ("bfloat16", "[torch.Size([64])]")


def test_emit_marker_without_session_just_prints(capsys, monkeypatch):
    monkeypatch.setattr(state, "_ACTIVE", None)
    state.emit_marker(Marker(kind=MarkerKind.NO_CUDAGRAPH, phase="sync", reason="x"))
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=sync reason=x" in capsys.readouterr().out


class Base:
    def set_shapes(self, path=None): ...

    def get_input_iter(self, dtype):
        yield from self.shapes


class Generic(Base):
    pass


class Pinned(Generic):
    def set_shapes(self, path=None):
        self.shapes = [(1,)]


class PinnedChild(Pinned):
    pass


class Literal(Generic):
    def get_input_iter(self, dtype):
        literal = [(1,), (2,)]
        for s in literal:
            yield (s, dtype)


def test_hardcoded_shape_detection():
    assert shapes.hardcoded_set_shapes(Generic(), Base) is None
    assert shapes.hardcoded_set_shapes(PinnedChild(), Base) is Pinned
    assert shapes.hardcoded_input_iter(Generic()) is None
    assert shapes.hardcoded_input_iter(Literal()) is Literal


@pytest.mark.parametrize(
    ("keys", "cls", "owner", "expected"),
    [
        (["op", "Generic"], PinnedChild, Pinned, "op"),  # op_name wins
        (["PinnedChild", "Pinned"], PinnedChild, Pinned, "PinnedChild"),
        (["Pinned"], PinnedChild, Pinned, "Pinned"),
        (["Generic", "Base"], PinnedChild, Pinned, None),  # generic key: upstream meaning differs
        ([], PinnedChild, Pinned, None),
    ],
)
def test_specific_shape_entry(keys, cls, owner, expected):
    config = {k: {"shapes": [[1]]} for k in keys}
    found = shapes.specific_entry(config, "op", cls, owner)
    assert (found[0] if found else None) == expected


def test_shape_rows_become_tuples_nested_ones_too(tmp_path):
    """A flat row is the tuple upstream's set_shapes makes of it; a nested row (curated
    ``[[1, 64, 16, 16], 4]``) becomes upstream pixel_shuffle's ``((N, C, H, W), factor)``,
    hashable, so the benchmark's ``shape, factor = config`` unpacks it."""
    assert shapes.as_shape([4096, 4096]) == (4096, 4096)
    assert shapes.as_shape(7) == (7,)
    nested = shapes.as_shape([[1, 64, 16, 16], 4])
    assert nested == ((1, 64, 16, 16), 4) and hash(nested)
    path = tmp_path / "s.yaml"
    path.write_text("op:\n  shapes:\n  - [[2, 4, 12, 6], 3]\n  - [8, 8]\n")
    shapes._YAML_CACHE.pop(str(path), None)
    bench = PinnedChild()
    bench.op_name = "op"
    key, rows, _, what = shapes.shapes_from_file(bench, Base, str(path))
    assert (key, what) == ("op", "set_shapes()") and rows == [((2, 4, 12, 6), 3), (8, 8)]


def test_option_names_round_trip():
    seen = {}
    options.add_options(lambda flag, **kw: seen.setdefault(flag, kw["dest"]))
    assert seen["--zl-plan"] == "zl_plan" == options.dest("plan")
    assert options.flag("warmup-ms") == "--zl-warmup-ms"
    with pytest.raises(KeyError):
        options.flag("nope")
    other = {}
    options.add_options(lambda flag, **kw: other.setdefault(flag, kw["dest"]), prefix="--x-")
    assert set(other) == {f.replace("--zl-", "--x-") for f in seen}


def test_nvidia_driver_from_proc_text():
    text = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Tue Oct 1 2025\nGCC version: 12"
    )
    assert environment.nvidia_driver(text) == "580.159"
    assert environment.nvidia_driver("nothing here") is None
    open_module = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  "
        "(dvs-builder@U22)  Thu Sep 25 2025"
    )
    assert environment.nvidia_driver(open_module) == "580.159.03"


def test_triton_distribution_is_found():
    dist, version, _ = environment.triton_distribution()
    assert dist in ("triton", "flagtree") and version


def test_current_op_and_say(capsys, monkeypatch):
    monkeypatch.setattr(state, "_ACTIVE", None)
    assert state.current_op() is None
    session = state.Session(plan=_plan("t.py::a"))
    monkeypatch.setattr(state, "_ACTIVE", session)
    assert state.current_op() is None  # between entries
    session.current = state.OpState(entry=session.plan.entries[0])
    assert state.current_op() is session.current
    state.say("ZLBENCH_OP_BEGIN run_name=op0")
    assert capsys.readouterr().out == "\nZLBENCH_OP_BEGIN run_name=op0\n"


def _raised(fn):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - pytest outcomes are BaseExceptions
        return e
    raise AssertionError("did not raise")


def _launch():
    raise SystemError("<built-in function launch> returned NULL")


def _fail_like_upstream():
    try:
        _launch()
    except Exception as e:
        pytest.fail(str(e))


def test_exception_signature_names_the_cause_behind_upstreams_pytest_fail():
    line = _launch.__code__.co_firstlineno + 1
    here = short_path(__file__)
    assert capture.exception_signature(_raised(_fail_like_upstream)) == (
        f"SystemError in {here}:{line}"
    )
    assert capture.exception_signature(_raised(_launch)) == f"SystemError in {here}:{line}"


def test_exception_signature_of_a_bare_pytest_fail_keeps_its_message():
    def bare():
        pytest.fail("worker returned\nno result")

    line = bare.__code__.co_firstlineno + 1
    sig = capture.exception_signature(_raised(bare))
    assert sig == f"Failed in {short_path(__file__)}:{line}: worker returned"


class _HarnessBackend(CpuBackend):
    """A CPU backend whose harness launches work of its own around the benchmarked
    calls, as on CUDA the capture's RNG state and do_bench's L2 flush do (kernels that
    FlagGems may serve: its fill kernel); it logs whether each ran in the timed region."""

    def __init__(self, log, capture_error=None):
        self.log, self.capture_error = log, capture_error

    def capture(self, fn, n):
        self.log.append(("harness", state.in_timed_region()))
        if self.capture_error is not None:
            raise self.capture_error
        return super().capture(fn, n)

    def plain(self, fn, rep_ms, warmup_ms, **kw):
        self.log.append(("harness", state.in_timed_region()))  # the L2 flush
        fn()
        return 1.0


@pytest.mark.parametrize("capture_error", [None, RuntimeError(CAPTURE_SYNC_ERROR)])
def test_only_the_benchmarked_function_runs_in_the_timed_region(capsys, capture_error):
    log = []
    backend = _HarnessBackend(log, capture_error)
    measure(lambda: log.append(("fn", state.in_timed_region())), backend,
            TimingSettings(1.0, 2), rep_ms=1.0)  # fmt: skip
    assert {x for x in log if x[0] == "fn"} == {("fn", True)}
    assert {x for x in log if x[0] == "harness"} == {("harness", False)}
    assert not state.in_timed_region()
