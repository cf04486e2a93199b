"""Row parts in a batch (zlbench.runner.batch.parts): in replay with 2+ process slots an
op much longer than a slot's share runs as row parts, each its own op (retries,
--resume), merged at the end into the op's run dir and one ops_status.csv row. A fake
executor measures the baseline rows each plan entry keeps; real batches over the
benchpkg suite on the CPU check a part's process, and a process of row picks, measure
only their rows."""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from benchpkg_batch import BENCHPKG, interpret_config

from tests.support.batch_fakes import FakeExecutor, batch_config_factory, part_indices
from zlbench.models import (
    OpStatus,
    Row,
    RunResult,
    RunStatus,
    assign_occurrences,
    dump_json_model,
    load_json_model,
    read_ops_status,
)
from zlbench.runner.batch import partmerge
from zlbench.runner.batch import run as run_mod
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.parts import picked_rows, row_picks
from zlbench.runner.batch.plan import plan_selection, shard_costs
from zlbench.runner.batch.run import run_batch
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.catalog.inventory import inventory_path, scan_checkout, write_inventory

OPS = ["big", "a", "b", "c"]
# big: 2 dtypes x 3 rows ([64] twice in float16: occurrences 0, 1); the others 2 rows
BIG = [("float16", "[64]"), ("float16", "[128]"), ("float16", "[64]")] + [
    ("float32", "[64]"),
    ("float32", "[128]"),
    ("float32", "[256]"),
]
SMALL = [("float16", "[8]"), ("float16", "[16]")]
PARTS3 = ["big~1of3", "big~2of3", "big~3of3"]


@pytest.fixture
def setup(tmp_path):
    return batch_config_factory(tmp_path, OPS)


def replay_root(tmp_path: Path, rows: dict, seconds: dict[str, float]) -> Path:
    """A replayed batch: ``<root>/main/<op>/result.json`` with ``rows[op]`` ((dtype,
    shape) pairs) and its ops_status.csv with each op's ``seconds`` (the costs)."""
    root = tmp_path / "baseline"
    for op, pairs in rows.items():
        d = root / "main" / op
        d.mkdir(parents=True)
        base = [{"op": op, "dtype": dt, "shape": sh} for dt, sh in pairs]
        (d / "result.json").write_text(json.dumps({"rows": base}))
    statuses = [
        OpStatus(
            repo="main",
            op=op,
            run_name=op,
            status=RunStatus.PASS,
            rows=len(rows[op]),
            seconds=s,
            dtype_used=",".join(dict.fromkeys(dt for dt, _ in rows[op])),
        )
        for op, s in seconds.items()
    ]
    write_ops_status(root, statuses)
    return root


@pytest.fixture
def root(tmp_path) -> Path:
    """big: 30 s per dtype, the others 1 s: big is longer than a slot's share."""
    rows = {"big": BIG, "a": SMALL, "b": SMALL, "c": SMALL}
    return replay_root(tmp_path, rows, {"big": 60.0, "a": 1.0, "b": 1.0, "c": 1.0})


class RowsExecutor(FakeExecutor):
    """A FakeExecutor whose PASS measures the replayed baseline's rows the plan entry
    keeps, as the bench adapter filters them: of each dtype, the rows whose index in
    that dtype is k-1 modulo n (part [k, n]; every row without a part). A row's
    speedup is 1 + its place in the baseline's rows / 100."""

    def __init__(self, script=None, **kw):
        super().__init__(script, default="PASS", **kw)
        self.entries = []

    def __call__(self, plan, **kw):
        with self.lock:
            self.entries += list(plan.entries)
        return super().__call__(plan, **kw)

    def _run_one(self, entry, outcome, gpu):
        status, result = super()._run_one(entry, outcome, gpu)
        if outcome != "PASS":
            return status, result
        base = json.loads((Path(entry.replay_records).parent / "result.json").read_text())
        keep = part_indices(base["rows"], entry.part or (1, 1))
        if entry.rows is not None:  # picks: as the adapter keeps them
            picked = picked_rows(base["rows"], entry.rows)
            keep = [i for i in keep if base["rows"][i] in picked]
        rows = [_row(entry.op, base["rows"][i]["dtype"], base["rows"][i]["shape"], 1 + i / 100)
                for i in keep]  # fmt: skip
        result = result.model_copy(update={"rows": assign_occurrences(rows)})
        dump_json_model(Path(entry.run_dir) / "result.json", result)
        return status.model_copy(update={"rows": len(rows)}), result

    def ran(self) -> list[str]:
        return [e.run_name for e in self.entries]


def _row(op: str, dtype: str, shape: str, speedup: float) -> Row:
    return Row(op=op, dtype=dtype, shape=shape, speedup=speedup, latency_ms=1.0)


def big_rows(pairs=BIG) -> list[tuple]:
    """(dtype, shape, occurrence, speedup) of big measured whole."""
    rows = [_row("big", dt, sh, 1 + i / 100) for i, (dt, sh) in enumerate(pairs)]
    return [(r.dtype, r.shape, r.occurrence, r.speedup) for r in assign_occurrences(rows)]


def rows_of(run_dir: Path) -> list[tuple]:
    res = load_json_model(run_dir / "result.json", RunResult)
    return [(r.dtype, r.shape, r.occurrence, r.speedup) for r in res.rows]


def statuses(out_dir: Path) -> dict[str, OpStatus]:
    rows = read_ops_status(out_dir / "ops_status.csv")
    by_name = {s.run_name: s for s in rows}
    assert len(by_name) == len(rows)  # one row per op
    return by_name


def test_row_picks_measure_only_their_rows_and_dtypes_and_are_never_cut(setup, root):
    """The gate's op path after the kernel replay: an op of row picks runs whole (not in
    parts, long as it is), with only the picked rows' dtypes, and its PASS of just those
    rows is a PASS (not "fewer rows than the baseline"); the forecast charges it its
    picked share of its recorded seconds."""
    base = json.loads((root / "main" / "big" / "result.json").read_text())["rows"]
    picks = row_picks(base, lambda r: r["dtype"] == "float32" and r["shape"] != "[128]")
    assert picks == (("big", "float32", 0), ("big", "float32", 2))
    fake = RowsExecutor()
    cfg = setup(fake, gpus=["0"], gpu_share=3, replay_root=root, row_picks={"main/big": picks})
    out = run_batch(cfg)
    text = cfg.progress.getvalue()
    assert out.exit_code == 0, text
    assert "rows in parts" not in text and sorted(fake.ran()) == ["a", "b", "big", "c"]
    (big,) = [e for e in fake.entries if e.run_name == "big"]
    assert big.rows == [("big", "float32", 0), ("big", "float32", 2)] and big.part is None
    assert big.dtypes == ["float32"]
    assert [(dt, sh) for dt, sh, _, _ in rows_of(out.out_dir / "main" / "big")] == [
        ("float32", "[64]"),
        ("float32", "[256]"),
    ]
    assert statuses(out.out_dir)["big"].status is RunStatus.PASS
    # the forecast charges big its picked share: 2 of its 6 rows
    sel = run_mod.with_picks(cfg, run_mod.plan_selection(cfg))
    whole = run_mod.selection_costs(cfg, sel.keys())
    picked = run_mod.picked_costs(cfg, sel, whole)
    assert picked.seconds["main/big"] == pytest.approx(whole.seconds["main/big"] * 2 / 6)
    assert picked.seconds["main/a"] == whole.seconds["main/a"]


def test_shards_are_dealt_by_the_row_picks_share_of_an_ops_seconds(setup, tmp_path):
    """The gate's sharded op path measures only the rows the replay left it: the shard
    deal charges an op of row picks its picked share (big: 1 of its 6 rows), as the
    forecast does, not its whole recorded seconds (v7's four shards came to 435-682 s
    by the model when dealt by whole ops)."""
    rows = {"big": BIG, "a": SMALL, "b": SMALL, "c": SMALL}
    root = replay_root(tmp_path, rows, {"big": 240.0, "a": 60.0, "b": 45.0, "c": 24.0})
    base = json.loads((root / "main" / "big" / "result.json").read_text())["rows"]
    picks = {
        "main/big": row_picks(base, lambda r: (r["dtype"], r["shape"]) == ("float32", "[256]"))
    }
    assert len(picks["main/big"]) == 1

    def config(**kw):
        return setup(RowsExecutor(), gpus=["0"], replay_root=root, **kw)

    def shards(**kw) -> list[list[str]]:
        return [sorted(plan_selection(config(shard=(k, 2), **kw)).keys()) for k in (1, 2)]

    # the costs: each op's recorded seconds (a replay asking no dtypes measures the
    # dtypes it was recorded with: big two, the others one)
    whole = {"main/big": 240.0, "main/a": 60.0, "main/b": 45.0, "main/c": 24.0}
    sel = plan_selection(config())
    assert shard_costs(config(), sel).seconds == whole
    assert shard_costs(config(row_picks=picks), sel).seconds == {**whole, "main/big": 40.0}
    # whole ops: big alone against a + b + c
    assert shards() == [["main/big"], ["main/a", "main/b", "main/c"]]
    # big's pick at 40 s: a (60) + c (24) against b (45) + big (40)
    assert shards(row_picks=picks) == [["main/a", "main/c"], ["main/b", "main/big"]]


def test_a_long_op_runs_as_row_parts_merged_into_one_op(setup, root):
    fake = RowsExecutor()
    cfg = setup(fake, gpus=["0"], gpu_share=3, replay_root=root)
    out = run_batch(cfg)
    text = cfg.progress.getvalue()
    assert out.exit_code == 0, text
    assert "batch: rows in parts (longer than a slot's share): main/big x3" in text
    # big ran as 3 parts, never whole; each part once, in its own run dir under .parts
    assert sorted(fake.ran()) == sorted(["a", "b", "c", *PARTS3])
    parts = {e.run_name: e for e in fake.entries if e.part}
    assert sorted(parts) == PARTS3
    records = str(root.resolve() / "main" / "big" / "autotune_records")
    for k, name in enumerate(PARTS3, 1):
        e = parts[name]
        assert e.part == [k, 3] and e.op == "big"
        assert e.run_dir == str(out.out_dir / ".parts" / "main" / name)
        assert e.replay_records == records  # the op's records
        assert (out.out_dir / ".parts" / "main" / name / ".complete").is_file()
    assert all(e.part is None for e in fake.entries if not e.run_name.startswith("big"))
    # the parts ran in the 3 slots of GPU 0 (each process slot one part)
    slots = [c for c in fake.calls if any(n.startswith("big~") for n, *_ in c["entries"])]
    assert len(slots) == 3 and {c["gpu"] for c in slots} == {"0"}
    # one op again: one ops_status row, the parts' rows and seconds summed
    st = statuses(out.out_dir)
    assert sorted(st) == ["a", "b", "big", "c"]
    big = st["big"]
    assert (big.status, big.rows, big.seconds, big.attempts) == (RunStatus.PASS, 6, 1.5, 1)
    assert big.run_dir == "main/big" and big.dtype_used == "float16,float32"
    assert big.note == "rows measured in 3 parts" and big.gpu == "0"
    assert [s.run_name for s in out.statuses] == ["a", "b", "big", "c"]
    # its run dir: every row in the order big measures them whole, complete
    big_dir = out.out_dir / "main" / "big"
    assert rows_of(big_dir) == big_rows()
    assert load_json_model(big_dir / "result.json", RunResult).run_name == "big"
    assert (big_dir / ".complete").read_text() == "PASS\n"
    log = (big_dir / "run.log").read_text()
    assert all(f"=== zlbench: part {k} of 3 (big~{k}of3)" in log for k in (1, 2, 3))
    # the parts' own rows are kept beside their dirs (for --resume)
    kept = read_ops_status(out.out_dir / ".parts" / "ops_status.csv")
    assert sorted(s.run_name for s in kept) == PARTS3
    assert all(s.rows == 2 and s.run_dir.startswith(".parts/main/big~") for s in kept)
    # batch.json and summary.csv name the op, never a part
    info = read_batch_info(out.out_dir)
    assert sorted(info.ops) == ["main/a", "main/b", "main/big", "main/c"]
    assert info.counts["PASS"] == 4 and info.rows == 12
    with open(out.out_dir / "summary.csv", newline="") as f:
        summary = list(csv.DictReader(f))
    assert out.summary_rows == len(summary) == 12
    assert [(r["dtype"], r["shape"]) for r in summary if r["run_name"] == "big"] == BIG
    assert not any("~" in r["run_name"] for r in summary)
    assert "PASS    main/big rows=6 from 3 row parts, 1.5s of op time" in text


def test_two_gpus_are_two_slots(setup, root):
    fake = RowsExecutor()
    out = run_batch(setup(fake, gpus=["0", "1"], replay_root=root))
    assert out.exit_code == 0
    parts = {e.run_name: e.part for e in fake.entries if e.part}
    assert parts == {"big~1of2": [1, 2], "big~2of2": [2, 2]}
    gpu_of = {n: c["gpu"] for c in fake.calls for n, *_ in c["entries"]}
    assert {gpu_of["big~1of2"], gpu_of["big~2of2"]} == {"0", "1"}  # one part per GPU
    big = statuses(out.out_dir)["big"]
    assert big.rows == 6 and sorted(big.gpu.split(",")) == ["0", "1"]
    assert rows_of(out.out_dir / "main" / "big") == big_rows()


def test_durations_given_to_the_batch_decide_too(setup, root):
    fake = RowsExecutor()
    durations = {"main/big": 1.0, "main/a": 1.0, "main/b": 1.0, "main/c": 40.0}
    cfg = setup(fake, gpus=["0"], gpu_share=2, replay_root=root, durations=durations)
    out = run_batch(cfg)
    assert "main/c x2" in cfg.progress.getvalue()
    assert sorted(fake.ran()) == ["a", "b", "big", "c~1of2", "c~2of2"]
    assert statuses(out.out_dir)["c"].rows == 2


@pytest.mark.parametrize(
    "kw",
    [
        {"gpus": ["0"], "gpu_share": 3, "split_rows": "off"},
        {"gpus": ["0"], "gpu_share": 1},
        {"gpus": ["0"]},
    ],
    ids=["split-rows-off", "one-slot", "default-one-gpu"],
)
def test_the_op_runs_whole(setup, root, kw):
    fake = RowsExecutor()
    cfg = setup(fake, replay_root=root, **kw)
    out = run_batch(cfg)
    assert out.exit_code == 0
    assert sorted(fake.ran()) == ["a", "b", "big", "c"]
    assert all(e.part is None for e in fake.entries)
    assert not (out.out_dir / ".parts").exists()
    assert statuses(out.out_dir)["big"].note == ""
    assert rows_of(out.out_dir / "main" / "big") == big_rows()
    assert "rows in parts" not in cfg.progress.getvalue()


def test_record_mode_never_cuts(setup):
    fake = FakeExecutor()
    out = run_batch(setup(fake, gpus=["0"], gpu_share=3, durations={"main/big": 60.0}))
    assert sorted(e[0] for c in fake.calls for e in c["entries"]) == sorted(OPS)
    assert not (out.out_dir / ".parts").exists()


def test_an_op_is_cut_into_no_more_parts_than_its_fewest_rows_of_one_dtype(setup, tmp_path):
    # 3 dtypes x 2 rows: with 4 slots, 4 parts would leave parts 3 and 4 no row
    three = [(dt, sh) for dt in ("float16", "float32", "bfloat16") for sh in ("[1]", "[2]")]
    root = replay_root(tmp_path, {"big": three, "a": SMALL}, {"big": 60.0, "a": 1.0})
    fake = RowsExecutor()
    out = run_batch(setup(fake, ops=["big", "a"], gpus=["0"], gpu_share=4, replay_root=root))
    assert out.exit_code == 0
    parts = [e for e in fake.entries if e.part]
    assert sorted(e.run_name for e in parts) == ["big~1of2", "big~2of2"]
    kept = {s.run_name: s for s in read_ops_status(out.out_dir / ".parts" / "ops_status.csv")}
    assert {n: s.rows for n, s in kept.items()} == {"big~1of2": 3, "big~2of2": 3}
    assert rows_of(out.out_dir / "main" / "big") == big_rows(three)


def test_a_crashed_part_is_retried_as_a_part(setup, root):
    fake = RowsExecutor({"big~1of3": ["CRASH:-11", "PASS"]})
    out = run_batch(setup(fake, gpus=["0"], gpu_share=3, replay_root=root))
    assert out.exit_code == 0
    assert fake.ran().count("big~1of3") == 2 and fake.ran().count("big~2of3") == 1
    big = statuses(out.out_dir)["big"]
    assert (big.status, big.rows, big.attempts) == (RunStatus.PASS, 6, 2)
    assert big.note.startswith("rows measured in 3 parts; part 1/3: CRASH rc=-11")
    assert (out.out_dir / ".attempts" / "main" / "big~1of3" / "1").is_dir()
    assert rows_of(out.out_dir / "main" / "big") == big_rows()


def test_a_failed_part_fails_the_op_and_resume_reruns_only_that_part(setup, root):
    first = RowsExecutor({"big~2of3": ["FAIL"]})
    cfg = dict(gpus=["0"], gpu_share=3, replay_root=root, max_retries=0)
    out = run_batch(setup(first, **cfg))
    assert out.exit_code == 1
    st = statuses(out.out_dir)
    assert sorted(st) == ["a", "b", "big", "c"]
    big = st["big"]
    assert big.status is RunStatus.FAIL and big.rc == 1 and big.rows == 4
    assert big.note == "rows measured in 3 parts; part 2/3: fake FAIL"
    big_dir = out.out_dir / "main" / "big"
    assert not (big_dir / ".complete").exists()
    whole = big_rows()
    assert rows_of(big_dir) == [whole[i] for i in (0, 2, 3, 5)]  # parts 1 and 3
    assert load_json_model(big_dir / "result.json", RunResult).status is RunStatus.FAIL

    again = RowsExecutor()
    out2 = run_batch(setup(again, resume=True, **cfg))
    assert out2.out_dir == out.out_dir and out2.exit_code == 0
    assert again.ran() == ["big~2of3"]  # the complete parts and ops are kept
    st = statuses(out.out_dir)
    assert sorted(st) == ["a", "b", "big", "c"]
    big = st["big"]
    assert (big.status, big.rows, big.rc) == (RunStatus.PASS, 6, 0)
    # the kept parts' rows count: their seconds, GPU and dtypes (from .parts/ops_status.csv)
    assert (big.seconds, big.gpu, big.dtype_used) == (1.5, "0", "float16,float32")
    assert rows_of(big_dir) == whole and (big_dir / ".complete").is_file()
    assert (out.out_dir / ".attempts" / "main" / "big" / "previous" / "result.json").is_file()
    assert (out.out_dir / ".attempts" / "main" / "big~2of3" / "previous").is_dir()
    assert out2.summary_rows == 12

    third = RowsExecutor()
    out3 = run_batch(setup(third, resume=True, **cfg))
    assert third.ran() == [] and out3.exit_code == 0 and out3.summary_rows == 12
    assert statuses(out.out_dir)["big"] == big
    assert rows_of(big_dir) == whole


@pytest.mark.parametrize(
    "split",
    [
        "off",
        "auto",
    ],
)
def test_the_parts_of_one_failing_op_are_one_op_for_systemic_failures(setup, root, split):
    launch = ["LAUNCH"]  # SystemError in triton/backends/nvidia/driver.py:328
    script = {"big": launch, **{p: launch for p in PARTS3}, "a": ["LAUNCH", "PASS"]}
    fake = RowsExecutor(script)
    cfg = setup(fake, gpus=["0"], gpu_share=3, replay_root=root, split_rows=split)
    out = run_batch(cfg)
    assert ("main/big x3" in cfg.progress.getvalue()) == (split == "auto")
    st = statuses(out.out_dir)
    assert st["big"].status is RunStatus.FAIL
    # two ops failed alike (fewer than 3): not systemic, so a's failure is retried
    assert (st["a"].status, st["a"].attempts) == (RunStatus.PASS, 2)
    assert read_batch_info(out.out_dir).systemic == []


def test_resume_merges_the_parts_of_a_batch_stopped_before_its_merge(setup, root, monkeypatch):
    with monkeypatch.context() as m:  # the batch ends (killed) before it merges
        m.setattr(partmerge.PartsMerge, "merge_all", lambda self: None)
        out = run_batch(setup(RowsExecutor(), gpus=["0"], gpu_share=3, replay_root=root))
    assert sorted(statuses(out.out_dir)) == sorted(["a", "b", "c", *PARTS3])
    assert not (out.out_dir / "main" / "big").exists()
    again = RowsExecutor()
    out2 = run_batch(setup(again, gpus=["0"], gpu_share=3, replay_root=root, resume=True))
    assert again.ran() == [] and out2.exit_code == 0
    big = statuses(out.out_dir)["big"]
    assert (big.status, big.rows, big.seconds) == (RunStatus.PASS, 6, 1.5)
    assert sorted(statuses(out.out_dir)) == ["a", "b", "big", "c"]
    assert rows_of(out.out_dir / "main" / "big") == big_rows()


# --------------------------------------------------------------------------- a real batch

SHAPES = "add:\n  shapes:\n    - [64]\n    - [8, 8]\n    - [32]\n  shape_desc: M\n"


def _recorded_add(tmp_path: Path):
    """benchpkg's ``add`` recorded for real on the CPU (float32 then float16, 3 shapes
    each): (its batch config, the record's outcome, its progress, its rows' keys)."""
    fg = tmp_path / "fg"
    shutil.copytree(BENCHPKG, fg, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    write_inventory(inventory_path(tmp_path / "ops", "main"), scan_checkout(fg, "main"))
    shape_file = tmp_path / "shapes.yaml"
    shape_file.write_text(SHAPES)
    kw = {"dtypes": ["float32", "float16"], "shape_file": shape_file}
    progress = io.StringIO()
    cfg = interpret_config(tmp_path, fg, ["add"], progress, **kw)
    record = run_batch(cfg)
    assert record.exit_code == 0, progress.getvalue()
    recorded = load_json_model(record.out_dir / "main" / "add" / "result.json", RunResult)
    keys = [(r.dtype, r.shape) for r in recorded.rows]
    assert [dt for dt, _ in keys] == ["float32"] * 3 + ["float16"] * 3
    return cfg, record, progress, keys, recorded


@pytest.mark.slow
def test_a_real_part_measures_only_its_rows(tmp_path):
    cfg, record, progress, keys, recorded = _recorded_add(tmp_path)
    assert len(set(keys)) == 6 and recorded.mode == "record"
    replay = replace(cfg, out_dir=tmp_path / "replay", replay_root=record.out_dir, gpu_share=3)
    out = run_batch(replay)
    text = progress.getvalue()
    assert out.exit_code == 0, text
    assert "main/add x3" in text
    for k in (1, 2, 3):
        part = out.out_dir / ".parts" / "main" / f"add~{k}of3"
        res = load_json_model(part / "result.json", RunResult)
        assert res.status is RunStatus.PASS
        # this process measured only row k-1 of each dtype
        assert [(r.dtype, r.shape) for r in res.rows] == [keys[k - 1], keys[k + 2]]
    merged = load_json_model(out.out_dir / "main" / "add" / "result.json", RunResult)
    assert [(r.dtype, r.shape, r.occurrence) for r in merged.rows] == [
        (r.dtype, r.shape, r.occurrence) for r in recorded.rows
    ]
    assert merged.mode == "replay" and (out.out_dir / "main" / "add" / ".complete").is_file()
    (add,) = read_ops_status(out.out_dir / "ops_status.csv")
    assert (add.run_name, add.status, add.rows) == ("add", RunStatus.PASS, 6)


@pytest.mark.slow
def test_real_row_picks_measure_only_their_rows_and_dtype(tmp_path):
    """A real benchmark process (benchpkg on the CPU) given row picks measures exactly
    those rows: here the float16 row at index 1 and nothing of float32."""
    cfg, record, progress, keys, _ = _recorded_add(tmp_path)
    base = json.loads((record.out_dir / "main" / "add" / "result.json").read_text())["rows"]
    picks = row_picks(base, lambda r: (r["dtype"], r["shape"]) == keys[4])  # float16's 2nd
    assert picks == (("add", "float16", 1),)
    replay = replace(cfg, out_dir=tmp_path / "replay", replay_root=record.out_dir,
                     row_picks={"main/add": picks})  # fmt: skip
    out = run_batch(replay)
    assert out.exit_code == 0, progress.getvalue()
    res = load_json_model(out.out_dir / "main" / "add" / "result.json", RunResult)
    assert [(r.dtype, r.shape) for r in res.rows] == [keys[4]] and res.status is RunStatus.PASS
    (add,) = read_ops_status(out.out_dir / "ops_status.csv")
    assert (add.status, add.rows, add.dtype_used) == (RunStatus.PASS, 1, "float16")


class EveryRowExecutor(RowsExecutor):
    """Each part measures every row: a benchmark the plugins' row filter does not reach
    (its own init_user_config, never calling upstream's)."""

    def __call__(self, plan, **kw):
        for e in plan.entries:
            e.part = None
        return super().__call__(plan, **kw)


def test_parts_that_measure_other_rows_than_the_baseline_fail_the_op(setup, root):
    out = run_batch(setup(EveryRowExecutor(), gpus=["0"], gpu_share=3, replay_root=root))
    big = statuses(out.out_dir)["big"]
    assert big.status is RunStatus.FAIL and big.rows == 18
    assert "more rows than the baseline holds (big/float16 9 > 3, big/float32 9 > 3)" in big.note
    assert "--split-rows off" in big.note
    big_dir = out.out_dir / "main" / "big"
    assert not (big_dir / ".complete").exists()
    assert load_json_model(big_dir / "result.json", RunResult).status is RunStatus.FAIL
    assert out.exit_code == 1


def test_resume_keep_failed_keeps_a_split_op_that_failed(setup, root):
    cfg = dict(gpus=["0"], gpu_share=3, replay_root=root, max_retries=0)
    out = run_batch(setup(RowsExecutor({"big~2of3": ["FAIL"]}), **cfg))
    failed = statuses(out.out_dir)["big"]
    assert failed.status is RunStatus.FAIL
    again = RowsExecutor()
    run_batch(setup(again, resume=True, keep_failed=True, **cfg))
    assert again.ran() == []  # not the failed part either
    assert statuses(out.out_dir)["big"] == failed


def test_a_part_that_cannot_be_merged_is_left_as_parts(setup, root):
    class BadRecords(RowsExecutor):
        def _run_one(self, entry, outcome, gpu):
            got = super()._run_one(entry, outcome, gpu)
            if entry.run_name == "big~3of3":
                records = Path(entry.run_dir) / "autotune_records"
                records.mkdir(parents=True, exist_ok=True)
                (records / "big.json").write_text("{not json")
            return got

    cfg = setup(BadRecords(), gpus=["0"], gpu_share=3, replay_root=root)
    out = run_batch(cfg)
    assert "cannot merge the row parts of main/big" in cfg.progress.getvalue()
    st = statuses(out.out_dir)
    assert sorted(st) == ["a", "b", "big~1of3", "big~2of3", "big~3of3", "c"]
    assert not (out.out_dir / "main" / "big").exists()
    assert (out.out_dir / "summary.csv").is_file() and (out.out_dir / "batch.json").is_file()
    assert not list((out.out_dir / ".parts" / "main").glob(".merging-*"))  # no scratch left


def test_resume_keep_failed_keeps_a_failed_part_when_the_op_row_is_not_a_failure(setup, root):
    """The merged row is the worst part's, maybe ERROR (NOT MEASURED): the failed part's
    own row, in .parts/ops_status.csv, still keeps it from running again."""
    cfg = dict(gpus=["0"], gpu_share=3, replay_root=root, max_retries=0)
    out = run_batch(setup(RowsExecutor({"big~1of3": ["FAIL"]}), **cfg))
    rows = read_ops_status(out.out_dir / "ops_status.csv")
    rows = [r.model_copy(update={"status": RunStatus.ERROR}) if r.run_name == "big" else r
            for r in rows]  # fmt: skip
    write_ops_status(out.out_dir, rows)
    again = RowsExecutor()
    run_batch(setup(again, resume=True, keep_failed=True, **cfg))
    assert again.ran() == []  # parts 2 and 3 complete, part 1 kept as it failed
    assert statuses(out.out_dir)["big"].status is RunStatus.FAIL


def test_a_side_of_an_interleaved_ab_forecasts_both_sides_turns(setup, root, tmp_path):
    """run_batch's forecast line for one side of an interleaved A/B (``pair_dir``)
    counts both sides' turns (runner.batch.run.turn_costs): the ops' recorded seconds
    AB_SIDE_FACTOR times, against once for the same batch alone (the processes' start is
    not the ops')."""
    from zlbench.protocol.pairs import AB_SIDE_FACTOR

    def expected(**kw) -> tuple[float, float]:
        cfg = setup(RowsExecutor(), gpus=["0"], replay_root=root, **kw)
        assert run_batch(cfg).exit_code == 0
        (line,) = [x for x in cfg.progress.getvalue().splitlines() if x.startswith("expected:")]
        head = "expected: 4 op(s) on 1 GPU(s), about "
        assert line.startswith(head), line
        ops = run_mod.selection_costs(cfg, run_mod.plan_selection(cfg).keys()).seconds
        return seconds_of(line[len(head) :].split(" by ")[0]), sum(ops.values())

    alone, recorded = expected(out_dir=tmp_path / "alone")
    side, _ = expected(out_dir=tmp_path / "side", pair_dir=tmp_path / "pairs", pair_side="pr")
    assert recorded > 60
    assert side - alone == pytest.approx((AB_SIDE_FACTOR - 1) * recorded, abs=1.0)


def seconds_of(text: str) -> float:
    """``runner.batch.progress.fmt_seconds``'s "12.3s" / "1m03s" back to seconds."""
    m, _, s = text.rpartition("m")
    return 60 * float(m or 0) + float(s.rstrip("s"))
