"""What a compiled kernel differs in from the nearest record of the same kernel
(zlbench/codegen/request_diff.py)."""

from __future__ import annotations

from tests.support import cgsynth
from zlbench.codegen.request_diff import (
    KEY,
    PLACE,
    Twin,
    differences,
    nearest,
    renamed,
    renamed_index,
    twins,
    why_not_held,
)
from zlbench.models.codegen import AttrValue, CodegenIndex, ConstValue


def _rec(**kw):
    return cgsynth.record(cgsynth.request(**kw), cgsynth.stage_texts("x"))


def test_an_argument_specialised_otherwise_is_named_by_its_path():
    held = cgsynth.request()
    found = held.model_copy(
        update={"attrs": [AttrValue(path=[1], attrs=[["tt.divisibility", 16]])]}
    )
    assert differences(found, held) == ["attrs[1]: - → tt.divisibility=16"]
    assert differences(held, held) == []


def test_a_constexpr_source_and_target_are_each_a_field():
    held = cgsynth.request()
    kernel = held.kernel.model_copy(update={"cache_key": "a" * 64})
    found = held.model_copy(
        update={
            "constexprs": [ConstValue(path=[2], kind="int", value=128)],
            "kernel": kernel,
            "target": held.target.model_copy(update={"arch": 100}),
        }
    )
    assert differences(found, held) == [
        "constexprs[2]: 256 → 128",
        "kernel.cache_key: None → aaaaaaaaaaaa…",
        "target.arch: 90 → 100",
    ]


def test_the_nearest_record_is_the_same_kernel_with_the_fewest_differences():
    near, far, other = _rec(block=512), _rec(block=1024, num_warps=8), _rec(name="k2")
    found = _rec(block=512, num_warps=2)
    got = nearest(found, [far, other, near])
    assert got is not None and got[0] is near
    assert got[1] == ["config.num_warps: 4 → 2"]
    assert nearest(found, [other]) is None


def test_why_not_held_names_the_differences_and_counts_the_rest():
    held = CodegenIndex(records=[_rec(block=512)])
    req = cgsynth.request(block=128, num_warps=8)
    kernel = req.kernel.model_copy(update={"cache_key": "c", "path": "p.py", "root": "r"})
    found = cgsynth.record(req.model_copy(update={"kernel": kernel}), cgsynth.stage_texts("y"))
    line = why_not_held(found.id, CodegenIndex(records=[found]), held)
    assert line == (
        f"add_kernel differs from record {held.records[0].id} in config.num_warps: 4 → 8; "
        "constexprs[2]: 512 → 128; kernel.cache_key: None → c; kernel.path: None → p.py "
        "(+1 more)"
    )
    assert why_not_held("feed", CodegenIndex(records=[found]), held).endswith("either")
    assert why_not_held(found.id, None, held).endswith("either")


def _keyed(rec, key):
    kernel = rec.request.kernel.model_copy(update={"cache_key": key})
    return cgsynth.record(rec.request.model_copy(update={"kernel": kernel}), None)


def test_an_address_twin_is_one_record_but_for_a_triton_key_the_run_kept_portably():
    held_a, held_b = _keyed(_rec(), "e949" * 16), _keyed(_rec(block=512), "e949" * 16)
    held = CodegenIndex(records=[held_a, held_b])
    twin = _keyed(_rec(), "portable:" + "1" * 64)
    raw = _keyed(_rec(block=512), "1430" * 16)  # the run's key triton's own: not known
    other = _keyed(_rec(block=1024), "portable:" + "1" * 64)  # differs in BLOCK too
    run = CodegenIndex(records=[twin, raw, other, held_b])
    assert twins(run, held) == {twin.id: Twin(held_a.id, frozenset({KEY}))}
    # a held record keyed portably was recorded with this rule: its key is no address
    portable_held = CodegenIndex(records=[_keyed(_rec(), "portable:" + "2" * 64)])
    assert twins(run, portable_held) == {}
    # two held records that are it but for the key: none taken
    two = CodegenIndex(records=[held_a, _keyed(_rec(), "ffff" * 16)])
    assert twins(run, two) == {}


def _generated(rec, pid, text="def k(): pass\n", key=None):
    """``rec`` as a kernel of a generated module named after process ``pid``."""
    kernel = rec.request.kernel.model_copy(
        update={
            "module": f"_gen_module_rank_2_pid_{pid}",
            "path": f"index_copy_rank_2_pid_{pid}.py",
            "generated_source": text,
            "cache_key": key or rec.request.kernel.cache_key,
        }
    )
    return cgsynth.record(rec.request.model_copy(update={"kernel": kernel}), None)


def test_a_generated_twin_is_the_same_module_text_under_another_process_name():
    held_a, held_b = _generated(_rec(), 6117), _generated(_rec(block=512), 6117)
    held = CodegenIndex(records=[held_a, held_b])
    twin = _generated(_rec(), 911)
    edited = _generated(_rec(), 912, text="def k(): return 1\n")  # other module text
    run = CodegenIndex(records=[twin, edited, held_b])
    assert twins(run, held) == {twin.id: Twin(held_a.id, frozenset({PLACE}))}
    # a package module's kernel found in another module is another kernel
    moved = _rec(name="add_kernel")
    kernel = moved.request.kernel.model_copy(update={"module": "flag_gems.ops.y", "path": "y.py"})
    moved = cgsynth.record(moved.request.model_copy(update={"kernel": kernel}), None)
    assert twins(CodegenIndex(records=[moved]), CodegenIndex(records=[_rec()])) == {}
    # both reasons at once: moved and keyed portably where the record holds an address
    raw = CodegenIndex(records=[_generated(_rec(), 6117, key="e949" * 16)])
    both = _generated(_rec(), 911, key="portable:" + "1" * 64)
    got = twins(CodegenIndex(records=[both]), raw)
    assert got == {both.id: Twin(raw.records[0].id, frozenset({KEY, PLACE}))}


def test_the_nearest_record_of_a_generated_kernel_is_found_under_another_module_name():
    held = CodegenIndex(records=[_generated(_rec(), 6117)])
    found = _generated(_rec(num_warps=8), 911)
    line = why_not_held(found.id, CodegenIndex(records=[found]), held)
    assert line.startswith(f"add_kernel differs from record {held.records[0].id} in ")
    assert "config.num_warps: 4 → 8" in line and "kernel.module" in line
    # a package module's kernel of that qualname is another kernel
    assert nearest(_rec(num_warps=8), held.records) is None


def test_renamed_renames_launches_and_replay_timed():
    from zlbench.models.replay import LaunchCapture, LaunchSpec, RowLaunches

    spec = LaunchSpec(kernel_id="a", kernel="k", grid=[1, 1, 1])
    rows = [
        RowLaunches(run_name="op", op="op", dtype="bf16", shape="s", launches=[spec],
                    replay_timed=["b", "a"]),
        RowLaunches(run_name="op", op="op", dtype="bf16", shape="t", launches=[spec]),
    ]  # fmt: skip
    got = renamed(LaunchCapture(rows=rows), {"a": "z"})
    assert [s.kernel_id for r in got.rows for s in r.launches] == ["z", "z"]
    assert [r.replay_timed for r in got.rows] == [["b", "z"], None]
    index = CodegenIndex(records=[_rec(), _rec(block=512)])
    first = index.records[0].id
    assert [r.id for r in renamed_index(index, {first: "z"}).records] == [
        "z",
        index.records[1].id,
    ]
