"""``zlbench baseline capture`` (zlbench.runner.capture_baseline, issue 51): an older
baseline plus the launch captures of a replay of its records, rows, timings and
records unchanged. Synthetic baseline and batch dirs (no GPU, no compile); the batch
run is a seam."""

from __future__ import annotations

import hashlib
import shutil
import stat
from pathlib import Path

import pytest

from tests.support import cgsynth
from tests.support.zlsynth import (
    CREATED,
    brow,
    crow,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
    write_status,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import VerifyReport, verify
from zlbench.models import (
    BaselineManifest,
    BatchInfo,
    OpStatus,
    RunStatus,
    dump_json_model,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.batch import read_ops_status
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture, LaunchSpec, RowLaunches
from zlbench.models.run import Environment
from zlbench.models.timing import Timing
from zlbench.runner import capture_baseline
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.capture_baseline import CaptureJob, capture, capture_batch

SH, SH2 = "[torch.Size([64])]", "[torch.Size([128])]"
OPS = ("abs", "add", "mm", "relu")
FOREIGN_ID = "feedfacefeedface"
H100 = "NVIDIA H100 80GB HBM3"
DEFAULT_TIMING = Timing(mode="cudagraph")  # what a batch with no budgets given records


def _baseline(root: Path, own_capture: bool = False, mm_req=None) -> dict[str, str]:
    """Ops abs, add, mm, relu, each with one codegen record, autotune records and two
    rows; ``own_capture``: add carries a capture of its own; ``mm_req``: mm's request.
    Returns op -> kernel id."""
    ids = {}
    for op in OPS:
        req = mm_req if op == "mm" and mm_req is not None else cgsynth.request(name=f"{op}_kernel")
        texts = cgsynth.stage_texts(op)
        rec = cgsynth.record(req, texts, uses=[cgsynth.use(op, dtype="bfloat16", shape=SH)])
        cgsynth.write_index(root / "main" / op / "codegen", [rec], [texts])
        records = root / "main" / op / "autotune_records"
        records.mkdir(parents=True)
        (records / f"{op}.json").write_text("{}\n")
        ids[op] = rec.id
    if own_capture:
        own = _capture("add", ids["add"]).model_copy(update={"rows": []})  # not the batch's
        dump_json_model(root / "main" / "add" / "codegen" / LAUNCHES_JSON, own)
    write_baseline(root, {op: [brow(op, SH, 1.0), brow(op, SH2, 1.2)] for op in OPS})
    return ids


def _capture(op: str, kernel_id: str) -> LaunchCapture:
    spec = LaunchSpec(kernel_id=kernel_id, kernel=f"{op}_kernel", grid=[4, 1, 1])
    rows = [
        RowLaunches(run_name=op, op=op, dtype="bfloat16", shape=s, launches=[spec])
        for s in (SH, SH2)
    ]
    return LaunchCapture(rows=rows)


def _batch(root: Path, ids: dict[str, str], replay_root, mode: str = "replay") -> Path:
    """A replay batch of add, mm and relu (abs not run): add's capture names its
    baseline kernel, mm's a kernel the baseline does not hold, relu left none."""
    ran = ("add", "mm", "relu")
    write_results(root, [run_result(op, [crow(op, SH, 1.0)]) for op in ran], info=False)
    info = BatchInfo(
        created=CREATED,
        mode=mode,
        replay_root=str(replay_root) if replay_root is not None else None,
        ops=[f"main/{op}" for op in ran],
    )
    dump_json_model(root / "batch.json", info)
    for op, kid in (("add", ids["add"]), ("mm", FOREIGN_ID)):
        dump_json_model(root / "main" / op / "codegen" / LAUNCHES_JSON, _capture(op, kid))
    return root


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file's sha256 and mode, by path relative to ``root``."""
    sha = hashlib.sha256
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {
        p.relative_to(root).as_posix(): (sha(p.read_bytes()).hexdigest(), p.stat().st_mode)
        for p in files
    }


def _manifest(root: Path) -> BaselineManifest:
    return load_yaml_model(root / "manifest.yaml", BaselineManifest)


@pytest.fixture
def setup(tmp_path):
    base = tmp_path / "baselines" / "vtest"
    ids = _baseline(base)
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    return base, batch, ids, tmp_path / "baselines" / "vnew"


def _run(base: Path, new: Path, *extra: str) -> int:
    return main(["baseline", "capture", "--baseline", str(base), "--out", str(new), *extra])


def test_the_new_version_is_the_baseline_plus_its_sound_captures(setup, capsys):
    base, batch, ids, new = setup
    before = _tree(base)
    assert _run(base, new, "--from", str(batch)) == 0
    out = capsys.readouterr().out
    assert _tree(base) == before  # the baseline is never changed
    old, got = _tree(base), _tree(new)
    # every file of the baseline, rows, records and codegen records, byte for byte
    assert {k: v[0] for k, v in got.items() if k in old and k != "manifest.yaml"} == {
        k: v[0] for k, v in old.items() if k != "manifest.yaml"
    }
    assert sorted(set(got) - set(old)) == ["main/add/codegen/launches.json"]
    src = batch / "main" / "add" / "codegen" / LAUNCHES_JSON
    got_capture = load_json_model(new / "main" / "add" / "codegen" / LAUNCHES_JSON, LaunchCapture)
    assert got_capture == load_json_model(src, LaunchCapture)  # the run left no index
    # mm's capture names a kernel the baseline does not hold: left out, in one line
    assert not (new / "main" / "mm" / "codegen" / LAUNCHES_JSON).exists()
    (mm_line,) = [ln for ln in out.splitlines() if "main/mm" in ln]
    assert FOREIGN_ID in mm_line and "own codegen records do not hold it either" in mm_line
    assert "1 ops captured (2 rows), 3 ops without a capture" in out
    assert f"without a capture: 1 op(s): {capture_baseline.NOT_RUN}" in out
    assert f"without a capture: 1 op(s): {capture_baseline.NO_CAPTURE}" in out
    assert f"without a capture: 1 op(s): {capture_baseline.FOREIGN}" in out
    assert "verified: 4 ops, 8 rows: OK" in out


def _foreign_compiled(batch: Path, req) -> str:
    """mm's capture in ``batch`` names ``req``'s kernel, and the batch's own codegen
    index of mm holds that request (what the batch compiled)."""
    texts = cgsynth.stage_texts("mm-h100")
    use = cgsynth.use("mm", dtype="bfloat16", shape=SH).model_copy(update={"timed": True})
    rec = cgsynth.record(req, texts, uses=[use])
    cgsynth.write_index(batch / "main" / "mm" / "codegen", [rec], [texts])
    dump_json_model(batch / "main" / "mm" / "codegen" / LAUNCHES_JSON, _capture("mm", rec.id))
    return rec.id


def test_a_foreign_capture_names_what_its_kernel_differs_in(setup, capsys):
    """The batch compiled mm_kernel with BLOCK 512 and 8 warps where the baseline
    records 256 and 4: the line names those fields, and nothing else."""
    base, batch, ids, new = setup
    kid = _foreign_compiled(batch, cgsynth.request(name="mm_kernel", block=512, num_warps=8))
    assert _run(base, new, "--from", str(batch)) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "main/mm" in ln]
    assert kid in line
    tail = line.split(f"mm_kernel differs from record {ids['mm']} in ")[1]
    assert tail == "config.num_warps: 4 → 8; constexprs[2]: 256 → 512"


def test_a_foreign_capture_of_a_kernel_the_baseline_never_compiled_says_so(setup, capsys):
    base, batch, _, new = setup
    _foreign_compiled(batch, cgsynth.request(name="index_kernel"))
    assert _run(base, new, "--from", str(batch)) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "main/mm" in ln]
    assert line.endswith("index_kernel: the baseline records no kernel of that name for this op")


def _mm_captured(base: Path, new: Path, batch: Path, ids: dict[str, str], capsys):
    """``baseline capture --from batch``: mm captured, its capture naming the baseline's
    mm kernel only. Returns the command's output and mm's capture."""
    assert _run(base, new, "--from", str(batch)) == 0
    out = capsys.readouterr().out
    assert "main/mm: no capture" not in out
    got = load_json_model(new / "main" / "mm" / "codegen" / LAUNCHES_JSON, LaunchCapture)
    assert {s.kernel_id for r in got.rows for s in r.launches} == {ids["mm"]}
    return out, got


def test_an_address_keyed_kernel_recorded_under_its_old_key_is_taken_as_its_record(setup, capsys):
    """The batch kept a portable key for mm_kernel (it found it address-keyed), the
    baseline triton's own (an address): the same request but for the key is the
    baseline's record, the capture and each row's replay_timed name the baseline's id."""
    base, batch, ids, new = setup
    req = cgsynth.request(name="mm_kernel")
    kernel = req.kernel.model_copy(update={"cache_key": "portable:" + "7" * 64})
    kid = _foreign_compiled(batch, req.model_copy(update={"kernel": kernel}))
    assert kid != ids["mm"]
    out, got = _mm_captured(base, new, batch, ids, capsys)
    assert "1 op(s) captured with a kernel the baseline recorded under" in out
    assert [r.replay_timed for r in got.rows] == [[ids["mm"]], []]  # SH timed, SH2 not run
    assert _manifest(new).summary["captures"]["address_twins"] == ["main/mm"]


def test_a_kernel_that_differs_in_more_than_its_key_is_not_taken(setup, capsys):
    base, batch, _, new = setup
    req = cgsynth.request(name="mm_kernel", block=512)
    kernel = req.kernel.model_copy(update={"cache_key": "portable:" + "7" * 64})
    _foreign_compiled(batch, req.model_copy(update={"kernel": kernel}))
    assert _run(base, new, "--from", str(batch)) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "main/mm: no capture" in ln]
    assert line.endswith("constexprs[2]: 256 → 512; kernel.cache_key: None → portable:777…")
    assert _manifest(new).summary["captures"]["address_twins"] == []


def _generated_mm(pid: int):
    """mm_kernel of a module FlagGems generated in process ``pid`` (named after it)."""
    req = cgsynth.request(name="mm_kernel")
    kernel = req.kernel.model_copy(
        update={
            "module": f"_gen_module_rank_2_pid_{pid}",
            "path": f"mm_rank_2_pid_{pid}.py",
            "generated_source": "@triton.jit\ndef mm_kernel(): pass\n",
        }
    )
    return req.model_copy(update={"kernel": kernel})


def test_a_generated_kernel_recorded_under_another_process_name_is_taken_as_its_record(
    tmp_path, capsys
):
    """The baseline recorded mm_kernel in a module its generator named after process
    6117, the batch compiled the same module text named after 911: the same request but
    for the module's name and file is the baseline's record."""
    base, new = tmp_path / "baselines" / "vtest", tmp_path / "baselines" / "vnew"
    ids = _baseline(base, mm_req=_generated_mm(6117))
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    assert _foreign_compiled(batch, _generated_mm(911)) != ids["mm"]
    out, _ = _mm_captured(base, new, batch, ids, capsys)
    assert "1 op(s) captured with a generated kernel the baseline recorded under another" in out
    summary = _manifest(new).summary["captures"]
    assert (summary["generated_twins"], summary["address_twins"]) == (["main/mm"], [])


def test_the_new_manifest_hashes_the_captures_and_says_where_they_came_from(setup, capsys):
    base, batch, _, new = setup
    assert _run(base, new, "--from", str(batch)) == 0
    old, m = _manifest(base), _manifest(new)
    rel = "main/add/codegen/launches.json"
    assert m.files == {**old.files, rel: m.files[rel]}
    assert verify(new, m).ok
    assert (m.name, m.derived_from) == ("vnew", "vtest")
    same = {"name", "created", "derived_from", "summary", "files"}
    assert m.model_dump(exclude=same) == old.model_dump(exclude=same)
    cap = m.summary["captures"]
    assert (cap["replayed"], cap["ops"], cap["rows"], cap["from"]) == ("vtest", 1, 2, "runs/replay")
    assert cap["unsound"] == ["main/mm"]
    assert {k: v for k, v in m.summary.items() if k != "captures"} == old.summary
    capsys.readouterr()
    assert main(["baseline", "show", str(new)]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "captures" in ln]
    assert "1 ops (2 rows)" in line and "runs/replay" in line and "a replay of vtest" in line


def test_a_capture_the_baseline_has_already_is_kept(tmp_path, capsys):
    base = tmp_path / "baselines" / "vtest"
    ids = _baseline(base, own_capture=True)
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    own = (base / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes()
    new = tmp_path / "baselines" / "vnew"
    assert _run(base, new, "--from", str(batch)) == 0
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes() == own
    assert "0 ops captured (0 rows), 3 ops without a capture, 1 kept their own" in (
        capsys.readouterr().out
    )
    # --replace: the batch captured add soundly, so add takes the batch's capture
    again = tmp_path / "baselines" / "vagain"
    assert _run(base, again, "--from", str(batch), "--replace") == 0
    got = (again / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes()
    assert got != own and load_json_model(again / "main" / "add" / "codegen" / LAUNCHES_JSON,
                                          LaunchCapture).rows  # fmt: skip
    out = capsys.readouterr().out
    assert "1 ops captured (2 rows), 3 ops without a capture, 0 kept their own, 1 replaced " in out
    assert _manifest(again).summary["captures"]["replaced"] == ["main/add"]


def test_replace_keeps_a_capture_no_batch_captured_soundly(tmp_path, capsys):
    base = tmp_path / "baselines" / "vtest"
    ids = _baseline(base, own_capture=True)
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    own = (base / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes()
    (batch / "main" / "add" / "codegen" / LAUNCHES_JSON).unlink()  # the batch's run of add: none
    new = tmp_path / "baselines" / "vnew"
    assert _run(base, new, "--from", str(batch), "--replace") == 0
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).read_bytes() == own
    assert "1 kept their own;" in capsys.readouterr().out
    assert _manifest(new).summary["captures"]["replaced"] == []


def test_ops_narrow_what_is_captured(setup, capsys):
    base, batch, _, new = setup
    assert _run(base, new, "--from", str(batch), "--ops", "mm", "relu") == 0
    assert not (new / "main" / "add" / "codegen" / LAUNCHES_JSON).exists()
    out = capsys.readouterr().out
    assert f"2 op(s): {capture_baseline.NOT_ASKED}" in out


# --------------------------------------------------------------- the recorded seconds


def _status(op: str, seconds: float, status: RunStatus = RunStatus.PASS, **kw) -> OpStatus:
    return OpStatus(
        repo="main", op=op, run_name=op, status=status, rows=2, seconds=seconds,
        run_dir=f"main/{op}", **kw,
    )  # fmt: skip


def _with_durations(
    tmp_path: Path, ran: dict[str, OpStatus], timing: Timing | None = DEFAULT_TIMING
) -> tuple[Path, Path, Path]:
    """The setup's baseline, recorded with an ops_status.csv (every op 100 s, a record
    pass's, notes and all), and its replay batch whose ops_status.csv says ``ran``, its
    environment timed as ``timing`` says (None: not recorded)."""
    base = tmp_path / "baselines" / "vtest"
    base.mkdir(parents=True)
    write_status(base, *(_status(op, 100.0, note="record", op_file=f"test_{op}.py") for op in OPS))
    ids = _baseline(base)  # hashes the ops_status.csv with the rest
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    write_status(batch, *ran.values())
    info = load_json_model(batch / "batch.json", BatchInfo)  # the batch ran on an H100
    info.environments = {"main": Environment(gpu_model=H100, timing=timing)}
    dump_json_model(batch / "batch.json", info)
    return base, batch, tmp_path / "baselines" / "vnew"


def _seconds(root: Path) -> dict[str, float]:
    return {st.run_name: st.seconds for st in read_ops_status(root / "ops_status.csv")}


@pytest.mark.parametrize("timing", [DEFAULT_TIMING, None], ids=["default budgets", "unknown"])
def test_the_recorded_seconds_of_the_ops_the_batch_replayed_become_the_batchs(
    tmp_path, capsys, timing
):
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0), ("relu", 2.0))}
    base, batch, new = _with_durations(tmp_path, ran, timing)
    before = _tree(base)
    assert _run(base, new, "--from", str(batch)) == 0
    out = capsys.readouterr().out
    assert _tree(base) == before
    # add was captured; mm's capture was unsound and relu left none, but each ran PASS in
    # replay mode: its seconds are what a gate's op path runs. abs did not run.
    assert _seconds(new) == {"abs": 100.0, "add": 7.5, "mm": 3.0, "relu": 2.0}
    olds = {st.run_name: st for st in read_ops_status(base / "ops_status.csv")}
    for st in read_ops_status(new / "ops_status.csv"):  # only the seconds changed
        assert st.model_dump(exclude={"seconds"}) == olds[st.run_name].model_dump(
            exclude={"seconds"}
        )
    m = _manifest(new)
    assert m.summary["captures"]["durations"] == 3
    assert m.summary["captures"]["durations_gpu"] == H100
    assert m.files["ops_status.csv"] != _manifest(base).files["ops_status.csv"]
    assert verify(new, m).ok
    assert "recorded seconds: 3 op(s) now the replay batch's" in out
    assert main(["baseline", "show", str(new)]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "captures" in ln]
    assert line.endswith(f"; its seconds for 3 op(s) (on {H100})")


SHARED_WHY = (
    "the batch shared its GPU (--gpu-share 4): its op seconds hold waits for the GPU's "
    "turn, which a gate's op path does not"
)
BUDGETS_WHY = (
    "the batch timed with other budgets (graph warmup_ms=5 replays=1; a gate's op path: "
    "graph warmup_ms=100 replays=10): its op seconds are not the op path's"
)


@pytest.mark.parametrize(
    "share, timing, why, shown",
    [
        # four processes timed in turns: each op waited for the others
        (4, Timing(mode="cudagraph"), SHARED_WHY, "a shared GPU"),
        # --warmup-ms 5 --replays 1: the same launches, not the op path's seconds
        (1, Timing(mode="cudagraph", warmup_ms=5, replays=1), BUDGETS_WHY,
         "other timing budgets"),
    ],
    ids=["shared", "budgets"],
)  # fmt: skip
def test_a_batch_not_timed_as_the_op_path_keeps_the_recorded_seconds(
    tmp_path, capsys, share, timing, why, shown
):
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0), ("relu", 2.0))}
    base, batch, new = _with_durations(tmp_path, ran, timing)
    info = load_json_model(batch / "batch.json", BatchInfo)
    info.gpu_share = share
    dump_json_model(batch / "batch.json", info)
    assert _run(base, new, "--from", str(batch)) == 0
    out = capsys.readouterr().out
    assert _seconds(new) == {op: 100.0 for op in OPS}  # as recorded
    assert _manifest(new).files["ops_status.csv"] == _manifest(base).files["ops_status.csv"]
    cap = _manifest(new).summary["captures"]
    assert (cap["ops"], cap["durations"]) == (1, 0)  # the captures still enter
    assert cap["durations_kept"] == why
    assert f"recorded seconds: kept: {why}" in out
    assert main(["baseline", "show", str(new)]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "captures" in ln]
    assert line.endswith(f"; the recorded seconds kept ({shown})")


def test_the_op_paths_budgets_are_the_ones_the_baseline_recorded(tmp_path):
    """A gate against a baseline timed with other budgets times with those (it refuses
    any other): a batch timed so takes the seconds, one with the defaults does not."""
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0), ("relu", 2.0))}
    recorded = Timing(mode="cudagraph", warmup_ms=50, replays=5)
    base, batch, _ = _with_durations(tmp_path, ran, recorded)
    m = _manifest(base)
    m.timing_method = recorded
    dump_yaml_model(base / "manifest.yaml", m)
    assert _run(base, tmp_path / "vsame", "--from", str(batch)) == 0
    cap = _manifest(tmp_path / "vsame").summary["captures"]
    assert (cap["durations"], cap["durations_kept"]) == (3, None)
    info = load_json_model(batch / "batch.json", BatchInfo)
    info.environments["main"].timing = DEFAULT_TIMING
    dump_json_model(batch / "batch.json", info)
    assert _run(base, tmp_path / "vdefault", "--from", str(batch)) == 0
    cap = _manifest(tmp_path / "vdefault").summary["captures"]
    assert cap["durations"] == 0
    why = "graph warmup_ms=100 replays=10; a gate's op path: graph warmup_ms=50 replays=5"
    assert why in cap["durations_kept"]


def test_ops_narrow_whose_seconds_change(tmp_path, capsys):
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0), ("relu", 2.0))}
    base, batch, new = _with_durations(tmp_path, ran)
    assert _run(base, new, "--from", str(batch), "--ops", "add") == 0
    assert _seconds(new) == {"abs": 100.0, "add": 7.5, "mm": 100.0, "relu": 100.0}
    assert _manifest(new).summary["captures"]["durations"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        _status("add", 7.5, RunStatus.FAIL),
        _status("add", 7.5, RunStatus.TIMEOUT),
        _status("add", 0.0),
        _status("add", float("inf")),
        _status("add", float("nan")),
    ],
    ids=["failed", "timeout", "zero", "inf", "nan"],
)
def test_a_run_that_did_not_pass_or_has_no_seconds_keeps_the_recorded_ones(tmp_path, capsys, bad):
    base, batch, new = _with_durations(tmp_path, {"add": bad, "relu": _status("relu", 2.0)})
    assert _run(base, new, "--from", str(batch)) == 0
    assert _seconds(new) == {"abs": 100.0, "add": 100.0, "mm": 100.0, "relu": 2.0}


def test_a_baseline_without_recorded_seconds_stays_without(setup, capsys):
    base, batch, _, new = setup
    write_status(batch, _status("add", 7.5))
    assert _run(base, new, "--from", str(batch)) == 0
    assert not (new / "ops_status.csv").exists()
    assert _manifest(new).summary["captures"]["durations"] == 0
    assert _manifest(new).summary["captures"]["durations_gpu"] is None
    assert "recorded seconds" not in capsys.readouterr().out


def test_a_batch_whose_ops_status_is_not_valid_is_one_line_and_writes_nothing(tmp_path, capsys):
    base, batch, new = _with_durations(tmp_path, {"add": _status("add", 7.5)})
    (batch / "ops_status.csv").write_text(
        "repo,op,run_name,status,seconds\nmain,add,add,PASS,soon\n"
    )
    before = _tree(base)
    assert _run(base, new, "--from", str(batch)) == 2
    line = one_error_line(capsys)
    assert "ops_status.csv" in line and "seconds" in line
    assert _tree(base) == before
    assert sorted(p.name for p in new.parent.iterdir()) == ["vtest"]  # no NEW, no stage


@pytest.mark.parametrize(
    ("captures", "expected"),
    [
        (None, "NVIDIA H200"),  # no capture: the recording GPU's
        ({"durations": 0, "durations_gpu": None}, "NVIDIA H200"),
        ({"durations": 2, "durations_gpu": "nvidia  h200"}, "NVIDIA H200"),  # the same model
        ({"durations": 2, "durations_gpu": H100}, f"NVIDIA H200, 2 op(s) replayed on {H100}"),
        ({"durations": 4, "durations_gpu": H100}, H100),  # every op's seconds replaced
        ({"durations": "4", "durations_gpu": H100}, "NVIDIA H200"),  # not a count: ignored
    ],
)
def test_the_forecasts_name_the_gpu_the_recorded_seconds_come_from(tmp_path, captures, expected):
    from zlbench.runner.baseline_batch import durations_gpu

    base = tmp_path / "vtest"
    _baseline(base)
    m = _manifest(base)
    m.gpu_model = "NVIDIA H200"
    if captures is not None:
        m.summary["captures"] = captures
    assert len(m.ops) == 4 and durations_gpu(m) == expected


def test_each_captured_row_says_what_the_replay_mode_run_launched_while_timed(setup, capsys):
    """The batch's run of add left a codegen index: its kernel timed for one row, a
    setup kernel outside; the new version's capture carries it per row."""
    base, batch, ids, new = setup
    run_cg = batch / "main" / "add" / "codegen"
    req = cgsynth.request(name="add_kernel")
    setup_req = cgsynth.request(name="fill_kernel")
    texts = cgsynth.stage_texts("add")
    timed = cgsynth.use("add", dtype="bfloat16", shape=SH).model_copy(update={"timed": True})
    outside = cgsynth.use("add", dtype="bfloat16", shape=SH2).model_copy(update={"timed": False})
    recs = [
        cgsynth.record(req, texts, uses=[timed]),
        cgsynth.record(setup_req, texts, uses=[outside]),
    ]
    cgsynth.write_index(run_cg, recs, [texts])
    assert recs[0].id == ids["add"]  # the same compile as the baseline's
    assert _run(base, new, "--from", str(batch)) == 0
    cap = load_json_model(new / "main" / "add" / "codegen" / LAUNCHES_JSON, LaunchCapture)
    assert [(r.shape, r.replay_timed) for r in cap.rows] == [(SH, [ids["add"]]), (SH2, [])]


def _another_baseline(tmp_path: Path) -> Path:
    """A baseline of the same ops whose autotune records of add differ."""
    other = tmp_path / "baselines" / "vother"
    _baseline(other)
    rel = "main/add/autotune_records/add.json"
    (other / rel).write_text('{"other": 1}\n')
    m = _manifest(other)
    m.name = "vother"
    m.files[rel] = hashlib.sha256((other / rel).read_bytes()).hexdigest()
    dump_yaml_model(other / "manifest.yaml", m)
    return other


def _bad(case: str, tmp_path: Path, base: Path, batch: Path, new: Path) -> tuple[list, str]:
    """(argv after the command, the words of its one error line)."""
    info = batch / "batch.json"
    if case == "new exists":
        new.mkdir()
        return ["--from", str(batch)], "already exists"
    if case == "new is packed":
        new.with_name(new.name + ".lock").write_text("")
        return ["--from", str(batch)], "is a packed baseline of that name"
    if case == "recorded":
        dump_json_model(info, BatchInfo(created=CREATED, mode="record"))
        return ["--from", str(batch)], "a record batch"
    if case == "another baseline":
        other = _another_baseline(tmp_path)
        dump_json_model(info, BatchInfo(created=CREATED, mode="replay", replay_root=str(other)))
        return ["--from", str(batch)], "another baseline"
    if case == "replay root not here":
        gone = tmp_path / "elsewhere" / "vtest"
        dump_json_model(info, BatchInfo(created=CREATED, mode="replay", replay_root=str(gone)))
        return ["--from", str(batch)], "no such baseline here"
    if case == "not a batch":
        info.unlink()
        return ["--from", str(batch)], "not a batch dir"
    if case == "from missing":
        return ["--from", str(tmp_path / "nope")], "not a dir"
    if case == "work with from":
        return ["--from", str(batch), "--work", str(tmp_path / "w")], "--work"
    if case == "from twice":
        again = batch.parent / ".." / batch.parent.name / batch.name
        return ["--from", str(batch), str(again)], "given twice"
    raise AssertionError(case)


BAD = [
    "new exists",
    "new is packed",
    "recorded",
    "another baseline",
    "replay root not here",
    "not a batch",
    "from missing",
    "work with from",
    "from twice",
]


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_and_writes_nothing(setup, tmp_path, capsys, case):
    base, batch, _, new = setup
    argv, words = _bad(case, tmp_path, base, batch, new)
    before, parent = _tree(base), sorted(p.name for p in new.parent.iterdir())
    assert _run(base, new, *argv) == 2
    line = one_error_line(capsys)
    assert words in line
    assert _tree(base) == before
    assert sorted(p.name for p in new.parent.iterdir()) == parent  # no NEW, no stage
    if case == "new exists":
        assert list(new.iterdir()) == []
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("case", ["missing", "no manifest"])
def test_a_baseline_that_is_not_one_is_refused(setup, tmp_path, capsys, case):
    _, batch, _, new = setup
    bad = tmp_path / "baselines" / "vbad"
    if case == "no manifest":
        (bad / "main" / "add").mkdir(parents=True)
    assert _run(bad, new, "--from", str(batch)) == 2
    line = one_error_line(capsys)
    assert str(bad) in line
    assert not new.exists()


def test_a_new_version_that_does_not_verify_is_not_put_at_out(setup, monkeypatch):
    base, batch, _, new = setup
    monkeypatch.setattr(capture_baseline, "verify", lambda *a: VerifyReport(problems=["boom"]))
    with pytest.raises(ZlbenchError, match="does not verify .*first: boom"):
        capture(CaptureJob(baseline=base, out=new, from_batches=[batch]))
    assert sorted(p.name for p in new.parent.iterdir()) == ["vtest"]


def test_a_failed_op_run_gives_no_capture(tmp_path, capsys):
    base = tmp_path / "baselines" / "vtest"
    ids = _baseline(base)
    batch = _batch(tmp_path / "runs" / "replay", ids, base)
    dump_json_model(
        batch / "main" / "add" / "result.json", run_result("add", [], status=RunStatus.FAIL)
    )
    new = tmp_path / "baselines" / "vnew"
    assert _run(base, new, "--from", str(batch)) == 0
    assert not (new / "main" / "add" / "codegen" / LAUNCHES_JSON).exists()
    assert f"1 op(s): {capture_baseline.NOT_PASSED}" in capsys.readouterr().out


def test_an_unreadable_capture_gives_no_capture_and_is_named(setup, capsys):
    base, batch, _, new = setup
    (batch / "main" / "add" / "codegen" / LAUNCHES_JSON).write_text("{")
    assert _run(base, new, "--from", str(batch)) == 0
    assert not (new / "main" / "add" / "codegen" / LAUNCHES_JSON).exists()
    out = capsys.readouterr().out
    assert f"1 op(s): {capture_baseline.UNREADABLE}" in out
    (add_line,) = [ln for ln in out.splitlines() if "main/add: no capture" in ln]
    assert "not valid JSON" in add_line
    assert _manifest(new).summary["captures"]["unsound"] == ["main/add", "main/mm"]


def test_a_sound_capture_whose_batch_index_does_not_read_fails_before_writing(setup, capsys):
    """Its rows' replay_timed come from that index: bad input, one line, nothing written."""
    base, batch, _, new = setup
    (batch / "main" / "add" / "codegen").mkdir(parents=True, exist_ok=True)
    (batch / "main" / "add" / "codegen" / "index.json").write_text("{")
    assert _run(base, new, "--from", str(batch)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "main/add/codegen/index.json" in err
    assert not new.exists()


# --------------------------------------------------------------------------- the batch run


class FakeBatch:
    """The replay batch: what it was asked, then a batch dir as a replay of
    ``cfg.replay_root`` leaves it."""

    def __init__(self, ids: dict[str, str]):
        self.ids, self.asked = ids, []

    def __call__(self, cfg: BatchConfig) -> BatchOutcome:
        self.asked.append(cfg)
        if not cfg.resume:
            _batch(Path(cfg.out_dir), self.ids, cfg.replay_root)
        return BatchOutcome(
            out_dir=Path(cfg.out_dir), statuses=[], counts={}, summary_rows=0, exit_code=0
        )


def _job(base: Path, new: Path, tmp_path: Path, fake: FakeBatch, **kw) -> CaptureJob:
    return CaptureJob(
        baseline=base,
        out=new,
        ops_dir=tmp_path / "ops",
        cuda_visible_devices="",
        batch_runner=fake,
        **kw,
    )


def test_without_from_one_replay_batch_of_the_baseline_runs_in_work(setup, tmp_path):
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    work = tmp_path / "work"
    done = capture(_job(base, new, tmp_path, fake, work=work))
    (cfg,) = fake.asked
    assert cfg.replay_root == base and cfg.out_dir == work / "replay" and not cfg.resume
    assert cfg.restrict_to == {f"main/{op}" for op in OPS}
    assert (cfg.dtypes, cfg.timing) == (["bfloat16"], "cudagraph")
    assert (cfg.gpu_share, cfg.split_rows) == (1, "off")
    assert done.captured.ops == ["main/add"]
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).is_file()
    assert (work / "replay" / "batch.json").is_file()  # --work keeps the batch
    # the same --work again resumes the batch there (a device call's time limit)
    capture(_job(base, tmp_path / "baselines" / "vnew2", tmp_path, fake, work=work))
    assert fake.asked[1].resume and fake.asked[1].keep_failed


def test_batch_only_runs_the_batch_in_work_and_writes_no_version(setup, tmp_path):
    """``--batch-only``: the replay batch in --work, resumed there, and no new version:
    ``--from`` it derives the same captures later (the derive apart from a device call)."""
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    work = tmp_path / "work"
    before = _tree(base)
    batch = capture_batch(_job(base, None, tmp_path, fake, work=work, ops=["add"]))
    (cfg,) = fake.asked
    assert batch == work / "replay" and cfg.out_dir == batch and not cfg.resume
    assert cfg.restrict_to == {"main/add"}
    assert (batch / "batch.json").is_file() and not new.exists() and _tree(base) == before
    capture_batch(_job(base, None, tmp_path, fake, work=work, ops=["add"]))
    assert fake.asked[1].resume  # the same --work again resumes it
    assert _run(base, new, "--from", str(batch)) == 0  # derived later, elsewhere
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).is_file()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--batch-only"], "--batch-only runs the replay batch into --work DIR"),
        (["--batch-only", "--work", "W", "--out", "O"], "writes no new version: leave out --out"),
        (["--batch-only", "--work", "W", "--from", "B"], "give one of them"),
        (["--work", "W"], "give --out, the new version"),
    ],
)
def test_batch_only_misuse_is_one_line_and_runs_nothing(setup, tmp_path, capsys, argv, words):
    base = setup[0]
    argv = [str(tmp_path / a) if a in ("W", "O", "B") else a for a in argv]
    assert main(["baseline", "capture", "--baseline", str(base), *argv]) == 2
    assert words in one_error_line(capsys)
    assert not (tmp_path / "W").exists() and not (tmp_path / "O").exists()


def test_gpu_share_runs_the_capture_in_that_many_processes_per_gpu(setup, tmp_path, capsys):
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, gpu_share=4))
    (cfg,) = fake.asked
    assert (cfg.gpu_share, cfg.split_rows) == (4, "off")  # whole ops: no part compiles again
    bad = tmp_path / "baselines" / "vbad"
    assert _run(base, bad, "--gpu-share", "9") == 2  # out of range: one line, nothing run
    assert "--gpu-share" in capsys.readouterr().err and not bad.exists()


def test_the_budgets_time_the_capture_batch(setup, tmp_path, capsys, monkeypatch):
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, warmup_ms=5.0, replays=1))
    capture(_job(base, tmp_path / "baselines" / "vnew2", tmp_path, fake))
    given, default = fake.asked
    assert given.extra_pytest_args == ["--zl-warmup-ms", "5", "--zl-replays", "1"]
    assert default.extra_pytest_args == []  # the plugin's defaults, as before
    jobs = []

    def fake_capture(job):
        jobs.append(job)
        raise ZlbenchError("stop here")

    monkeypatch.setattr(capture_baseline, "capture", fake_capture)
    assert _run(base, tmp_path / "vcli", "--warmup-ms", "2.5", "--replays", "3") == 2
    (job,) = jobs  # the flags reach the job
    assert (job.warmup_ms, job.replays) == (2.5, 3)
    assert "stop here" in capsys.readouterr().err


def test_untimed_runs_the_capture_batch_with_the_capture_method(setup, tmp_path, capsys):
    """``--untimed``: each measurement two eager calls (``--zl-timing capture``), no
    graph budgets; with them, one line and nothing run."""
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, untimed=True))
    (cfg,) = fake.asked
    assert cfg.extra_pytest_args == ["--zl-timing", "capture"]
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).is_file()
    for extra in (["--warmup-ms", "5"], ["--replays", "1"]):
        assert _run(base, tmp_path / "vbad", "--untimed", *extra) == 2
        assert "--untimed runs no graph timing" in one_error_line(capsys)
        assert not (tmp_path / "vbad").exists() and len(fake.asked) == 1


def test_an_untimed_batchs_seconds_are_kept(tmp_path, capsys):
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0))}
    base, batch, new = _with_durations(tmp_path, ran, Timing(mode="cudagraph", method="capture"))
    assert _run(base, new, "--from", str(batch)) == 0
    assert _seconds(new) == {op: 100.0 for op in OPS}
    kept = _manifest(new).summary["captures"]["durations_kept"]
    assert kept == (
        "the batch timed with other budgets (capture; a gate's op path: graph warmup_ms=100 "
        "replays=10): its op seconds are not the op path's"
    )
    assert f"recorded seconds: kept: {kept}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [("--replays", "0", "must be at least 1"), ("--warmup-ms", "-1", "must be at least 0")],
)
def test_budgets_out_of_range_are_one_line_and_run_nothing(setup, capsys, flag, value, words):
    base, _, _, new = setup
    assert _run(base, new, flag, value) == 2
    assert f"{flag} {value}: {words}" in one_error_line(capsys)
    assert not new.exists()


def test_without_work_the_batch_runs_in_a_temp_dir_removed_at_the_end(setup, tmp_path):
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, ops=["add", "mm"]))
    (cfg,) = fake.asked
    assert cfg.restrict_to == {"main/add", "main/mm"}
    assert not Path(cfg.out_dir).exists()
    assert not Path(cfg.out_dir).parent.exists()  # the temp dir itself, not only its batch
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).is_file()


def test_preflight_refuses_before_the_batch_runs(setup, tmp_path):
    base, _, ids, new = setup
    fake = FakeBatch(ids)

    def refuse(config):
        raise ZlbenchError("no FlagGems checkout")

    with pytest.raises(ZlbenchError, match="no FlagGems"):
        capture(_job(base, new, tmp_path, fake, preflight=refuse))
    assert fake.asked == [] and not new.exists()


# --------------------------------------------------------------------------- packed


def _pack(base: Path, tmp_path: Path) -> None:
    from zlbench.models.packed import lock_path, pack_tree

    (tmp_path / "archive").mkdir()
    lock, _, _ = pack_tree(base, tmp_path / "archive")
    lock_path(base).write_text(lock.render())
    shutil.rmtree(base)


@pytest.mark.parametrize("where", ["here", "elsewhere"])
def test_a_packed_baseline_is_read_through_its_unpacked_copy(setup, tmp_path, monkeypatch, where):
    from zlbench.models.packed import resolve_tree

    base, batch, _, new = setup
    _pack(base, tmp_path)
    monkeypatch.setenv("ZLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ZLBENCH_ARCHIVE_SOURCE", raising=False)
    copy = resolve_tree(base, cache=tmp_path / "cache")
    # the batch replayed the copy here, or the same lock's copy in another machine's cache
    root = copy if where == "here" else Path("/elsewhere/cache/trees", *copy.parts[-2:])
    info = BatchInfo(created=CREATED, mode="replay", replay_root=str(root))
    dump_json_model(batch / "batch.json", info)
    assert _run(base, new, "--from", str(batch)) == 0
    assert (new / "main" / "add" / "codegen" / LAUNCHES_JSON).is_file()
    assert verify(new, _manifest(new)).ok
    # an ordinary dir, though the unpacked copy is read-only (root would not notice)
    assert all(p.stat().st_mode & stat.S_IWUSR for p in [new, *new.rglob("*")])
    shutil.rmtree(new)  # an ordinary dir: its files and dirs are the owner's to remove


def test_the_capture_op_timeout_follows_the_longest_recorded_op_in_scope():
    recorded = {"main/flash": 35.1, "main/argsort": 9.8, "main/huge": 500.0}
    timeout = capture_baseline.capture_op_timeout
    assert timeout(recorded, {"main/flash", "main/argsort"}) == pytest.approx(351.0)
    assert timeout(recorded, {"main/argsort"}) == capture_baseline.CAPTURE_TIMEOUT_MIN_S
    assert timeout(recorded, {"main/huge"}) == capture_baseline.REPLAY_OP_TIMEOUT_S  # capped
    assert timeout({}, {"main/x"}) == capture_baseline.CAPTURE_TIMEOUT_MIN_S  # none recorded


@pytest.mark.parametrize(("given", "expected"), [(None, "derived"), (42.0, 42.0), (0.0, None)])
def test_the_replay_batch_runs_each_op_within_the_capture_timeout(setup, tmp_path, given, expected):
    base, _, ids, new = setup
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, op_timeout_s=given))
    (cfg,) = fake.asked
    if expected == "derived":  # the synthetic baseline's recorded seconds, 120 s at least
        recorded = capture_baseline.baseline_durations(base, per_dtype=False)
        expected = capture_baseline.capture_op_timeout(recorded, cfg.restrict_to)
        assert expected == capture_baseline.CAPTURE_TIMEOUT_MIN_S
    assert cfg.op_timeout() == expected  # 0: no limit


def test_the_derived_timeout_reads_the_baselines_recorded_op_seconds(setup, tmp_path):
    """The recorded seconds of the ops in scope as recorded (not per dtype): mm took
    40 s for its two dtypes, relu (not asked for) 80 s."""
    from zlbench.gate.baselines import content_hashes
    from zlbench.models import OpStatus
    from zlbench.runner.batch.status import write_ops_status

    base, _, ids, new = setup
    rec = [("mm", 40.0, "bfloat16,float16"), ("relu", 80.0, "bfloat16"), ("add", 1.0, "")]
    write_ops_status(
        base,
        [
            OpStatus(
                repo="main", op=op, run_name=op, status=RunStatus.PASS, seconds=s, dtype_used=d
            )
            for op, s, d in rec
        ],
    )
    m = _manifest(base)
    m.files = content_hashes(base)
    dump_yaml_model(base / "manifest.yaml", m)
    fake = FakeBatch(ids)
    capture(_job(base, new, tmp_path, fake, ops=["add", "mm"]))
    (cfg,) = fake.asked
    assert cfg.op_timeout() == pytest.approx(10 * 40.0)


# --------------------------------------------------------------- several batches


def _second_batch(root: Path, ids: dict[str, str], replay_root: Path, add_kernel: str) -> Path:
    """Another replay batch (a later device call): abs and mm captured soundly, add's
    capture naming ``add_kernel`` with another grid, relu run without a capture."""
    ran = ("abs", "add", "mm", "relu")
    write_results(root, [run_result(op, [crow(op, SH, 1.0)]) for op in ran], info=False)
    info = BatchInfo(
        created=CREATED, mode="replay", replay_root=str(replay_root),
        ops=[f"main/{op}" for op in ran],
    )  # fmt: skip
    dump_json_model(root / "batch.json", info)
    for op, kid in (("abs", ids["abs"]), ("mm", ids["mm"]), ("add", add_kernel)):
        cap = _capture(op, kid)
        for row in cap.rows:
            row.launches = [row.launches[0].model_copy(update={"grid": [8, 1, 1]})]
        dump_json_model(root / "main" / op / "codegen" / LAUNCHES_JSON, cap)
    return root


def _grid(new: Path, op: str) -> list[int] | None:
    path = new / "main" / op / "codegen" / LAUNCHES_JSON
    if not path.is_file():
        return None
    return load_json_model(path, LaunchCapture).rows[0].launches[0].grid


@pytest.mark.parametrize("order", ["first, second", "second, first"])
def test_several_batches_each_give_their_captures_and_the_last_given_decides(
    setup, tmp_path, capsys, order
):
    base, first, ids, new = setup
    second = _second_batch(tmp_path / "runs" / "again", ids, base, ids["add"])
    batches = [first, second] if order == "first, second" else [second, first]
    assert _run(base, new, "--from", *map(str, batches)) == 0
    out = capsys.readouterr().out
    # abs and mm only the second captured soundly; add both: the last one given decides
    assert _grid(new, "abs") == _grid(new, "mm") == [8, 1, 1]
    assert _grid(new, "add") == ([8, 1, 1] if batches[-1] == second else [4, 1, 1])
    assert _grid(new, "relu") is None  # neither left one
    assert "3 ops captured (6 rows), 1 ops without a capture" in out
    assert f"without a capture: 1 op(s): {capture_baseline.NO_CAPTURE}" in out
    assert "main/mm: no capture" not in out  # the first's unsound capture was replaced
    m = _manifest(new)
    assert m.summary["captures"]["from"] == ", ".join(
        b.relative_to(tmp_path).as_posix() for b in batches
    )
    assert m.summary["captures"]["unsound"] == []
    assert verify(new, m).ok


def test_an_unsound_capture_of_a_later_batch_leaves_the_earlier_sound_one(setup, tmp_path, capsys):
    base, first, ids, new = setup
    second = _second_batch(tmp_path / "runs" / "again", ids, base, FOREIGN_ID)
    assert _run(base, new, "--from", str(first), str(second)) == 0
    out = capsys.readouterr().out
    assert _grid(new, "add") == [4, 1, 1]  # the first's: the second's names a foreign kernel
    assert "main/add: no capture" not in out
    assert _manifest(new).summary["captures"]["unsound"] == []


def test_an_op_no_batch_captured_says_why_by_the_last_batch_that_ran_it(setup, tmp_path, capsys):
    """mm: the first batch's capture names a foreign kernel, the second ran it and left
    none; relu: neither left one. The reason and the unsound line are those of the last
    batch given that ran the op."""
    base, first, ids, new = setup
    second = _second_batch(tmp_path / "runs" / "again", ids, base, ids["add"])
    (second / "main" / "mm" / "codegen" / LAUNCHES_JSON).unlink()  # ran, left none
    assert _run(base, new, "--from", str(first), str(second)) == 0
    out = capsys.readouterr().out
    assert _grid(new, "mm") is None
    assert f"without a capture: 2 op(s): {capture_baseline.NO_CAPTURE}" in out
    assert "main/mm: no capture" not in out  # the first batch's foreign line is not the last
    assert _run(base, tmp_path / "vrev", "--from", str(second), str(first)) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if "main/mm: no capture" in ln]
    assert FOREIGN_ID in line and "runs/replay" in line


def test_a_batch_that_replayed_a_capture_version_of_the_baseline_is_taken(setup, tmp_path, capsys):
    """A capture assembled over device calls: a batch run against an earlier capture
    version (the same records) gives its captures to the baseline itself."""
    base, first, ids, _ = setup
    v1 = tmp_path / "baselines" / "v1"
    assert _run(base, v1, "--from", str(first)) == 0
    second = _second_batch(tmp_path / "runs" / "again", ids, v1, ids["add"])
    new = tmp_path / "baselines" / "vall"
    assert _run(base, new, "--from", str(first), str(second)) == 0
    assert "3 ops captured" in capsys.readouterr().out
    assert capture_baseline.capture_version_of(v1 / "manifest.yaml", base / "manifest.yaml")


@pytest.mark.parametrize("change", ["a record", "a manifest field"])
def test_a_version_with_other_records_is_not_a_capture_version(setup, tmp_path, capsys, change):
    base, first, ids, _ = setup
    v1 = tmp_path / "baselines" / "v1"
    assert _run(base, v1, "--from", str(first)) == 0
    m = _manifest(v1)
    if change == "a record":
        m.files["main/mm/codegen/index.json"] = "0" * 64
    else:
        m.dtypes = ["float32"]
    dump_yaml_model(v1 / "manifest.yaml", m)
    assert not capture_baseline.capture_version_of(v1 / "manifest.yaml", base / "manifest.yaml")
    second = _second_batch(tmp_path / "runs" / "again", ids, v1, ids["add"])
    new = tmp_path / "baselines" / "vall"
    assert _run(base, new, "--from", str(first), str(second)) == 2
    assert "another baseline" in one_error_line(capsys)
    assert not new.exists()


def test_each_batchs_seconds_count_in_turn_and_a_shared_ones_are_kept(tmp_path, capsys):
    ran = {op: _status(op, s) for op, s in (("add", 7.5), ("mm", 3.0))}
    base, first, new = _with_durations(tmp_path, ran)
    second = tmp_path / "runs" / "again"
    shutil.copytree(first, second)
    write_status(second, _status("add", 5.0), _status("relu", 2.0))
    shared = tmp_path / "runs" / "shared"
    shutil.copytree(first, shared)
    write_status(shared, _status("abs", 1.0), _status("mm", 1.0))
    info = load_json_model(shared / "batch.json", BatchInfo)
    info.gpu_share = 4
    dump_json_model(shared / "batch.json", info)
    assert _run(base, new, "--from", str(first), str(second), str(shared)) == 0
    out = capsys.readouterr().out
    # add: the second's (given later); mm: the first's (the shared batch's kept out)
    assert _seconds(new) == {"abs": 100.0, "add": 5.0, "mm": 3.0, "relu": 2.0}
    cap = _manifest(new).summary["captures"]
    assert (cap["durations"], cap["durations_gpu"], cap["durations_kept"]) == (3, H100, SHARED_WHY)
    assert "recorded seconds: 3 op(s) now the replay batch's" in out
    assert f"recorded seconds: kept: {SHARED_WHY}" in out


def test_batches_on_two_gpu_models_name_both_as_where_the_seconds_come_from(tmp_path, capsys):
    """Each batch's seconds replace the recorded ones in turn; when the batches ran on
    two GPU models, the summary names both (the forecasts say which GPU their seconds
    are from), in the order the batches were given."""
    base, first, new = _with_durations(tmp_path, {"add": _status("add", 7.5)})
    second = tmp_path / "runs" / "h200"
    shutil.copytree(first, second)
    write_status(second, _status("mm", 3.0))
    info = load_json_model(second / "batch.json", BatchInfo)
    assert info.environments  # each names its GPU model
    for env in info.environments.values():
        env.gpu_model = "NVIDIA H200"
    dump_json_model(second / "batch.json", info)
    assert _run(base, new, "--from", str(first), str(second)) == 0
    cap = _manifest(new).summary["captures"]
    assert _seconds(new)["add"] == 7.5 and _seconds(new)["mm"] == 3.0
    assert (cap["durations"], cap["durations_gpu"]) == (2, f"{H100}, NVIDIA H200")
