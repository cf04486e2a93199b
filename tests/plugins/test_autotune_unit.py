"""Pure pieces of autotune record/replay and of the tuner adapter (no subprocess)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

triton = pytest.importorskip("triton")

from zlbench.models import PlanEntry  # noqa: E402
from zlbench.plugins import _tuners, autotune  # noqa: E402


def test_serialize_key_is_compact_json_with_dtypes_as_text():
    import torch

    key = (1024, 7, 0.5, True, "torch.bfloat16", torch.float16, None)
    text = autotune.serialize_key(key)
    assert text == '[1024,7,0.5,true,"torch.bfloat16","torch.float16",null]'
    assert json.loads(text)[0] == 1024


def test_records_file_name_is_path_safe():
    assert autotune.records_file("/r", "add@test_x.py").name == "add__at__test_x.py.json"
    assert autotune.records_file("/r", "a/b").name == "a_b.json"


def _entry(tmp_path, replay):
    return PlanEntry(
        op="mm", run_name="mm", run_dir=str(tmp_path / "run"), nodeids=["t.py"],
        mode="replay", replay_records=replay,
    )  # fmt: skip


def test_load_replay_reads_the_op_file_or_reports_why_not(tmp_path):
    rec = tmp_path / "rec"
    rec.mkdir()
    records, problem = autotune.load_replay(_entry(tmp_path, str(rec)))
    assert records == {} and "no records file" in problem
    (rec / "mm.json").write_text('{"k:f": {"[1]": {"kwargs": {}}}}')
    records, problem = autotune.load_replay(_entry(tmp_path, str(rec)))
    assert problem is None and records == {"k:f": {"[1]": {"kwargs": {}}}}
    (rec / "mm.json").write_text("{trunc")
    assert "cannot read" in autotune.load_replay(_entry(tmp_path, str(rec)))[1]
    (rec / "mm.json").write_text("[1, 2]")
    assert "not a" in autotune.load_replay(_entry(tmp_path, str(rec)))[1]


def test_pre_hook_rule():
    hooked = triton.Config({"B": 1}, pre_hook=lambda nargs: None)
    plain = triton.Config({"B": 1})
    assert autotune.keeps_record(libtuner=False, config=plain)
    assert not autotune.keeps_record(libtuner=False, config=hooked)
    assert autotune.keeps_record(libtuner=True, config=hooked)


def test_config_round_trip_keeps_all_kwargs():
    config = triton.Config({"BLOCK_M": 64, "SPLIT": 2}, num_warps=8, num_stages=4, maxnreg=128)
    data = _tuners.config_to_dict(config)
    assert data == {
        "kwargs": {"BLOCK_M": 64, "SPLIT": 2},
        "num_warps": 8,
        "num_ctas": 1,
        "num_stages": 4,
        "maxnreg": 128,
    }
    back = _tuners.config_from_dict(json.loads(json.dumps(data)))
    assert back.all_kwargs() == config.all_kwargs()


def test_pinned_cache_overrides_one_key_and_writes_the_rest_through():
    base = {("a",): "warm"}
    view = _tuners.PinnedCache(base, ("a",), "pinned")
    assert ("a",) in view and view[("a",)] == "pinned"
    view[("a",)] = "tuned"  # the tuner storing its own pick must not replace the pin
    view[("b",)] = "new"
    assert view[("a",)] == "pinned" and base == {("a",): "warm", ("b",): "new"}
    assert view.get(("zz",)) is None


def test_tuning_key_matches_triton_and_libtuner_formulas():
    import torch

    x = torch.zeros(4, dtype=torch.bfloat16)
    tuner = SimpleNamespace(arg_names=["x_ptr", "n", "BLOCK"], keys=["n"])
    assert _tuners.tuning_key(tuner, (x, 4), {}, libtuner=False) == (4, "torch.bfloat16")
    tuner.get_key = lambda named: (named["n"] * 2,)
    assert _tuners.tuning_key(tuner, (x, 4), {}, libtuner=True) == (8,)


def test_kernel_id_is_module_qualname_and_disambiguates_a_second_tuner():
    def kern():
        pass

    first, second = SimpleNamespace(base_fn=kern), SimpleNamespace(base_fn=kern)
    base = f"{__name__}:{kern.__qualname__}"
    assert _tuners.kernel_id(first) == base
    assert _tuners.kernel_id(second) == base + "#2"
    assert _tuners.kernel_id(first) == base


def test_compile_errors_are_triton_errors_not_device_faults():
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import InterpreterError, OutOfResources

    assert _tuners.is_compile_error(InterpreterError("x"))
    assert _tuners.is_compile_error(OutOfResources(1, 2, "shared memory"))
    assert _tuners.is_compile_error(CompilationError.__new__(CompilationError))
    assert not _tuners.is_compile_error(RuntimeError("an illegal memory access was encountered"))


def test_evict_is_impossible_without_delitem():
    class SqliteLike:
        def __contains__(self, k):
            return True

    assert _tuners._evict(SimpleNamespace(cache={("k",): 1}), ("k",)) is True
    assert _tuners._evict(SimpleNamespace(cache=SqliteLike()), ("k",)) is False


def test_sweep_shard_restricts_only_multi_config_kernels():
    handler = autotune.AutotuneHandler(shard=(1, 2))
    configs = [triton.Config({"B": b}) for b in (1, 2, 3, 4, 5)]
    call = SimpleNamespace(single=False, tuner=SimpleNamespace(configs=configs))
    assert [c.kwargs["B"] for c in handler.configs_for(call)] == [2, 4]
    call.single = True
    assert handler.configs_for(call) is None
    assert autotune.AutotuneHandler().configs_for(call) is None


def test_same_config_accepts_the_pin_or_a_kwargs_equal_copy_only():
    pinned = triton.Config({"B": 16}, num_warps=2)
    assert _tuners.same_config(pinned, pinned)
    assert _tuners.same_config(triton.Config({"B": 16}, num_warps=2), pinned)  # hook re-attached
    assert not _tuners.same_config(triton.Config({"B": 16}, num_warps=4), pinned)
    assert not _tuners.same_config(triton.Config({"B": 32}, num_warps=2), pinned)


def test_an_ignored_pin_is_uncounted_and_marked_once_per_key(tmp_path, capsys):
    handler = autotune.AutotuneHandler()
    book = autotune.OpBook(entry=_entry(tmp_path, None), pinned=2)
    call = SimpleNamespace(kernel="m:k", key=(8,), single=False, pinned=False, pin_ignored=True)
    handler._after_replay(book, call)
    handler._after_replay(book, call)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["AUTOTUNE_REPLAY_FALLBACK reason=pin_ignored kernel=m:k"]
    assert book.pinned == 0


@pytest.mark.parametrize(
    ("timing", "ms"), [([1.5, 1.0, 2.0], 1.5), ((0.25,), 0.25), (0.75, 0.75), (None, None)]
)
def test_first_timing(timing, ms):
    assert _tuners.first_timing(timing) == ms


def test_a_replay_that_benchmarked_configs_unseen_is_marked_tuned_live(tmp_path, capsys):
    """bench_calls > 0 in a replay with no other marker (e.g. a tuner no patch
    reached): one op-level marker naming the kernels that swept."""
    handler = autotune.AutotuneHandler()
    entry = _entry(tmp_path, str(tmp_path))
    book = autotune.OpBook(entry=entry, bench_at_start=_tuners.bench_calls())
    handler.books[entry.run_name] = book
    op = SimpleNamespace(entry=entry, markers=[])
    _tuners._BENCH_CALLS[0] += 3
    _tuners._BENCHED["m:swept"] = _tuners._BENCHED.get("m:swept", 0) + 3
    handler.on_end(op)
    assert [(m.reason, m.kernel, m.dtype) for m in op.markers] == [("tuned_live", "m:swept", None)]
    assert "AUTOTUNE_REPLAY_FALLBACK reason=tuned_live kernel=m:swept" in capsys.readouterr().out
    book.reported.add(("m:k", "[1]"))  # another marker already says it: not twice
    op.markers.clear()
    _tuners._BENCH_CALLS[0] += 1
    handler.on_end(op)
    assert op.markers == []


def test_a_pre_hook_winner_tuned_live_in_a_replay_is_marked(tmp_path, capsys):
    handler = autotune.AutotuneHandler()
    book = autotune.OpBook(entry=_entry(tmp_path, str(tmp_path)))
    hooked = triton.Config({"B": 1}, pre_hook=lambda nargs: None)
    call = SimpleNamespace(
        kernel="m:k",
        key=(8,),
        single=False,
        pinned=False,
        pin_ignored=False,
        libtuner=False,
        config=hooked,
    )
    handler._after_replay(book, call)
    out = capsys.readouterr().out.splitlines()
    assert out == ["AUTOTUNE_REPLAY_FALLBACK reason=pre_hook_dropped kernel=m:k"]


class _Entry:
    """A LibEntry-like object: per-device launch caches, and a CPU one."""

    def __init__(self, **held):
        self.kernel_cache = (dict(held), {})
        self._cpu_cache = {}


def test_own_work_leaves_no_launch_cache_entry_behind_and_an_op_start_empties_them():
    old, empty = _Entry(op=1), _Entry()
    _tuners._ENTRIES.update([old, empty])
    try:
        end = _tuners._own_work_begins()
        old.kernel_cache[0]["own"] = 2  # the own work's launch of a known LibEntry
        made = _Entry(own=3)  # a LibEntry made during the own work (a generated module)
        _tuners._ENTRIES.add(made)
        end()
        assert old.kernel_cache[0] == {"op": 1} and made.kernel_cache[0] == {}
        old._cpu_cache["x"] = 1
        assert _tuners.forget_launch_caches() == 1  # only `old` held any
        assert old.kernel_cache[0] == {} and old._cpu_cache == {}
    finally:
        for e in (old, empty, made):
            _tuners._ENTRIES.discard(e)
